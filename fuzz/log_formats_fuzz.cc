// The built-in log-format parsers (core/log_formats.h) over arbitrary output, as the agent feeds
// them: the input split into lines at '\n' and '\r', ANSI escapes removed with StripAnsi, every
// line to one parser of each format (a parser keeps state across lines: a CSV header, a table's
// columns). Never a crash, a hang or undefined behaviour; every value finite, every step >= 0, and
// every sample's field one its format documents: listed in its fields, or for the formats that
// give every key they read (docs/log_formats.md), a name made by their documented rule. StripAnsi
// leaves no ESC, never grows a line, and is idempotent.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/log_formats.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace tunectl;

// A normalised key: [a-z0-9]+ runs joined by single '_', at most 128 bytes.
bool IsNormalisedKey(std::string_view n) {
  if (n.empty() || n.size() > 128 || n.front() == '_' || n.back() == '_') return false;
  for (size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok || (c == '_' && n[i + 1] == '_')) return false;
  }
  return true;
}

// The documented field rule of a format beyond its listed fields.
bool AllowedUnlisted(std::string_view format, std::string_view field) {
  if (format == "megatron")  // every "<name> loss" key
    return IsNormalisedKey(field) && field.size() >= 4 && field.substr(field.size() - 4) == "loss";
  if (format == "hf_trainer" || format == "lightning_csv")  // every numeric key / column
    return IsNormalisedKey(field);
  return false;
}

// Each format's listed field names, in LogFormats() order.
const std::vector<std::set<std::string>>& Listed() {
  static const std::vector<std::set<std::string>> listed = [] {
    std::vector<std::set<std::string>> out;
    for (const auto& f : LogFormats()) {
      out.emplace_back();
      for (const auto& x : f.fields) out.back().insert(x.name);
    }
    return out;
  }();
  return listed;
}

struct Target {
  const std::string* format;
  const std::set<std::string>* listed;
  std::unique_ptr<LogFormatParser> parser;  // fresh per input: it keeps state across lines
};

void CheckSamples(const Target& t, const std::vector<FormatSample>& out) {
  for (const auto& s : out) {
    FUZZ_CHECK(std::isfinite(s.value), "a sample's value is finite");
    FUZZ_CHECK(s.step >= 0, "a sample's step is >= 0");
    FUZZ_CHECK(t.listed->count(s.field) == 1 || AllowedUnlisted(*t.format, s.field),
               "a sample's field is one its format documents");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<Target> targets;
  for (size_t i = 0; i < LogFormats().size(); ++i) {
    auto p = LogFormatParser::Create(LogFormats()[i].name);
    FUZZ_CHECK(p.ok(), p.status().message().c_str());
    targets.push_back({&LogFormats()[i].name, &Listed()[i], std::move(*p)});
  }
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<FormatSample> out;
  for (size_t start = 0; start <= in.size();) {
    size_t end = in.find_first_of("\n\r", start);
    if (end == std::string_view::npos) end = in.size();
    const std::string_view raw = in.substr(start, end - start);
    const std::string line = StripAnsi(raw);
    FUZZ_CHECK(line.find('\x1b') == std::string::npos, "StripAnsi leaves no ESC");
    FUZZ_CHECK(line.size() <= raw.size(), "StripAnsi never grows a line");
    FUZZ_CHECK(StripAnsi(line) == line, "StripAnsi is idempotent");
    for (auto& t : targets) {
      out.clear();
      t.parser->Parse(line, &out);
      CheckSamples(t, out);
    }
    start = end + 1;
  }
  return 0;
}
