// Shared by the unit tests: a RunSink that records what an executor reports, golden-file and
// fixture reading against the source tree (TUNECTL_SOURCE_DIR), and fresh temp directories.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "agent/executor.h"
#include "core/spec.h"

namespace tunectl::testing {

// Records everything an executor reports, in order; optional hooks run inside the calls.
class RecordingSink : public RunSink {
 public:
  void OnPending(const v1::RunPending& m) override { pending.push_back(m); }
  void OnStarted(const v1::RunStarted& m) override {
    started.push_back(m);
    if (on_started) on_started();
  }
  void OnBatch(const v1::MetricBatch& m) override {
    batches.push_back(m);
    if (on_batch) on_batch();
  }
  void OnFinished(const v1::RunFinished& m) override { finished.push_back(m); }
  // Distinct samples by seq: the server keeps one batch per sequence number.
  int UniqueSamples() const {
    std::set<int64_t> seen;
    int n = 0;
    for (const auto& b : batches)
      if (seen.insert(b.seq()).second) n += b.samples_size();
    return n;
  }
  std::function<void()> on_started, on_batch;
  std::vector<v1::RunPending> pending;
  std::vector<v1::RunStarted> started;
  std::vector<v1::MetricBatch> batches;
  std::vector<v1::RunFinished> finished;
};

inline const std::string kSourceDir = TUNECTL_SOURCE_DIR;

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// tests/fixtures/<dir>/<name>.
inline std::string Fixture(const std::string& dir, const std::string& name) {
  return ReadAll(kSourceDir + "/tests/fixtures/" + dir + "/" + name);
}

// `text` equals tests/golden/<file> byte for byte; with TUNECTL_UPDATE_GOLDEN=1 in the
// environment the file is rewritten instead (then review the diff).
inline void ExpectGolden(const std::string& file, const std::string& text) {
  const std::string path = kSourceDir + "/tests/golden/" + file;
  if (const char* u = std::getenv("TUNECTL_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    return;
  }
  EXPECT_EQ(text, ReadAll(path)) << "differs from " << path
                                 << " (if intended, rerun with TUNECTL_UPDATE_GOLDEN=1)";
}

// A new empty directory under the system temp dir.
inline std::string TempDir(const std::string& prefix) {
  static std::atomic<int> n{0};
  const std::string d = std::filesystem::temp_directory_path() /
                        (prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(++n));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// `s` with the first `from` replaced by `to` (a failure when `from` is not there).
inline std::string With(std::string s, const std::string& from, const std::string& to) {
  auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

// The message of the error a workload spec must be refused with ("" and a failure if it parses).
inline std::string SpecError(const std::string& text) {
  auto s = ParseWorkloadSpec(text);
  EXPECT_FALSE(s.ok());
  return s.ok() ? "" : s.status().message();
}

}  // namespace tunectl::testing
