#include "core/prom_scrape.h"

#include <re2/re2.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <utility>

namespace tunectl {
namespace {

constexpr size_t kMaxSelectorBytes = 4096;
constexpr size_t kMaxUrlBytes = 2048;

bool IsBlank(char c) {
  return c == ' ' || c == '\t';
}
bool IsAlpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}
bool IsNameStart(char c) {
  return IsAlpha(c) || c == '_' || c == ':';
}
bool IsNameChar(char c) {
  return IsNameStart(c) || IsDigit(c);
}
bool IsLabelStart(char c) {
  return IsAlpha(c) || c == '_';
}
bool IsLabelChar(char c) {
  return IsLabelStart(c) || IsDigit(c);
}
char Lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = Lower(c);
  return out;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

// `s` fit for a message: at most `max` bytes, control bytes as '?'.
std::string Printable(std::string_view s, size_t max = 120) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    out += (c < 0x20 || c == 0x7f) ? '?' : s[i];
  }
  if (s.size() > max) out += "…";
  return out;
}

std::string Found(std::string_view s, size_t i) {
  if (i >= s.size()) return "the end";
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x20 || c >= 0x7f) {
    static const char kHex[] = "0123456789abcdef";
    return std::string("byte 0x") + kHex[c >> 4] + kHex[c & 15];
  }
  return std::string("'") + s[i] + "'";
}

// A decimal out of a double's range: infinity when its magnitude is large, else zero.
double OutOfRange(std::string_view decimal) {
  const size_t e = std::min(decimal.find_first_of("eE"), decimal.size());
  const std::string_view mantissa = decimal.substr(0, e);
  const size_t first = mantissa.find_first_of("123456789");
  if (first == std::string_view::npos) return 0.0;
  const size_t dot = std::min(mantissa.find('.'), mantissa.size());
  int64_t exp10 =
      first < dot ? static_cast<int64_t>(dot - first) : -static_cast<int64_t>(first - dot);
  if (e < decimal.size()) {
    std::string_view x = decimal.substr(e + 1);
    const bool neg = !x.empty() && x.front() == '-';
    if (!x.empty() && (x.front() == '-' || x.front() == '+')) x.remove_prefix(1);
    int64_t n = 0;
    for (char c : x) n = std::min<int64_t>(n * 10 + (c - '0'), int64_t{1} << 40);
    exp10 += neg ? -n : n;
  }
  return exp10 > 0 ? HUGE_VAL : 0.0;
}

// A number as Go's strconv.ParseFloat reads it in exposition text: decimal, NaN, [+-]Inf.
std::optional<double> ParseFloat(std::string_view t) {
  bool neg = false;
  if (!t.empty() && (t.front() == '+' || t.front() == '-')) {
    neg = t.front() == '-';
    t.remove_prefix(1);
  }
  if (t.empty()) return std::nullopt;
  if (IsAlpha(t.front())) {
    const std::string low = ToLower(t);
    if (low == "inf" || low == "infinity") return neg ? -HUGE_VAL : HUGE_VAL;
    if (low == "nan") return std::nan("");
    return std::nullopt;
  }
  if (t.front() == '+' || t.front() == '-') return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (end != t.data() + t.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    v = OutOfRange(t);  // from_chars leaves `v` alone then
  } else if (ec != std::errc()) {
    return std::nullopt;
  }
  return neg ? -v : v;
}

std::optional<int64_t> ParseInt64(std::string_view t) {
  if (!t.empty() && t.front() == '+') t.remove_prefix(1);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
  return v;
}

// ---- exposition text ------------------------------------------------------------------------

class LineParser {
 public:
  explicit LineParser(std::string_view line) : s_(line) {}

  // Empty when the line was taken (a point, a TYPE, a comment), else why it was skipped.
  std::string Parse(PromScrape* out) {
    SkipBlanks();
    if (i_ >= s_.size()) return "";
    if (s_[i_] == '#') return Comment(out);
    return Sample(out);
  }

 private:
  void SkipBlanks() {
    while (i_ < s_.size() && IsBlank(s_[i_])) ++i_;
  }
  std::string_view Token() {
    const size_t b = i_;
    while (i_ < s_.size() && !IsBlank(s_[i_])) ++i_;
    return s_.substr(b, i_ - b);
  }
  std::string At(const std::string& what) const {
    return "column " + std::to_string(i_ + 1) + ": expected " + what + ", found " + Found(s_, i_);
  }
  static bool ValidName(std::string_view n) {
    if (n.empty() || !IsNameStart(n.front())) return false;
    return std::all_of(n.begin(), n.end(), IsNameChar);
  }

  std::string Comment(PromScrape* out) {
    ++i_;
    SkipBlanks();
    const std::string_view keyword = Token();
    if (keyword != "TYPE") return "";  // HELP, # EOF and plain comments
    SkipBlanks();
    const std::string_view name = Token();
    if (!ValidName(name)) return "TYPE line names no valid metric \"" + Printable(name) + "\"";
    SkipBlanks();
    const std::string_view type = Token();
    SkipBlanks();
    static const std::set<std::string_view> kTypes = {"counter",        "gauge",    "histogram",
                                                      "summary",        "untyped",  "unknown",
                                                      "gaugehistogram", "stateset", "info"};
    if (kTypes.count(type) == 0) {
      return "TYPE line for " + std::string(name) + " names no known type \"" + Printable(type) +
             "\"";
    }
    if (i_ < s_.size()) return "TYPE line for " + std::string(name) + " has trailing text";
    if (!out->types.emplace(std::string(name), std::string(type)).second) {
      return "second TYPE line for " + std::string(name) + " (the first is kept)";
    }
    return "";
  }

  std::string Sample(PromScrape* out) {
    PromPoint p;
    const size_t b = i_;
    if (!IsNameStart(s_[i_])) return At("a metric name");
    while (i_ < s_.size() && IsNameChar(s_[i_])) ++i_;
    p.name = std::string(s_.substr(b, i_ - b));
    SkipBlanks();
    if (i_ < s_.size() && s_[i_] == '{') {
      ++i_;
      if (std::string why = Labels(&p.labels); !why.empty()) return why;
      SkipBlanks();
    }
    if (i_ >= s_.size()) return At("a value");
    const size_t value_at = i_;
    const std::string_view value = Token();
    const auto v = ParseFloat(value);
    if (!v) {
      i_ = value_at;
      return At("a number, NaN, +Inf or -Inf");
    }
    p.value = *v;
    SkipBlanks();
    if (i_ < s_.size() && s_[i_] != '#') {
      const size_t ts_at = i_;
      const auto ts = ParseInt64(Token());
      if (!ts) {
        i_ = ts_at;
        return At("a timestamp in integer milliseconds or the end of the line");
      }
      p.timestamp_ms = *ts;
      SkipBlanks();
      if (i_ < s_.size() && s_[i_] != '#') return At("the end of the line");
    }
    out->points.push_back(std::move(p));
    return "";
  }

  std::string Labels(std::map<std::string, std::string>* labels) {
    for (;;) {
      SkipBlanks();
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
        return "";
      }
      if (i_ >= s_.size() || !IsLabelStart(s_[i_])) return At("a label name or '}'");
      const size_t b = i_;
      while (i_ < s_.size() && IsLabelChar(s_[i_])) ++i_;
      std::string name(s_.substr(b, i_ - b));
      SkipBlanks();
      if (i_ >= s_.size() || s_[i_] != '=') return At("'=' after label " + name);
      ++i_;
      SkipBlanks();
      if (i_ >= s_.size() || s_[i_] != '"') return At("'\"' opening the value of " + name);
      ++i_;
      std::string value;
      for (;;) {
        if (i_ >= s_.size()) return At("'\"' closing the value of " + name);
        const char c = s_[i_++];
        if (c == '"') break;
        if (c != '\\' || i_ >= s_.size()) {
          value += c;
          continue;
        }
        const char e = s_[i_++];
        if (e == 'n') {
          value += '\n';
        } else if (e == '\\' || e == '"') {
          value += e;
        } else {
          value += '\\';
          value += e;
        }
      }
      if (labels->count(name) != 0) return "label " + name + " appears twice";
      labels->emplace(std::move(name), std::move(value));
      SkipBlanks();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
        return "";
      }
      return At("',' or '}'");
    }
  }

  std::string_view s_;
  size_t i_ = 0;
};

// ---- selectors ------------------------------------------------------------------------------

class SelectorParser {
 public:
  explicit SelectorParser(std::string_view s) : s_(s) {}

  bool AtEnd() const { return i_ >= s_.size(); }
  char Peek() const { return s_[i_]; }
  size_t pos() const { return i_; }
  void Advance() { ++i_; }
  void SkipSpace() {
    while (i_ < s_.size() && (IsBlank(s_[i_]) || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  std::string_view Take(bool (*pred)(char)) {
    const size_t b = i_;
    while (i_ < s_.size() && pred(s_[i_])) ++i_;
    return s_.substr(b, i_ - b);
  }
  Status Error(size_t at, const std::string& expected) const {
    return Status::InvalidArgument("selector \"" + Printable(s_) + "\" at column " +
                                   std::to_string(at + 1) + ": expected " + expected + ", found " +
                                   Found(s_, at));
  }
  Status ErrorAt(size_t at, const std::string& what) const {
    return Status::InvalidArgument("selector \"" + Printable(s_) + "\" at column " +
                                   std::to_string(at + 1) + ": " + what);
  }

  // A PromQL string literal at the cursor: "…" or '…' with Go escapes, or `raw`.
  Result<std::string> String() {
    const size_t open = i_;
    const char q = s_[i_++];
    std::string out;
    for (;;) {
      if (i_ >= s_.size() || (q != '`' && s_[i_] == '\n')) {
        return Error(i_, std::string("the closing ") + q + " of the string opened at column " +
                             std::to_string(open + 1));
      }
      const char c = s_[i_++];
      if (c == q) return out;
      if (c != '\\' || q == '`') {
        out += c;
        continue;
      }
      const size_t esc = i_ - 1;
      if (i_ >= s_.size()) return Error(i_, "an escaped character");
      const char e = s_[i_++];
      switch (e) {
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'x':
        case 'u':
        case 'U': {
          const int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (int k = 0; k < digits; ++k) {
            const char h = i_ < s_.size() ? Lower(s_[i_]) : '\0';
            if (!IsDigit(h) && !(h >= 'a' && h <= 'f')) {
              return Error(i_, std::to_string(digits) + " hex digits after \\" + e);
            }
            cp = cp * 16 + static_cast<uint32_t>(IsDigit(h) ? h - '0' : h - 'a' + 10);
            ++i_;
          }
          if (e == 'x') {
            out += static_cast<char>(cp);
          } else if (!AppendUtf8(cp, &out)) {
            return ErrorAt(esc, "\\" + std::string(1, e) + " names no Unicode character");
          }
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t v = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2; ++k) {
              if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '7') {
                return Error(i_, "3 octal digits after \\");
              }
              v = v * 8 + static_cast<uint32_t>(s_[i_++] - '0');
            }
            if (v > 255) return ErrorAt(esc, "octal escape above \\377");
            out += static_cast<char>(v);
            break;
          }
          return ErrorAt(esc, "unknown escape \\" + Printable(std::string_view(&e, 1)) +
                                  " (in a regex write \\\\" + Printable(std::string_view(&e, 1)) +
                                  " or quote it with `…`)");
      }
    }
  }

 private:
  static bool AppendUtf8(uint32_t cp, std::string* out) {
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    if (cp < 0x80) {
      *out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      *out += static_cast<char>(0xC0 | (cp >> 6));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      *out += static_cast<char>(0xE0 | (cp >> 12));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      *out += static_cast<char>(0xF0 | (cp >> 18));
      *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return true;
  }

  std::string_view s_;
  size_t i_ = 0;
};

std::string SeriesKey(const PromPoint& p) {
  std::string k;
  auto add = [&k](const std::string& s) {
    k += std::to_string(s.size());
    k += ':';
    k += s;
  };
  add(p.name);
  for (const auto& [name, value] : p.labels) {
    add(name);
    add(value);
  }
  return k;
}

std::string Plural(int n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// ---- HTTP -----------------------------------------------------------------------------------

// The line at `*pos` without its CRLF or LF; nullopt when no line end follows.
std::optional<std::string_view> NextLine(std::string_view s, size_t* pos) {
  const size_t nl = s.find('\n', *pos);
  if (nl == std::string_view::npos) return std::nullopt;
  std::string_view line = s.substr(*pos, nl - *pos);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  *pos = nl + 1;
  return line;
}

}  // namespace

// ---- PromScrape -----------------------------------------------------------------------------

bool PromScrape::Cumulative(std::string_view sample_name) const {
  auto informative_type = [this](std::string_view family) -> const std::string* {
    const auto it = types.find(std::string(family));
    if (it == types.end() || it->second == "untyped" || it->second == "unknown") return nullptr;
    return &it->second;
  };
  if (const std::string* t = informative_type(sample_name)) return *t == "counter";
  for (const std::string_view suffix : {"_total", "_bucket", "_count", "_sum"}) {
    if (!EndsWith(sample_name, suffix)) continue;
    const std::string* t =
        informative_type(sample_name.substr(0, sample_name.size() - suffix.size()));
    if (t == nullptr) continue;
    if (suffix == "_total" ? *t == "counter" : (*t == "histogram" || *t == "summary")) {
      return true;
    }
  }
  return EndsWith(sample_name, "_total");
}

Result<PromScrape> ParsePromText(std::string_view text, const PromTextLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return Status::InvalidArgument("exposition text of " + std::to_string(text.size()) +
                                   " bytes is over the limit of " +
                                   std::to_string(limits.max_bytes) + " bytes");
  }
  PromScrape out;
  int line_no = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::string why = LineParser(line).Parse(&out);
    if (out.points.size() > limits.max_points) {
      return Status::InvalidArgument("exposition text has more than " +
                                     std::to_string(limits.max_points) + " series (line " +
                                     std::to_string(line_no) + ")");
    }
    if (why.empty()) continue;
    if (out.skipped++ == 0) {
      out.first_skipped_line = line_no;
      out.first_skipped_reason = std::move(why);
    }
  }
  return out;
}

// ---- PromMatcher ----------------------------------------------------------------------------

Result<PromMatcher> PromMatcher::Parse(std::string_view selector) {
  SelectorParser c(selector);
  if (selector.size() > kMaxSelectorBytes) {
    return c.ErrorAt(kMaxSelectorBytes,
                     "longer than " + std::to_string(kMaxSelectorBytes) + " bytes");
  }
  PromMatcher m;
  c.SkipSpace();
  const size_t begin = c.pos();
  std::string name(c.Take(IsNameChar));
  if (!name.empty() && !IsNameStart(name.front())) return c.Error(begin, "a metric name or '{'");
  c.SkipSpace();
  if (name.empty() && (c.AtEnd() || c.Peek() != '{')) {
    return c.Error(c.pos(), "a metric name or '{'");
  }
  if (!name.empty()) m.terms_.push_back({"__name__", Term::Op::kEq, name, nullptr});
  if (!c.AtEnd() && c.Peek() == '{') {
    c.Advance();
    for (;;) {
      c.SkipSpace();
      if (c.AtEnd()) return c.Error(c.pos(), "a label name or '}'");
      if (c.Peek() == '}') {
        c.Advance();
        break;
      }
      const size_t label_at = c.pos();
      if (!IsLabelStart(c.Peek())) return c.Error(label_at, "a label name or '}'");
      Term t;
      t.label = std::string(c.Take(IsLabelChar));
      if (t.label == "__name__" && !name.empty()) {
        return c.ErrorAt(label_at, "the metric name is already given (" + name +
                                       "); match __name__ only in a selector without one");
      }
      c.SkipSpace();
      const size_t op_at = c.pos();
      std::string op;
      while (!c.AtEnd() && (c.Peek() == '=' || c.Peek() == '!' || c.Peek() == '~') &&
             op.size() < 2) {
        op += c.Peek();
        c.Advance();
      }
      if (op == "=") {
        t.op = Term::Op::kEq;
      } else if (op == "!=") {
        t.op = Term::Op::kNe;
      } else if (op == "=~") {
        t.op = Term::Op::kRe;
      } else if (op == "!~") {
        t.op = Term::Op::kNre;
      } else {
        return c.Error(op_at, "one of = != =~ !~ after label " + t.label);
      }
      c.SkipSpace();
      const size_t value_at = c.pos();
      if (c.AtEnd() || (c.Peek() != '"' && c.Peek() != '\'' && c.Peek() != '`')) {
        return c.Error(value_at, "a quoted string after " + t.label + op);
      }
      auto value = c.String();
      if (!value.ok()) return value.status();
      t.value = std::move(value).value();
      if (t.op == Term::Op::kRe || t.op == Term::Op::kNre) {
        re2::RE2::Options opts;
        opts.set_log_errors(false);
        const re2::RE2 alone(t.value, opts);
        if (!alone.ok()) {
          return c.ErrorAt(value_at,
                           "invalid regex \"" + Printable(t.value) + "\": " + alone.error());
        }
        auto re =
            std::make_shared<const re2::RE2>("(?s:" + t.value + ")", opts);  // FullMatch anchors
        if (!re->ok()) {
          return c.ErrorAt(value_at,
                           "invalid regex \"" + Printable(t.value) + "\": " + re->error());
        }
        t.re = std::move(re);
      }
      m.terms_.push_back(std::move(t));
      c.SkipSpace();
      if (!c.AtEnd() && c.Peek() == ',') {
        c.Advance();
        continue;
      }
      if (!c.AtEnd() && c.Peek() == '}') {
        c.Advance();
        break;
      }
      return c.Error(c.pos(), "',' or '}'");
    }
  }
  c.SkipSpace();
  if (!c.AtEnd()) {
    return c.Error(c.pos(), name.empty() ? "the end of the selector" : "'{' or the end");
  }
  if (name.empty() && std::all_of(m.terms_.begin(), m.terms_.end(),
                                  [](const Term& t) { return TermMatches(t, ""); })) {
    return c.ErrorAt(begin,
                     "a selector without a metric name needs a matcher that does not match the "
                     "empty string, e.g. {__name__=\"DCGM_FI_DEV_GPU_UTIL\"}");
  }
  // The name first: most points fail there, before any regex runs.
  std::stable_partition(m.terms_.begin(), m.terms_.end(), [](const Term& t) {
    return t.label == "__name__" && t.op == Term::Op::kEq;
  });
  m.text_ = std::string(Trim(selector));
  return m;
}

bool PromMatcher::TermMatches(const Term& t, std::string_view value) {
  switch (t.op) {
    case Term::Op::kEq: return value == t.value;
    case Term::Op::kNe: return value != t.value;
    case Term::Op::kRe: return re2::RE2::FullMatch(value, *t.re);
    case Term::Op::kNre: return !re2::RE2::FullMatch(value, *t.re);
  }
  return false;
}

bool PromMatcher::Matches(const PromPoint& p) const {
  for (const Term& t : terms_) {
    std::string_view value;
    if (t.label == "__name__") {
      value = p.name;
    } else if (const auto it = p.labels.find(t.label); it != p.labels.end()) {
      value = it->second;
    }
    if (!TermMatches(t, value)) return false;
  }
  return true;
}

// ---- aggregation, intervals -----------------------------------------------------------------

Result<PromAgg> ParsePromAgg(std::string_view text) {
  if (text == "mean") return PromAgg::kMean;
  if (text == "max") return PromAgg::kMax;
  if (text == "min") return PromAgg::kMin;
  if (text == "sum") return PromAgg::kSum;
  std::string hint;
  if (text == "avg" || text == "average") hint = " (\"mean\" is the average)";
  return Status::InvalidArgument("agg: \"" + Printable(text) +
                                 "\" is not one of mean, max, min, sum" + hint);
}

const char* PromAggName(PromAgg agg) {
  switch (agg) {
    case PromAgg::kMean: return "mean";
    case PromAgg::kMax: return "max";
    case PromAgg::kMin: return "min";
    case PromAgg::kSum: return "sum";
  }
  return "mean";
}

Result<int64_t> ParsePromInterval(std::string_view text) {
  const std::string shown = "every: \"" + Printable(text) + "\"";
  const std::string allowed =
      "; expected a duration such as \"5s\", \"500ms\", \"1m\" or \"1m30s\" (units h, m, s, ms, "
      "largest first), from 100ms to 1h";
  if (text.empty()) return Status::InvalidArgument("every: empty" + allowed);
  int64_t total = 0;
  int last_rank = 4;
  for (size_t i = 0; i < text.size();) {
    const size_t b = i;
    while (i < text.size() && IsDigit(text[i])) ++i;
    if (i == b) return Status::InvalidArgument(shown + " is not a duration" + allowed);
    if (i - b > 9) return Status::InvalidArgument(shown + " is out of range: allowed 100ms to 1h");
    int64_t n = 0;
    for (size_t k = b; k < i; ++k) n = n * 10 + (text[k] - '0');
    struct Unit {
      std::string_view name;
      int64_t ms;
    };
    static constexpr Unit kUnits[] = {{"ms", 1}, {"s", 1000}, {"m", 60 * 1000}, {"h", 3600 * 1000}};
    int rank = -1;
    for (int u = 0; u < 4 && rank < 0; ++u) {
      if (text.substr(i, kUnits[u].name.size()) == kUnits[u].name) rank = u;
    }
    if (rank < 0 && i < text.size() && text[i] == '.') {
      return Status::InvalidArgument(shown + " is not a duration: whole numbers only, e.g. " +
                                     "\"1500ms\" for 1.5s" + allowed);
    }
    if (rank < 0) {
      return Status::InvalidArgument(
          shown +
          (i >= text.size() ? " needs a unit"
                            : " has an unknown unit \"" + Printable(text.substr(i)) + "\"") +
          allowed);
    }
    i += kUnits[rank].name.size();
    const int64_t ms = kUnits[rank].ms;
    if (rank >= last_rank) return Status::InvalidArgument(shown + " is not a duration" + allowed);
    last_rank = rank;
    total += n * ms;
  }
  if (total < kMinPromIntervalMs || total > kMaxPromIntervalMs) {
    return Status::InvalidArgument(shown + " is out of range: allowed 100ms to 1h");
  }
  return total;
}

bool PromValueIsNa(double v) {
  constexpr double kTwo47 = 140737488355328.0;
  return !std::isfinite(v) || v >= 9223372036854775808.0 ||
         (v >= kTwo47 && v <= kTwo47 + 3 && v == std::floor(v));
}

// ---- PromSampler ----------------------------------------------------------------------------

PromSampler::Outcome PromSampler::Add(const PromScrape& scrape, int64_t at_ms) {
  Outcome o;
  std::map<std::string, Last> next;
  std::set<std::string> seen;
  std::vector<double> values;
  int matched = 0, na = 0, first = 0, resets = 0, no_time = 0;
  for (const PromPoint& p : scrape.points) {
    if (!matcher_.Matches(p)) continue;
    std::string key = SeriesKey(p);
    if (!seen.insert(key).second) continue;
    ++matched;
    const bool cumulative = scrape.Cumulative(p.name);
    const auto prev = cumulative ? last_.find(key) : last_.end();
    if (PromValueIsNa(p.value)) {
      ++na;
      if (prev != last_.end()) next.emplace(std::move(key), prev->second);
      continue;
    }
    if (!cumulative) {
      values.push_back(p.value);
      continue;
    }
    next.emplace(std::move(key), Last{p.value, at_ms});
    if (prev == last_.end()) {
      ++first;
    } else if (at_ms <= prev->second.at_ms) {
      ++no_time;
    } else if (p.value < prev->second.value) {
      ++resets;
    } else {
      const double dt_s =
          (static_cast<double>(at_ms) - static_cast<double>(prev->second.at_ms)) / 1000.0;
      const double rate = (p.value - prev->second.value) / dt_s;
      if (std::isfinite(rate)) {
        values.push_back(rate);
      } else {
        ++na;
      }
    }
  }
  last_ = std::move(next);

  if (values.empty()) {
    if (matched == 0) {
      o.why_none = scrape.points.empty() ? "the scrape holds no series"
                                         : "no series matches " + matcher_.text();
      return o;
    }
    std::vector<std::string> parts;
    if (na > 0) parts.push_back(Plural(na, "is N/A", "are N/A"));
    if (first > 0) {
      parts.push_back(Plural(first, "counter is", "counters are") +
                      " on a first scrape (a rate needs two)");
    }
    if (resets > 0) parts.push_back(Plural(resets, "counter was", "counters were") + " reset");
    if (no_time > 0) {
      parts.push_back(Plural(no_time, "counter has", "counters have") +
                      " no time since the previous scrape");
    }
    o.why_none = "no value from " + Plural(matched, "matching series", "matching series") + ": ";
    for (size_t k = 0; k < parts.size(); ++k) o.why_none += (k ? ", " : "") + parts[k];
    return o;
  }

  double v = 0;
  switch (agg_) {
    case PromAgg::kMax: v = *std::max_element(values.begin(), values.end()); break;
    case PromAgg::kMin: v = *std::min_element(values.begin(), values.end()); break;
    case PromAgg::kSum:
    case PromAgg::kMean: {
      for (double x : values) v += x;
      if (agg_ == PromAgg::kSum) break;
      const double n = static_cast<double>(values.size());
      if (std::isfinite(v)) {
        v /= n;
      } else {
        v = 0;
        for (double x : values) v += x / n;
      }
      break;
    }
  }
  if (!std::isfinite(v)) {
    o.why_none = std::string("the ") + PromAggName(agg_) + " of " +
                 Plural(static_cast<int>(values.size()), "series", "series") +
                 " is out of the range of a double";
    return o;
  }
  o.value = v;
  o.series = static_cast<int>(values.size());
  return o;
}

// ---- HTTP -----------------------------------------------------------------------------------

Result<PromUrl> ParsePromUrl(std::string_view url) {
  const std::string shown = "prometheus URL \"" + Printable(url) + "\"";
  const std::string form =
      "; expected http://host[:port][/path], e.g. http://localhost:9400/metrics";
  if (url.size() > kMaxUrlBytes) {
    return Status::InvalidArgument(shown + " is longer than " + std::to_string(kMaxUrlBytes) +
                                   " bytes");
  }
  for (size_t i = 0; i < url.size(); ++i) {
    const auto c = static_cast<unsigned char>(url[i]);
    if (c <= 0x20 || c == 0x7f) {
      return Status::InvalidArgument(shown + " has a blank or control character at column " +
                                     std::to_string(i + 1));
    }
  }
  const size_t sep = url.find("://");
  if (sep == std::string_view::npos)
    return Status::InvalidArgument(shown + " has no scheme" + form);
  const std::string scheme = ToLower(url.substr(0, sep));
  if (scheme == "https") {
    return Status::InvalidArgument(shown +
                                   ": https is not supported; the agent scrapes a local "
                                   "exporter over plain http (use http://)");
  }
  if (scheme != "http") {
    return Status::InvalidArgument(shown + ": scheme \"" + scheme + "\" is not supported" + form);
  }
  std::string_view rest = url.substr(sep + 3);
  const size_t auth_end = std::min(rest.find_first_of("/?#"), rest.size());
  const std::string_view authority = rest.substr(0, auth_end);
  std::string_view path = rest.substr(auth_end);
  if (const size_t hash = path.find('#'); hash != std::string_view::npos) {
    path = path.substr(0, hash);
  }
  if (authority.find('@') != std::string_view::npos) {
    return Status::InvalidArgument(shown + ": credentials in the URL are not supported");
  }
  PromUrl out;
  std::string_view host, port;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return Status::InvalidArgument(shown + ": IPv6 host has no closing ']'" + form);
    }
    host = authority.substr(1, close - 1);
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        return Status::InvalidArgument(shown + ": expected ':' and a port after ']'" + form);
      }
      has_port = true;
      port = after.substr(1);
    }
    const bool ok = !host.empty() && std::all_of(host.begin(), host.end(), [](char c) {
      return IsDigit(c) || (Lower(c) >= 'a' && Lower(c) <= 'f') || c == ':' || c == '.';
    });
    if (!ok) return Status::InvalidArgument(shown + ": not an IPv6 address in brackets" + form);
  } else {
    const size_t colon = authority.find(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      has_port = true;
      port = authority.substr(colon + 1);
      if (port.find(':') != std::string_view::npos) {
        return Status::InvalidArgument(shown +
                                       ": an IPv6 host goes in brackets, e.g. "
                                       "http://[::1]:9400/metrics");
      }
    }
    const bool ok = !host.empty() && std::all_of(host.begin(), host.end(), [](char c) {
      return IsAlpha(c) || IsDigit(c) || c == '-' || c == '.' || c == '_';
    });
    if (!ok) return Status::InvalidArgument(shown + " has no valid host" + form);
  }
  if (has_port) {
    const bool digits =
        !port.empty() && port.size() <= 5 && std::all_of(port.begin(), port.end(), IsDigit);
    const int n = digits ? std::stoi(std::string(port)) : 0;
    if (n < 1 || n > 65535) {
      return Status::InvalidArgument(shown + ": port \"" + Printable(port) +
                                     "\" is not a number from 1 to 65535");
    }
    out.port = n;
  }
  out.host = std::string(host);
  if (path.empty() || path.front() == '?') {
    out.path = "/metrics" + std::string(path);
  } else {
    out.path = std::string(path);
  }
  return out;
}

std::string PromHttpRequest(const PromUrl& url) {
  std::string host = url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host;
  if (url.port != 80) host += ":" + std::to_string(url.port);
  return "GET " + url.path + " HTTP/1.1\r\nHost: " + host +
         "\r\nUser-Agent: tunectl-agent\r\nAccept: text/plain;version=0.0.4\r\n"
         "Accept-Encoding: identity\r\nConnection: close\r\n\r\n";
}

Result<std::string> HttpResponseBody(std::string_view raw) {
  size_t pos = 0;
  std::map<std::string, std::vector<std::string>> headers;
  for (;;) {
    const auto status_line = NextLine(raw, &pos);
    if (!status_line) {
      return Status::InvalidArgument("HTTP response ends before its status line does (" +
                                     std::to_string(raw.size()) + " bytes)");
    }
    const std::string_view sl = *status_line;
    const bool http1 =
        sl.size() >= 12 && (sl.substr(0, 9) == "HTTP/1.0 " || sl.substr(0, 9) == "HTTP/1.1 ") &&
        IsDigit(sl[9]) && IsDigit(sl[10]) && IsDigit(sl[11]) && (sl.size() == 12 || sl[12] == ' ');
    if (!http1) {
      return Status::InvalidArgument("not an HTTP/1.x response: \"" + Printable(sl) + "\"");
    }
    const int code = (sl[9] - '0') * 100 + (sl[10] - '0') * 10 + (sl[11] - '0');
    headers.clear();
    for (;;) {
      const auto line = NextLine(raw, &pos);
      if (!line) return Status::InvalidArgument("HTTP response ends inside its headers");
      if (line->empty()) break;
      const size_t colon = line->find(':');
      if (colon == std::string_view::npos || colon == 0) {
        return Status::InvalidArgument("malformed HTTP header line \"" + Printable(*line) + "\"");
      }
      headers[ToLower(line->substr(0, colon))].push_back(ToLower(Trim(line->substr(colon + 1))));
    }
    if (code >= 100 && code < 200 && code != 101) continue;
    if (code != 200) {
      return Status::Unavailable("exporter answered \"" + Printable(sl) + "\"; expected 200");
    }
    break;
  }
  for (const std::string& ce : headers["content-encoding"]) {
    if (!ce.empty() && ce != "identity") {
      return Status::InvalidArgument("HTTP Content-Encoding \"" + Printable(ce) +
                                     "\" is not supported; the request must not ask for "
                                     "compression");
    }
  }
  bool chunked = false;
  for (const std::string& te : headers["transfer-encoding"]) {
    std::string_view codings = te;
    while (!codings.empty()) {
      const size_t comma = std::min(codings.find(','), codings.size());
      const std::string_view coding = Trim(codings.substr(0, comma));
      codings.remove_prefix(std::min(comma + 1, codings.size()));
      if (coding == "chunked") {
        chunked = true;
      } else if (!coding.empty() && coding != "identity") {
        return Status::InvalidArgument("HTTP Transfer-Encoding \"" + Printable(coding) +
                                       "\" is not supported");
      }
    }
  }
  const std::string_view rest = raw.substr(pos);
  if (chunked) {
    std::string body;
    size_t p = 0;
    for (;;) {
      const auto line = NextLine(rest, &p);
      if (!line) return Status::InvalidArgument("chunked HTTP body is truncated");
      const std::string_view size_text = Trim(line->substr(0, line->find(';')));
      size_t n = 0;
      const auto [end, ec] =
          std::from_chars(size_text.data(), size_text.data() + size_text.size(), n, 16);
      if (size_text.empty() || ec != std::errc() || end != size_text.data() + size_text.size()) {
        return Status::InvalidArgument("chunked HTTP body has a bad chunk size line \"" +
                                       Printable(*line) + "\"");
      }
      if (n == 0) break;  // trailers, if any, carry nothing we use
      if (n > rest.size() - p) return Status::InvalidArgument("chunked HTTP body is truncated");
      body.append(rest.substr(p, n));
      p += n;
      const auto crlf = NextLine(rest, &p);
      if (!crlf || !crlf->empty()) {
        return Status::InvalidArgument("chunked HTTP body: a chunk is not followed by CRLF");
      }
    }
    return body;
  }
  const auto& lengths = headers["content-length"];
  if (lengths.empty()) return std::string(rest);
  std::optional<size_t> length;
  for (const std::string& l : lengths) {
    size_t v = 0;
    const auto [end, ec] = std::from_chars(l.data(), l.data() + l.size(), v);
    if (l.empty() || ec != std::errc() || end != l.data() + l.size() || (length && v != *length)) {
      return Status::InvalidArgument("HTTP Content-Length \"" + Printable(l) + "\" is not valid");
    }
    length = v;
  }
  const size_t n = *length;
  if (rest.size() < n) {
    return Status::InvalidArgument("HTTP body is truncated: Content-Length " + std::to_string(n) +
                                   ", got " + std::to_string(rest.size()) + " bytes");
  }
  return std::string(rest.substr(0, n));
}

}  // namespace tunectl
