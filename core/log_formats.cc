// Built-in parsers of training frameworks' own output (docs/log_formats.md has each format's
// versions, line shapes, fields and pitfalls). Hand-written scanning plus RE2 for a few fixed
// shapes: linear in the line, never throws, never reads past the line.
#include "core/log_formats.h"

#include <re2/re2.h>

#include <charconv>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace tunectl {
namespace {

// ---------------------------------------------------------------------------------------------
// Text helpers

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\n';
}
bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}
bool IsAlpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool IsAlnum(char c) {
  return IsDigit(c) || IsAlpha(c);
}
char Lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool StartsWith(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}
bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// Whitespace-separated tokens of `s`.
std::vector<std::string_view> Tokens(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && IsSpace(s[i])) ++i;
    const size_t b = i;
    while (i < s.size() && !IsSpace(s[i])) ++i;
    if (i > b) out.push_back(s.substr(b, i - b));
  }
  return out;
}

// `s` split at every `sep`.
std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (size_t b = 0;;) {
    const size_t e = s.find(sep, b);
    if (e == std::string_view::npos) {
      out.push_back(s.substr(b));
      return out;
    }
    out.push_back(s.substr(b, e - b));
    b = e + 1;
  }
}

// A key as a field name: ASCII lowercase, every run of other bytes one '_', none at either end
// ("memory/max_mem_active(gib)" -> "memory_max_mem_active_gib", "lm loss" -> "lm_loss"). Empty
// when nothing is left or the key is longer than any real one (kMaxKey).
constexpr size_t kMaxKey = 128;
std::string NormalizeKey(std::string_view key) {
  std::string out;
  if (key.size() > kMaxKey) return out;
  bool gap = false;
  for (char c : key) {
    if (IsAlnum(c)) {
      if (gap && !out.empty()) out += '_';
      gap = false;
      out += Lower(c);
    } else {
      gap = true;
    }
  }
  return out;
}

// A decimal number: optional sign, digits (with thousands commas "12,345" when `commas`), an
// optional fraction and exponent; nothing else (no "nan", "inf", hex, units). False when `s` is
// not one or its value is not finite (1e999).
bool ParseNumber(std::string_view s, double* out, bool commas = false) {
  s = Trim(s);
  std::string buf;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    if (s[i] == '-') buf += '-';
    ++i;
  }
  size_t int_digits = 0, group = 0;
  bool grouped = false;
  for (; i < s.size(); ++i) {
    if (IsDigit(s[i])) {
      buf += s[i];
      ++int_digits;
      ++group;
    } else if (commas && s[i] == ',' && group > 0 && i + 1 < s.size() && IsDigit(s[i + 1])) {
      if ((grouped && group != 3) || (!grouped && group > 3)) return false;
      grouped = true;
      group = 0;
    } else {
      break;
    }
  }
  if (grouped && group != 3) return false;
  size_t frac_digits = 0;
  if (i < s.size() && s[i] == '.') {
    buf += '.';
    for (++i; i < s.size() && IsDigit(s[i]); ++i, ++frac_digits) buf += s[i];
  }
  if (int_digits + frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    buf += 'e';
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) buf += s[i++];
    size_t exp_digits = 0;
    for (; i < s.size() && IsDigit(s[i]); ++i, ++exp_digits) buf += s[i];
    if (exp_digits == 0) return false;
  }
  if (i != s.size()) return false;
  double v = 0;
  const auto r = std::from_chars(buf.data(), buf.data() + buf.size(), v);
  if (r.ec != std::errc() || r.ptr != buf.data() + buf.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

// A step: decimal digits only, fitting int64.
bool ParseStep(std::string_view s, int64_t* out) {
  s = Trim(s);
  if (s.empty()) return false;
  for (char c : s)
    if (!IsDigit(c)) return false;
  int64_t v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return false;
  *out = v;
  return true;
}

// A number followed by `suffix` ("16.68%", "4.32GB"), the suffix required.
bool ParseWithSuffix(std::string_view s, std::string_view suffix, double* out,
                     bool commas = false) {
  s = Trim(s);
  if (!EndsWith(s, suffix)) return false;
  return ParseNumber(s.substr(0, s.size() - suffix.size()), out, commas);
}

void Emit(std::vector<FormatSample>* out, std::string field, double value, int64_t step) {
  if (field.empty() || !std::isfinite(value)) return;
  out->push_back({std::move(field), value, step < 0 ? 0 : step});
}

std::string_view View(const re2::StringPiece& p) {
  return {p.data(), p.size()};
}

// ---------------------------------------------------------------------------------------------
// Megatron-LM (and its Megatron-DeepSpeed fork): " [ts] iteration N/ M | key: value | ..." and
// "[Rank R] (after N iterations) memory (MB) | allocated: x | ...".

class MegatronParser : public LogFormatParser {
 public:
  void Parse(std::string_view line, std::vector<FormatSample>* out) override {
    if (!ParseIteration(line, out)) ParseMemory(line, out);
  }

 private:
  // Position just after "iteration <N>/ <M> |" with N in *step, or npos.
  static size_t FindIteration(std::string_view line, int64_t* step) {
    constexpr std::string_view kWord = "iteration";
    for (size_t p = line.find(kWord); p != std::string_view::npos; p = line.find(kWord, p + 1)) {
      if (p > 0 && IsAlnum(line[p - 1])) continue;
      size_t i = p + kWord.size();
      const size_t spaces = i;
      while (i < line.size() && line[i] == ' ') ++i;
      if (i == spaces) continue;
      const size_t n = i;
      while (i < line.size() && IsDigit(line[i])) ++i;
      if (i == n || i >= line.size() || line[i] != '/') continue;
      const std::string_view iter = line.substr(n, i - n);
      ++i;
      while (i < line.size() && line[i] == ' ') ++i;
      const size_t m = i;
      while (i < line.size() && IsDigit(line[i])) ++i;
      if (i == m) continue;
      while (i < line.size() && line[i] == ' ') ++i;
      if (i >= line.size() || line[i] != '|') continue;
      if (!ParseStep(iter, step)) *step = 0;
      return i + 1;
    }
    return std::string_view::npos;
  }

  static bool ParseIteration(std::string_view line, std::vector<FormatSample>* out) {
    int64_t step = 0;
    const size_t start = FindIteration(line, &step);
    if (start == std::string_view::npos) return false;
    double iter_ms = -1, batch = -1;
    bool explicit_rate = false;
    for (std::string_view part : Split(line.substr(start), '|')) {
      const size_t colon = part.rfind(':');
      if (colon == std::string_view::npos) continue;
      const std::string_view key = Trim(part.substr(0, colon));
      double v = 0;
      if (key.empty() || !ParseNumber(part.substr(colon + 1), &v)) continue;
      const std::string field = FieldOf(key, &v);
      if (field.empty()) continue;
      if (field == "iter_ms") iter_ms = v;
      if (field == "global_batch_size") batch = v;
      if (field == "samples_per_s") explicit_rate = true;
      Emit(out, field, v, step);
    }
    if (!explicit_rate && iter_ms > 0 && batch >= 0)
      Emit(out, "samples_per_s", batch * 1000.0 / iter_ms, step);
    return true;
  }

  // The field of an iteration line's key ("" when none); converts *v to the field's unit.
  static std::string FieldOf(std::string_view key, double* v) {
    static const std::pair<std::string_view, std::string_view> kKeys[] = {
        {"consumed samples", "consumed_samples"},
        {"consumed tokens", "consumed_tokens"},
        {"skipped samples", "skipped_samples"},
        {"elapsed time per iteration (ms)", "iter_ms"},
        {"throughput per GPU (TFLOP/s/GPU)", "tflops_per_gpu"},
        {"TFLOPs", "tflops_per_gpu"},
        {"samples per second", "samples_per_s"},
        {"tokens per gpu per second (tgs)", "tokens_per_s_per_gpu"},
        {"energy per GPU (J/iter/GPU)", "energy_j_per_gpu"},
        {"power per GPU (W/GPU)", "power_w_per_gpu"},
        {"learning rate", "learning_rate"},
        {"decoupled learning rate", "decoupled_learning_rate"},
        {"global batch size", "global_batch_size"},
        {"loss scale", "loss_scale"},
        {"grad norm", "grad_norm"},
        {"num zeros", "num_zeros"},
        {"params norm", "params_norm"},
        {"number of skipped iterations", "skipped_iterations"},
        {"number of nan iterations", "nan_iterations"},
    };
    for (const auto& [k, f] : kKeys)
      if (key == k) return std::string(f);
    if (key == "elapsed time per iteration (s)") {  // Megatron-DeepSpeed
      *v *= 1000.0;
      return "iter_ms";
    }
    // Every loss the line carries: "lm loss", "load_balancing_loss", "mtp_1 loss", "z_loss"...
    std::string n = NormalizeKey(key);
    if (EndsWith(n, "loss")) return n;
    return "";
  }

  static void ParseMemory(std::string_view line, std::vector<FormatSample>* out) {
    constexpr std::string_view kAnchor = "memory (MB)";
    const size_t a = line.find(kAnchor);
    if (a == std::string_view::npos) return;
    int64_t step = 0;
    constexpr std::string_view kAfter = "(after ";
    const size_t b = line.rfind(kAfter, a);
    if (b != std::string_view::npos) {
      const std::string_view rest = line.substr(b + kAfter.size(), a - b - kAfter.size());
      const size_t sp = rest.find(' ');
      if (sp == std::string_view::npos || Trim(rest.substr(sp)) != "iterations)" ||
          !ParseStep(rest.substr(0, sp), &step))
        step = 0;
    }
    static const std::pair<std::string_view, std::string_view> kKeys[] = {
        {"allocated", "mem_allocated_mb"},
        {"max allocated", "mem_max_allocated_mb"},
        {"reserved", "mem_reserved_mb"},
        {"max reserved", "mem_max_reserved_mb"},
        {"total device memory used", "mem_device_used_mb"},
    };
    for (std::string_view part : Split(line.substr(a + kAnchor.size()), '|')) {
      const size_t colon = part.rfind(':');
      if (colon == std::string_view::npos) continue;
      const std::string_view key = Trim(part.substr(0, colon));
      double v = 0;
      if (!ParseNumber(part.substr(colon + 1), &v)) continue;
      for (const auto& [k, f] : kKeys)
        if (key == k) Emit(out, std::string(f), v, step);
    }
  }
};

// ---------------------------------------------------------------------------------------------
// DeepSpeed: the ThroughputTimer line (three generations), the engine's progress line, the
// wall-clock breakdown and the pipeline engine's line.

class DeepSpeedParser : public LogFormatParser {
 public:
  void Parse(std::string_view line, std::vector<FormatSample>* out) override {
    const re2::StringPiece in(line.data(), line.size());
    re2::StringPiece a, b, c, d;
    if (line.find("SamplesPerSec=") != std::string_view::npos &&
        re2::RE2::PartialMatch(in, Timer(), &a, &b)) {
      int64_t step = 0;
      if (!a.empty() && !ParseStep(View(a), &step)) step = 0;
      ParseTimerPairs(View(b), step, out);
      return;
    }
    if (line.find("skipped=") != std::string_view::npos &&
        re2::RE2::PartialMatch(in, Progress(), &a, &b, &c)) {
      int64_t step = 0;
      if (!ParseStep(View(a), &step)) step = 0;
      double v = 0;
      if (ParseNumber(View(b), &v)) Emit(out, "skipped_steps", v, step);
      if (ParseNumber(View(c), &v)) Emit(out, "lr", v, step);
      return;
    }
    if (line.find("time (ms) |") != std::string_view::npos &&
        re2::RE2::PartialMatch(in, Breakdown(), &a)) {
      ParseBreakdown(View(a), out);
      return;
    }
    if (line.find("iter time (s):") != std::string_view::npos &&
        re2::RE2::PartialMatch(in, Pipe(), &a, &b, &c, &d)) {
      int64_t step = 0;
      if (!ParseStep(View(a), &step)) step = 0;
      double v = 0;
      if (ParseNumber(View(b), &v)) Emit(out, "loss", v, step);
      if (ParseNumber(View(c), &v)) Emit(out, "iter_s", v, step);
      if (!d.empty() && ParseNumber(View(d), &v)) Emit(out, "samples_per_s", v, step);
    }
  }

 private:
  // "epoch=E/micro_step=M/global_step=G, " (2023 on: group 1 = G) or "E/M, " (before: no
  // step), then the pairs from the first "...SamplesPerSec=" on (group 2).
  static const re2::RE2& Timer() {
    static const re2::RE2 re(
        R"((?:^|[\s\]])(?:epoch=\d+/micro_step=\d+/global_step=(\d+)|\d+/\d+), )"
        R"(((?:RunningAvg)?SamplesPerSec=.*))");
    return re;
  }
  static const re2::RE2& Progress() {
    static const re2::RE2 re(R"((?:^|[\s\]])step=(\d+), skipped=(\d+), lr=\[\s*([^\],\s]*))");
    return re;
  }
  static const re2::RE2& Breakdown() {
    static const re2::RE2 re(R"((?:^|[\s\]])time \(ms\) \|(.*))");
    return re;
  }
  static const re2::RE2& Pipe() {
    static const re2::RE2 re(
        R"((?:^|[\s\]:])steps: (\d+) loss: (\S+) .*?iter time \(s\): (\S+)(?: samples/sec: (\S+))?)");
    return re;
  }

  static void ParseTimerPairs(std::string_view pairs, int64_t step,
                              std::vector<FormatSample>* out) {
    for (std::string_view p : Split(pairs, ',')) {
      p = Trim(p);
      const size_t eq = p.find('=');
      if (eq == std::string_view::npos) continue;
      const std::string_view key = p.substr(0, eq), val = p.substr(eq + 1);
      double v = 0;
      if (key == "RunningAvgSamplesPerSec" || key == "SamplesPerSec") {
        if (ParseNumber(val, &v)) Emit(out, "avg_samples_per_s", v, step);
      } else if (key == "CurrSamplesPerSec") {
        if (ParseNumber(val, &v)) Emit(out, "samples_per_s", v, step);
      } else if (key == "MemAllocated") {
        if (ParseWithSuffix(val, "GB", &v)) Emit(out, "mem_allocated_gib", v, step);
      } else if (key == "MaxMemAllocated") {
        if (ParseWithSuffix(val, "GB", &v)) Emit(out, "max_mem_allocated_gib", v, step);
      }
    }
  }

  static void ParseBreakdown(std::string_view parts, std::vector<FormatSample>* out) {
    static const std::string_view kTimers[] = {
        "fwd",
        "bwd",
        "bwd_inner",
        "bwd_allreduce",
        "step",
        "fwd_microstep",
        "bwd_microstep",
        "bwd_inner_microstep",
        "bwd_allreduce_microstep",
        "step_microstep",
        "optimizer_allgather",
        "optimizer_gradients",
        "optimizer_step",
    };
    for (std::string_view part : Split(parts, '|')) {
      const size_t colon = part.rfind(':');
      if (colon == std::string_view::npos) continue;
      const std::string_view name = Trim(part.substr(0, colon));
      double v = 0;
      if (!ParseNumber(part.substr(colon + 1), &v)) continue;
      for (std::string_view t : kTimers)
        if (name == t) Emit(out, std::string(t) + "_ms", v, 0);
    }
  }
};

// ---------------------------------------------------------------------------------------------
// A Python dict literal of a flat mapping as str(dict) prints it: {'key': value, ...}. Values that
// are numbers, numbers in quotes, or a call around a number (np.float64(0.5), tensor(0.5)) are
// read; strings, lists, None, booleans and nested dicts are skipped.

class PyDictScanner {
 public:
  explicit PyDictScanner(std::string_view s) : s_(s) {}

  // Parses the dict starting at `i` (its '{'). On success appends (key, value) pairs and returns
  // true with *end just past the '}'; on failure *end is where it stopped (> i).
  bool Parse(size_t i, std::vector<std::pair<std::string, double>>* pairs, size_t* end) {
    pos_ = i + 1;
    const bool ok = Dict(pairs);
    *end = pos_ > i ? pos_ : i + 1;
    return ok;
  }

 private:
  void SkipSpaces() {
    while (pos_ < s_.size() && IsSpace(s_[pos_])) ++pos_;
  }

  // A quoted string at pos_; its raw contents (escapes kept) in *out.
  bool String(std::string_view* out) {
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) return false;
    const char q = s_[pos_++];
    const size_t b = pos_;
    while (pos_ < s_.size() && s_[pos_] != q) {
      if (s_[pos_] == '\\') ++pos_;
      ++pos_;
    }
    if (pos_ >= s_.size()) return false;
    *out = s_.substr(b, pos_ - b);
    ++pos_;
    return true;
  }

  // A value up to the ',' or '}' that ends it at depth 0; *raw is its text, *quoted whether it
  // was one string.
  bool Value(std::string_view* raw, bool* quoted) {
    SkipSpaces();
    *quoted = false;
    if (pos_ < s_.size() && (s_[pos_] == '\'' || s_[pos_] == '"')) {
      *quoted = true;
      return String(raw);
    }
    const size_t b = pos_;
    int depth = 0;
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == '\'' || c == '"') {
        std::string_view ignored;
        if (!String(&ignored)) return false;
        continue;
      }
      if (c == '[' || c == '(' || c == '{') {
        ++depth;
      } else if (c == ']' || c == ')' || c == '}') {
        if (depth == 0) break;
        --depth;
      } else if (c == ',' && depth == 0) {
        break;
      }
      ++pos_;
    }
    if (pos_ >= s_.size()) return false;
    *raw = Trim(s_.substr(b, pos_ - b));
    return true;
  }

  bool Dict(std::vector<std::pair<std::string, double>>* pairs) {
    for (bool first = true;; first = false) {
      SkipSpaces();
      if (pos_ < s_.size() && s_[pos_] == '}' && !first) {  // a trailing comma
        ++pos_;
        return true;
      }
      std::string_view key;
      if (!String(&key)) return false;
      SkipSpaces();
      if (pos_ >= s_.size() || s_[pos_] != ':') return false;
      ++pos_;
      std::string_view raw;
      bool quoted = false;
      if (!Value(&raw, &quoted)) return false;
      double v = 0;
      if (Number(raw, quoted, &v)) pairs->emplace_back(std::string(key), v);
      SkipSpaces();
      if (pos_ >= s_.size()) return false;
      if (s_[pos_] == '}') {
        ++pos_;
        return true;
      }
      if (s_[pos_] != ',') return false;
      ++pos_;
    }
  }

  static bool Number(std::string_view raw, bool quoted, double* v) {
    if (ParseNumber(raw, v)) return true;
    if (quoted || raw.empty()) return false;
    // np.float64(0.5), np.float32(1e-05), tensor(0.5, device='cuda:0')
    const size_t open = raw.find('(');
    if (open == std::string_view::npos || open == 0 || raw.back() != ')') return false;
    for (char c : raw.substr(0, open))
      if (!IsAlnum(c) && c != '_' && c != '.') return false;
    std::string_view inner = raw.substr(open + 1, raw.size() - open - 2);
    inner = inner.substr(0, inner.find(','));
    return ParseNumber(inner, v);
  }

  std::string_view s_;
  size_t pos_ = 0;
};

// Hugging Face Trainer: the dicts ProgressCallback / PrinterCallback print, anywhere on the line
// (tqdm often glues the bar in front), every one on it.
class HfTrainerParser : public LogFormatParser {
 public:
  void Parse(std::string_view line, std::vector<FormatSample>* out) override {
    PyDictScanner scanner(line);
    std::vector<std::pair<std::string, double>> pairs;
    for (size_t i = line.find('{'); i != std::string_view::npos;) {
      size_t j = i + 1;
      while (j < line.size() && line[j] == ' ') ++j;
      if (j >= line.size() || (line[j] != '\'' && line[j] != '"')) {
        i = line.find('{', i + 1);
        continue;
      }
      pairs.clear();
      size_t end = i + 1;
      if (scanner.Parse(i, &pairs, &end)) Add(pairs, out);
      i = line.find('{', end);
    }
  }

 private:
  static void Add(const std::vector<std::pair<std::string, double>>& pairs,
                  std::vector<FormatSample>* out) {
    int64_t step = 0;
    for (const auto& [k, v] : pairs)
      if ((k == "step" || k == "global_step") && v >= 1 && v < 9.2e18 && v == std::floor(v))
        step = static_cast<int64_t>(v);
    for (const auto& [k, v] : pairs) {
      if (k == "step" || k == "global_step") continue;
      Emit(out, NormalizeKey(k), v, step);
    }
  }
};

// ---------------------------------------------------------------------------------------------
// PyTorch Lightning CSVLogger metrics.csv: a header with a "step" column, then rows.

// The cells of one CSV record (RFC 4180 quoting as Python's csv module writes it).
std::vector<std::string> CsvCells(std::string_view line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cells.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

class LightningCsvParser : public LogFormatParser {
 public:
  void Parse(std::string_view line, std::vector<FormatSample>* out) override {
    line = Trim(line);
    if (line.find(',') == std::string_view::npos) return;
    const std::vector<std::string> cells = CsvCells(line);
    if (IsHeader(cells)) {
      fields_.clear();
      step_col_ = -1;
      for (size_t i = 0; i < cells.size(); ++i) {
        if (Trim(cells[i]) == "step") step_col_ = static_cast<int>(i);
        fields_.push_back(NormalizeKey(Trim(cells[i])));
      }
      return;
    }
    if (fields_.empty() || cells.size() != fields_.size()) return;
    std::vector<double> values(cells.size());
    std::vector<bool> have(cells.size(), false);
    for (size_t i = 0; i < cells.size(); ++i) {
      if (Trim(cells[i]).empty()) continue;
      if (!ParseNumber(cells[i], &values[i])) {
        // nan/inf cells are no sample; any other text means this is not a row.
        const std::string n = NormalizeKey(Trim(cells[i]));
        if (n != "nan" && n != "inf") return;
        continue;
      }
      have[i] = true;
    }
    int64_t step = 0;
    if (step_col_ >= 0 && have[static_cast<size_t>(step_col_)]) {
      const double s = values[static_cast<size_t>(step_col_)];
      if (s >= 1 && s < 9.2e18 && s == std::floor(s)) step = static_cast<int64_t>(s);
    }
    for (size_t i = 0; i < cells.size(); ++i)
      if (have[i] && static_cast<int>(i) != step_col_) Emit(out, fields_[i], values[i], step);
  }

 private:
  // A header: no empty or numeric cell, and one named "step" (CSVLogger always writes it).
  static bool IsHeader(const std::vector<std::string>& cells) {
    bool step = false;
    for (const auto& c : cells) {
      const std::string_view t = Trim(c);
      double v = 0;
      if (t.empty() || ParseNumber(t, &v)) return false;
      if (t == "step") step = true;
    }
    return step;
  }

  std::vector<std::string> fields_;  // per column; "" for none
  int step_col_ = -1;
};

// ---------------------------------------------------------------------------------------------
// torchtitan: "step: N  loss: x  grad_norm: x  memory: xGiB(y%)  tps: 1,234  tflops: x  mfu: x%"
// (older: "wps:", no grad_norm/tflops), and "validate step: N  loss: x ...".

class TorchtitanParser : public LogFormatParser {
 public:
  void Parse(std::string_view line, std::vector<FormatSample>* out) override {
    constexpr std::string_view kStep = "step:";
    for (size_t p = line.find(kStep); p != std::string_view::npos; p = line.find(kStep, p + 1)) {
      if (p > 0 && (IsAlnum(line[p - 1]) || line[p - 1] == '_')) continue;
      size_t i = p + kStep.size();
      while (i < line.size() && line[i] == ' ') ++i;
      const size_t n = i;
      while (i < line.size() && IsDigit(line[i])) ++i;
      if (i == n || (i < line.size() && !IsSpace(line[i]))) continue;
      int64_t step = 0;
      if (!ParseStep(line.substr(n, i - n), &step)) step = 0;
      const bool validate = EndsWith(Trim(line.substr(0, p)), "validate");
      Fields(line.substr(i), step, validate, out);
      return;
    }
  }

 private:
  static void Fields(std::string_view rest, int64_t step, bool validate,
                     std::vector<FormatSample>* out) {
    const std::vector<std::string_view> t = Tokens(rest);
    std::vector<FormatSample> got;
    bool loss = false;
    for (size_t k = 0; k + 1 < t.size(); ++k) {
      if (t[k].size() < 2 || t[k].back() != ':') continue;
      const std::string_view key = t[k].substr(0, t[k].size() - 1), val = t[k + 1];
      double v = 0;
      if (key == "loss") {
        if (ParseNumber(val, &v)) Emit(&got, validate ? "val_loss" : "loss", v, step);
        loss = true;
      } else if (validate) {
        continue;
      } else if (key == "grad_norm") {
        if (ParseNumber(val, &v)) Emit(&got, "grad_norm", v, step);
      } else if (key == "memory") {  // 66.91GiB(37.51%)
        const size_t g = val.find("GiB");
        if (g == std::string_view::npos) continue;
        if (ParseNumber(val.substr(0, g), &v)) Emit(&got, "memory_gib", v, step);
        const std::string_view pct = val.substr(g + 3);
        if (StartsWith(pct, "(") && ParseWithSuffix(pct.substr(1), "%)", &v))
          Emit(&got, "memory_pct", v, step);
      } else if (key == "tps" || key == "wps") {
        if (ParseNumber(val, &v, /*commas=*/true)) Emit(&got, "tps", v, step);
      } else if (key == "tflops") {
        if (ParseNumber(val, &v, /*commas=*/true)) Emit(&got, "tflops", v, step);
      } else if (key == "mfu") {  // "N/A" under FP8/MX quantisation
        if (ParseWithSuffix(val, "%", &v)) Emit(&got, "mfu_pct", v, step);
      }
    }
    if (!loss) return;  // not a metrics line
    out->insert(out->end(), got.begin(), got.end());
  }
};

// ---------------------------------------------------------------------------------------------
// nanoGPT: "iter N: loss x, time xms[, mfu x%]" and "step N: train loss x, val loss x".

class NanoGptParser : public LogFormatParser {
 public:
  void Parse(std::string_view line, std::vector<FormatSample>* out) override {
    static const re2::RE2 iter(
        R"((?:^|[\s\]:])iter (\d+): loss ([^,\s]+), time ([^,\s]+?)ms(?:, mfu ([^,\s]+?)%)?)");
    static const re2::RE2 eval(
        R"((?:^|[\s\]:])step (\d+): train loss ([^,\s]+), val loss ([^,\s]+))");
    const re2::StringPiece in(line.data(), line.size());
    re2::StringPiece a, b, c, d;
    int64_t step = 0;
    double v = 0;
    if (line.find("iter ") != std::string_view::npos &&
        re2::RE2::PartialMatch(in, iter, &a, &b, &c, &d)) {
      if (!ParseStep(View(a), &step)) step = 0;
      if (ParseNumber(View(b), &v)) Emit(out, "loss", v, step);
      if (ParseNumber(View(c), &v)) Emit(out, "iter_ms", v, step);
      // running_mfu starts at -1 ("mfu -100.00%") until the 5th iteration: a sentinel.
      if (!d.empty() && ParseNumber(View(d), &v) && v >= 0) Emit(out, "mfu_pct", v, step);
      return;
    }
    if (line.find("val loss") != std::string_view::npos &&
        re2::RE2::PartialMatch(in, eval, &a, &b, &c)) {
      if (!ParseStep(View(a), &step)) step = 0;
      if (ParseNumber(View(b), &v)) Emit(out, "train_loss", v, step);
      if (ParseNumber(View(c), &v)) Emit(out, "val_loss", v, step);
    }
  }
};

// ---------------------------------------------------------------------------------------------
// nccl-tests: the result table (columns named by its header line), "# Avg bus bandwidth : x" and
// "# Out of bounds values : n OK".

class NcclTestsParser : public LogFormatParser {
 public:
  NcclTestsParser() {
    // Until a header is seen: the layout of every nccl-tests release since 2.10 (root column).
    SetHeader(Tokens("size count type redop root time algbw busbw #wrong time algbw busbw #wrong"));
  }

  void Parse(std::string_view line, std::vector<FormatSample>* out) override {
    line = StripLauncherPrefix(line);
    const std::string_view t = Trim(line);
    if (t.empty()) return;
    if (t.front() == '#') {
      Comment(t.substr(1), out);
      return;
    }
    const std::vector<std::string_view> tok = Tokens(t);
    if (tok.size() < required_) return;
    int64_t size = 0;
    if (!ParseStep(tok[size_col_], &size) || size <= 0) return;  // size 0 rows measure nothing
    if (count_col_ >= 0) {
      int64_t count = 0;
      if (!ParseStep(tok[static_cast<size_t>(count_col_)], &count)) return;
    }
    if (type_col_ >= 0 && !IsAlpha(tok[static_cast<size_t>(type_col_)].front())) return;
    for (size_t i = 0; i < columns_.size(); ++i) {
      double v = 0;
      if (!columns_[i].empty() && ParseNumber(tok[i], &v)) Emit(out, columns_[i], v, size);
    }
  }

 private:
  // mpirun --tag-output's "[1,0]<stdout>:" in front of every line.
  static std::string_view StripLauncherPrefix(std::string_view line) {
    if (line.empty() || line.front() != '[') return line;
    const size_t close = line.find("]<std");
    if (close == std::string_view::npos || close > 24) return line;
    const size_t colon = line.find(">:", close);
    if (colon == std::string_view::npos || colon > close + 10) return line;
    return line.substr(colon + 2);
  }

  void Comment(std::string_view body, std::vector<FormatSample>* out) {
    const size_t colon = body.find(':');
    if (colon != std::string_view::npos) {
      const std::string_view key = Trim(body.substr(0, colon));
      const std::vector<std::string_view> val = Tokens(body.substr(colon + 1));
      double v = 0;
      if (key == "Avg bus bandwidth" && !val.empty() && ParseNumber(val[0], &v)) {
        Emit(out, "avg_busbw_gbps", v, 0);
        return;
      }
      if (key == "Out of bounds values" && !val.empty() && ParseNumber(val[0], &v)) {
        Emit(out, "out_of_bounds", v, 0);
        return;
      }
    }
    const std::vector<std::string_view> tok = Tokens(body);
    if (tok.size() >= 2 && tok[0] == "size") {
      for (auto x : tok)
        if (x == "busbw") {
          SetHeader(tok);
          return;
        }
    }
  }

  void SetHeader(const std::vector<std::string_view>& tok) {
    columns_.assign(tok.size(), "");
    size_col_ = 0;
    count_col_ = type_col_ = -1;
    required_ = tok.size();
    int seen_time = 0, seen_algbw = 0, seen_busbw = 0, seen_wrong = 0;
    // The first of each is out-of-place, the second in-place; a third is not one we know.
    auto name = [](int* seen, std::string_view base) {
      const int n = (*seen)++;
      return n == 0 ? std::string(base) : n == 1 ? "inplace_" + std::string(base) : "";
    };
    for (size_t i = 0; i < tok.size(); ++i) {
      const std::string_view c = tok[i];
      if (c == "size") size_col_ = i;
      if (c == "count") count_col_ = static_cast<int>(i);
      if (c == "type") type_col_ = static_cast<int>(i);
      if (c == "time") columns_[i] = name(&seen_time, "time_us");
      if (c == "algbw") columns_[i] = name(&seen_algbw, "algbw_gbps");
      if (c == "busbw") columns_[i] = name(&seen_busbw, "busbw_gbps");
      if (c == "#wrong") columns_[i] = name(&seen_wrong, "wrong");
      if (c == "timestamp" && i + 1 == tok.size()) required_ = i;  // its value may be 2 tokens
    }
    columns_.resize(required_);
  }

  std::vector<std::string> columns_;  // field per column; "" for none
  size_t size_col_ = 0;
  int count_col_ = -1, type_col_ = -1;
  size_t required_ = 0;  // tokens a row needs
};

// ---------------------------------------------------------------------------------------------
// The registry.

FormatField F(std::string name, std::string unit, Better better, std::string description) {
  return {std::move(name), std::move(unit), better, std::move(description)};
}

constexpr Better kHi = Better::kHigher;
constexpr Better kLo = Better::kLower;

std::vector<LogFormat> BuildFormats() {
  std::vector<LogFormat> v;
  // Set after the list: which unlisted field names a format gives (LogFormat::open_fields).
  auto open = [&](const char* name, const char* names) {
    for (auto& f : v)
      if (f.name == name) f.open_fields = names;
  };
  v.push_back(
      {"megatron",
       "Megatron-LM training_log lines \" [timestamp] iteration N/ M | key: value | ...\" (every "
       "release from 2020 to core_v0.16: with or without timestamp, --log-throughput, energy), "
       "the Megatron-DeepSpeed fork's (time in s, \"samples per second\", \"TFLOPs\"), and "
       "report_memory's \"[Rank R] (after N iterations) memory (MB) | ...\". Every \"<name> "
       "loss\" key is a field <name>_loss (lowercase, other characters '_'); the common ones are "
       "listed. Step: the iteration.",
       {
           F("iter_ms", "ms", kLo,
             "\"elapsed time per iteration (ms)\": the average over the log interval (the first "
             "iteration includes start-up); Megatron-DeepSpeed's \"(s)\" times 1000"),
           F("samples_per_s", "samples/s", kHi,
             "global batch size x 1000 / iter_ms when both are on the line; Megatron-DeepSpeed's "
             "\"samples per second\" where printed"),
           F("tflops_per_gpu", "TFLOP/s", kHi,
             "\"throughput per GPU (TFLOP/s/GPU)\" (with --log-throughput), Megatron-DeepSpeed's "
             "\"TFLOPs\": model FLOPs per second per GPU"),
           F("tokens_per_s_per_gpu", "tokens/s", kHi,
             "Megatron-DeepSpeed's \"tokens per gpu per second (tgs)\""),
           F("lm_loss", "", kLo, "\"lm loss\""),
           F("load_balancing_loss", "", kLo, "MoE \"load_balancing_loss\""),
           F("seq_load_balancing_loss", "", kLo, "MoE \"seq_load_balancing_loss\""),
           F("global_load_balancing_loss", "", kLo, "MoE \"global_load_balancing_loss\""),
           F("z_loss", "", kLo, "MoE router \"z_loss\""),
           F("mtp_1_loss", "", kLo, "multi-token prediction \"mtp_1 loss\""),
           F("loss_scale", "", kHi, "\"loss scale\" (fp16 dynamic loss scale; falls on overflow)"),
           F("grad_norm", "", kLo, "\"grad norm\""),
           F("params_norm", "", kLo, "\"params norm\" (with --log-params-norm)"),
           F("num_zeros", "", kLo, "\"num zeros\" in the gradient (with --log-num-zeros-in-grad)"),
           F("learning_rate", "", kHi, "\"learning rate\" (a schedule: neither way is better)"),
           F("decoupled_learning_rate", "", kHi, "\"decoupled learning rate\""),
           F("global_batch_size", "samples", kHi, "\"global batch size\""),
           F("consumed_samples", "samples", kHi, "\"consumed samples\" so far"),
           F("consumed_tokens", "tokens", kHi, "Megatron-DeepSpeed's \"consumed tokens\""),
           F("skipped_samples", "samples", kLo, "\"skipped samples\" (printed when > 0)"),
           F("skipped_iterations", "", kLo,
             "\"number of skipped iterations\" in the interval (loss-scale overflow)"),
           F("nan_iterations", "", kLo, "\"number of nan iterations\" in the interval"),
           F("energy_j_per_gpu", "J", kLo, "\"energy per GPU (J/iter/GPU)\" (--log-energy)"),
           F("power_w_per_gpu", "W", kLo, "\"power per GPU (W/GPU)\" (--log-energy)"),
           F("mem_allocated_mb", "MB", kLo, "report_memory \"allocated\" (MiB)"),
           F("mem_max_allocated_mb", "MB", kLo, "report_memory \"max allocated\" (MiB)"),
           F("mem_reserved_mb", "MB", kLo, "report_memory \"reserved\" (MiB)"),
           F("mem_max_reserved_mb", "MB", kLo, "report_memory \"max reserved\" (MiB)"),
           F("mem_device_used_mb", "MB", kLo,
             "report_memory \"total device memory used\" (--log-device-memory-used)"),
       }});
  v.push_back(
      {"deepspeed",
       "DeepSpeed ThroughputTimer lines (\"epoch=E/micro_step=M/global_step=G, "
       "RunningAvgSamplesPerSec=...\" since 2023, \"E/M, RunningAvgSamplesPerSec=..., "
       "CurrSamplesPerSec=...\" 2022, \"E/M, SamplesPerSec=...\" before), the engine's "
       "\"step=N, skipped=S, lr=[...]\", the wall-clock breakdown \"time (ms) | fwd: x | ...\" "
       "and the pipeline engine's \"steps: N loss: x iter time (s): x samples/sec: x\"; any "
       "logger or [Rank N] prefix. Step: global_step, step= or steps:; none on the older timer "
       "lines (their M counts micro-steps and restarts each epoch) and on breakdown lines.",
       {
           F("samples_per_s", "samples/s", kHi,
             "CurrSamplesPerSec (the last step; job-wide: the global batch over its time) or the "
             "pipeline engine's samples/sec"),
           F("avg_samples_per_s", "samples/s", kHi,
             "RunningAvgSamplesPerSec (SamplesPerSec before 2022): since the timer's start step"),
           F("mem_allocated_gib", "GiB", kLo, "MemAllocated (printed \"GB\", really GiB)"),
           F("max_mem_allocated_gib", "GiB", kLo, "MaxMemAllocated (printed \"GB\", really GiB)"),
           F("lr", "", kHi, "the first of lr=[...] on the step= line (a schedule)"),
           F("skipped_steps", "", kLo, "skipped= on the step= line: steps skipped (overflow)"),
           F("loss", "", kLo, "the pipeline engine's loss:"),
           F("iter_s", "s", kLo, "the pipeline engine's iter time (s)"),
           F("fwd_ms", "ms", kLo, "wall-clock breakdown fwd"),
           F("bwd_ms", "ms", kLo, "wall-clock breakdown bwd"),
           F("bwd_inner_ms", "ms", kLo, "wall-clock breakdown bwd_inner"),
           F("bwd_allreduce_ms", "ms", kLo, "wall-clock breakdown bwd_allreduce"),
           F("step_ms", "ms", kLo, "wall-clock breakdown step (the optimizer step)"),
           F("fwd_microstep_ms", "ms", kLo, "wall-clock breakdown fwd_microstep"),
           F("bwd_microstep_ms", "ms", kLo, "wall-clock breakdown bwd_microstep"),
           F("bwd_inner_microstep_ms", "ms", kLo, "wall-clock breakdown bwd_inner_microstep"),
           F("bwd_allreduce_microstep_ms", "ms", kLo,
             "wall-clock breakdown bwd_allreduce_microstep"),
           F("step_microstep_ms", "ms", kLo, "wall-clock breakdown step_microstep"),
           F("optimizer_allgather_ms", "ms", kLo, "ZeRO timer optimizer_allgather"),
           F("optimizer_gradients_ms", "ms", kLo, "ZeRO timer optimizer_gradients"),
           F("optimizer_step_ms", "ms", kLo, "ZeRO timer optimizer_step"),
       }});
  v.push_back(
      {"hf_trainer",
       "Hugging Face Trainer log dicts as ProgressCallback/PrinterCallback print them, "
       "{'loss': 1.7, ...}: raw floats (older releases) or every float quoted as '{:.4g}' "
       "(newer), anywhere on a line (after a tqdm bar), several per line. Every numeric key is a "
       "field under its normalised name (lowercase, other characters '_': "
       "'memory/max_mem_active(gib)' is memory_max_mem_active_gib); the common ones are "
       "listed. Step: a 'step' or 'global_step' key when the dict has one, else none.",
       {
           F("loss", "", kLo, "'loss': training loss averaged since the last log"),
           F("grad_norm", "", kLo, "'grad_norm'"),
           F("learning_rate", "", kHi, "'learning_rate' (a schedule)"),
           F("epoch", "epochs", kHi, "'epoch' (fractional)"),
           F("num_input_tokens_seen", "tokens", kHi, "'num_input_tokens_seen'"),
           F("train_runtime", "s", kLo, "the final summary's 'train_runtime' (whole train())"),
           F("train_samples_per_second", "samples/s", kHi,
             "the final summary's 'train_samples_per_second' (warm-up included)"),
           F("train_steps_per_second", "steps/s", kHi, "'train_steps_per_second'"),
           F("train_tokens_per_second", "tokens/s", kHi,
             "'train_tokens_per_second' (with include_tokens_per_second)"),
           F("train_loss", "", kLo, "the final summary's 'train_loss' (mean over the run)"),
           F("eval_loss", "", kLo, "'eval_loss'"),
           F("eval_runtime", "s", kLo, "'eval_runtime'"),
           F("eval_samples_per_second", "samples/s", kHi, "'eval_samples_per_second'"),
           F("eval_steps_per_second", "steps/s", kHi, "'eval_steps_per_second'"),
           F("mean_token_accuracy", "", kHi, "TRL's 'mean_token_accuracy'"),
           F("memory_max_mem_active_gib", "GiB", kLo, "'memory/max_mem_active(gib)'"),
           F("memory_max_mem_allocated_gib", "GiB", kLo, "'memory/max_mem_allocated(gib)'"),
           F("memory_device_mem_reserved_gib", "GiB", kLo, "'memory/device_mem_reserved(gib)'"),
       }});
  v.push_back(
      {"lightning_csv",
       "PyTorch Lightning CSVLogger metrics.csv lines: a header naming the columns (one is "
       "\"step\"), then rows; empty cells are no sample; a new header replaces the old. Every "
       "column is a field under its normalised name (\"train/device/samples_per_sec\" is "
       "train_device_samples_per_sec); the ThroughputMonitor ones and common losses are listed. "
       "Step: the row's step column.",
       {
           F("epoch", "epochs", kHi, "the epoch column"),
           F("train_loss", "", kLo, "a train_loss column (self.log(\"train_loss\", ...))"),
           F("train_loss_step", "", kLo, "train_loss_step (on_step and on_epoch logging)"),
           F("train_loss_epoch", "", kLo, "train_loss_epoch"),
           F("val_loss", "", kLo, "a val_loss column"),
           F("train_device_samples_per_sec", "samples/s", kHi,
             "ThroughputMonitor train/device/samples_per_sec (one device)"),
           F("train_device_batches_per_sec", "batches/s", kHi, "train/device/batches_per_sec"),
           F("train_device_items_per_sec", "items/s", kHi, "train/device/items_per_sec"),
           F("train_device_flops_per_sec", "FLOP/s", kHi, "train/device/flops_per_sec"),
           F("train_device_mfu", "", kHi, "train/device/mfu: a fraction (0.45), not a percent"),
           F("train_samples_per_sec", "samples/s", kHi,
             "train/samples_per_sec: all devices (world size > 1 only)"),
           F("train_batches_per_sec", "batches/s", kHi, "train/batches_per_sec (world > 1)"),
           F("train_items_per_sec", "items/s", kHi, "train/items_per_sec (world > 1)"),
           F("train_flops_per_sec", "FLOP/s", kHi, "train/flops_per_sec (world > 1)"),
           F("train_time", "s", kLo, "train/time: seconds since the monitor started"),
           F("train_samples", "samples", kHi, "train/samples seen per device"),
           F("train_batches", "batches", kHi, "train/batches seen per device"),
           F("device_samples_per_sec", "samples/s", kHi,
             "Fabric ThroughputMonitor device/samples_per_sec (no stage prefix)"),
           F("device_mfu", "", kHi, "Fabric device/mfu: a fraction"),
           F("samples_per_sec", "samples/s", kHi, "Fabric samples_per_sec (world > 1)"),
       }});
  v.push_back(
      {"torchtitan",
       "torchtitan's metrics line \"step: N  loss: x  grad_norm: x  memory: xGiB(y%)  tps: "
       "1,234  tflops: x  mfu: x%\" (2024's \"wps:\" without grad_norm and tflops included), "
       "with ANSI colours stripped and any \"[rank0]:[titan] ... - \" prefix; \"validate "
       "step: N  loss: x ...\" gives val_loss. Step: the step.",
       {
           F("loss", "", kLo, "loss: the global average loss"),
           F("grad_norm", "", kLo, "grad_norm:"),
           F("memory_gib", "GiB", kLo, "memory: max reserved GiB"),
           F("memory_pct", "%", kLo, "memory: (x%) of the device"),
           F("tps", "tokens/s", kHi, "tps: (wps: before 2025) tokens per second per device"),
           F("tflops", "TFLOP/s", kHi, "tflops: per device"),
           F("mfu_pct", "%", kHi, "mfu: percent of bf16 peak; N/A (FP8/MX) gives none"),
           F("val_loss", "", kLo, "loss: on a \"validate step:\" line"),
       }});
  v.push_back(
      {"nanogpt",
       "nanoGPT train.py's \"iter N: loss x, time xms, mfu x%\" (no mfu before Feb 2023) and "
       "eval \"step N: train loss x, val loss x\". Step: the iteration.",
       {
           F("loss", "", kLo, "iter line loss: the last micro-batch's, not an average"),
           F("iter_ms", "ms", kLo, "iter line time: that one iteration"),
           F("mfu_pct", "%", kHi,
             "iter line mfu: an EMA against a hard-coded A100 bf16 peak (312 TFLOP/s); the "
             "\"-100.00%\" of the first iterations gives none"),
           F("train_loss", "", kLo, "eval line train loss (estimate_loss over eval_iters)"),
           F("val_loss", "", kLo, "eval line val loss"),
       }});
  v.push_back(
      {"nccl_tests",
       "nccl-tests (all_reduce_perf, ...) result tables: rows mapped by the header line's "
       "columns (with or without root, per-iteration columns, timestamps), "
       "\"# Avg bus bandwidth : x\" and \"# Out of bounds values : n\"; mpirun's "
       "\"[1,0]<stdout>:\" prefix removed. Step: the row's message size in bytes (none for the "
       "footer lines); rows of size 0 are skipped.",
       {
           F("busbw_gbps", "GB/s", kHi, "out-of-place busbw"),
           F("algbw_gbps", "GB/s", kHi, "out-of-place algbw"),
           F("time_us", "us", kLo, "out-of-place time"),
           F("wrong", "", kLo, "out-of-place #wrong (N/A without -c gives none)"),
           F("inplace_busbw_gbps", "GB/s", kHi, "in-place busbw"),
           F("inplace_algbw_gbps", "GB/s", kHi, "in-place algbw"),
           F("inplace_time_us", "us", kLo, "in-place time"),
           F("inplace_wrong", "", kLo, "in-place #wrong"),
           F("avg_busbw_gbps", "GB/s", kHi, "# Avg bus bandwidth: the mean busbw over the table"),
           F("out_of_bounds", "", kLo,
             "# Out of bounds values: results with wrong elements (-c 1)"),
       }});
  open("megatron", "_loss");
  open("hf_trainer", "*");
  open("lightning_csv", "*");
  return v;
}

}  // namespace

const std::vector<LogFormat>& LogFormats() {
  static const std::vector<LogFormat> formats = BuildFormats();
  return formats;
}

const LogFormat* FindLogFormat(std::string_view name) {
  for (const auto& f : LogFormats())
    if (f.name == name) return &f;
  return nullptr;
}

Result<std::unique_ptr<LogFormatParser>> LogFormatParser::Create(std::string_view format) {
  std::unique_ptr<LogFormatParser> p;
  if (format == "megatron") p = std::make_unique<MegatronParser>();
  if (format == "deepspeed") p = std::make_unique<DeepSpeedParser>();
  if (format == "hf_trainer") p = std::make_unique<HfTrainerParser>();
  if (format == "lightning_csv") p = std::make_unique<LightningCsvParser>();
  if (format == "torchtitan") p = std::make_unique<TorchtitanParser>();
  if (format == "nanogpt") p = std::make_unique<NanoGptParser>();
  if (format == "nccl_tests") p = std::make_unique<NcclTestsParser>();
  if (p) return p;
  std::string known;
  for (const auto& f : LogFormats()) known += (known.empty() ? "" : ", ") + f.name;
  return Status::InvalidArgument("log format \"" + std::string(format) +
                                 "\" is not built in; known: " + known);
}

std::string StripAnsi(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  constexpr char kEsc = '\x1b';
  size_t i = 0;
  while (i < line.size()) {
    const char c = line[i];
    if (c != kEsc) {
      out += c;
      ++i;
      continue;
    }
    ++i;  // ESC
    if (i >= line.size()) break;
    const char k = line[i];
    if (k == '[') {  // CSI: parameters 0x30-0x3F, intermediates 0x20-0x2F, one final 0x40-0x7E
      ++i;
      while (i < line.size() && line[i] >= 0x30 && line[i] <= 0x3F) ++i;
      while (i < line.size() && line[i] >= 0x20 && line[i] <= 0x2F) ++i;
      if (i < line.size() && line[i] >= 0x40 && line[i] <= 0x7E) ++i;
    } else if (k == ']' || k == 'P' || k == 'X' || k == '^' || k == '_') {
      // OSC, DCS, SOS, PM, APC: a string ended by BEL (OSC) or ST (ESC \), or the line's end.
      ++i;
      while (i < line.size()) {
        if (line[i] == '\x07' && k == ']') {
          ++i;
          break;
        }
        if (line[i] == kEsc && i + 1 < line.size() && line[i + 1] == '\\') {
          i += 2;
          break;
        }
        ++i;
      }
    } else {  // a pair: ESC, intermediates (0x20-0x2F, "ESC ( B"), one final byte 0x30-0x7E
      while (i < line.size() && line[i] >= 0x20 && line[i] <= 0x2F) ++i;
      if (i < line.size() && line[i] >= 0x30 && line[i] <= 0x7E) ++i;
    }
  }
  return out;
}

}  // namespace tunectl
