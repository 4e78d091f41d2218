// The scipy oracle vectors (tests/oracle/vectors.json, written by tests/oracle/gen_vectors.py).
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace tunectl {

// Loads the cases under `key`; fails (use with ASSERT_TRUE) unless the file exists, parses and has
// a non-empty array there, so that a missing or emptied vectors file cannot pass as zero cases.
inline ::testing::AssertionResult LoadOracleVectors(const std::string& key, nlohmann::json* cases) {
  const std::string path = std::string(TUNECTL_SOURCE_DIR) + "/tests/oracle/vectors.json";
  std::ifstream in(path);
  if (!in) return ::testing::AssertionFailure() << path << " is missing or unreadable";
  nlohmann::json v = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) return ::testing::AssertionFailure() << path << " is not valid JSON";
  if (!v.is_object() || !v.contains(key) || !v[key].is_array())
    return ::testing::AssertionFailure() << path << " has no array \"" << key << "\"";
  if (v[key].empty())
    return ::testing::AssertionFailure() << path << ": \"" << key << "\" has no cases";
  *cases = std::move(v[key]);
  return ::testing::AssertionSuccess();
}

}  // namespace tunectl
