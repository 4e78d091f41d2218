#include "core/profile_trace.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <exception>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tunectl {
namespace {

// Timestamps and durations beyond this (in µs, ~3,170 years; Kineto's are µs since the epoch,
// ~1.7e15) are not a trace's.
constexpr double kMaxMicros = 1e17;
// A step shorter than a nanosecond has no shares to tell.
constexpr double kMinStepMicros = 1e-3;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool ContainsNoCase(std::string_view hay, std::string_view needle) {
  return Lower(hay).find(needle) != std::string::npos;
}

double Clamp100(double pct) {
  if (!(pct >= 0)) return 0;  // also NaN
  return pct > 100 ? 100 : pct;
}

struct Interval {
  double start, end;
};

// Disjoint sorted intervals with the running total of their lengths, for measuring a window.
class Union {
 public:
  Union() = default;
  explicit Union(std::vector<Interval> v) {
    std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) {
      return a.start < b.start || (a.start == b.start && a.end < b.end);
    });
    for (const auto& iv : v) {
      if (iv.end <= iv.start) continue;
      if (!starts_.empty() && iv.start <= ends_.back()) {
        ends_.back() = std::max(ends_.back(), iv.end);
      } else {
        starts_.push_back(iv.start);
        ends_.push_back(iv.end);
      }
    }
    prefix_.assign(starts_.size() + 1, 0);
    for (size_t i = 0; i < starts_.size(); ++i)
      prefix_[i + 1] = prefix_[i] + (ends_[i] - starts_[i]);
  }

  // Covered length within [s, e].
  double Measure(double s, double e) const {
    if (starts_.empty() || e <= s) return 0;
    return std::max(0.0, Below(e) - Below(s));
  }

  std::vector<Interval> Intervals() const {
    std::vector<Interval> out(starts_.size());
    for (size_t i = 0; i < starts_.size(); ++i) out[i] = {starts_[i], ends_[i]};
    return out;
  }

  // The parts covered by both.
  Union Intersect(const Union& o) const {
    std::vector<Interval> out;
    size_t i = 0, j = 0;
    while (i < starts_.size() && j < o.starts_.size()) {
      const double s = std::max(starts_[i], o.starts_[j]);
      const double e = std::min(ends_[i], o.ends_[j]);
      if (s < e) out.push_back({s, e});
      if (ends_[i] < o.ends_[j]) {
        ++i;
      } else {
        ++j;
      }
    }
    return Union(std::move(out));
  }

 private:
  // Covered length within (-inf, x].
  double Below(double x) const {
    const size_t k = std::upper_bound(starts_.begin(), starts_.end(), x) - starts_.begin();
    if (k == 0) return 0;
    return prefix_[k - 1] + (std::min(x, ends_[k - 1]) - starts_[k - 1]);
  }

  std::vector<double> starts_, ends_, prefix_;
};

Union Merge(const std::vector<const Union*>& parts) {
  std::vector<Interval> all;
  for (const Union* u : parts) {
    auto v = u->Intervals();
    all.insert(all.end(), v.begin(), v.end());
  }
  return Union(std::move(all));
}

// ---- Kineto trace events ---------------------------------------------------------------------

// A timestamp as whole µs plus a fraction: Kineto writes µs since the epoch with ns decimals
// (1701384035468921.123), which a double holds only to 0.25 µs; times are taken relative to the
// first timestamp's whole µs before they become doubles.
struct Micros {
  int64_t whole = 0;
  double frac = 0;  // same sign as whole, |frac| < 1
};

std::optional<Micros> MicrosOfDouble(double v) {
  if (!std::isfinite(v) || std::fabs(v) > kMaxMicros) return std::nullopt;
  const double w = std::trunc(v);
  return Micros{static_cast<int64_t>(w), v - w};
}

// The JSON number's own text, "-123.456" (no exponent), read exactly; otherwise via the double.
std::optional<Micros> MicrosOfLexeme(std::string_view s, double v) {
  const bool neg = !s.empty() && s.front() == '-';
  if (neg) s.remove_prefix(1);
  const size_t dot = s.find('.');
  const std::string_view whole = s.substr(0, dot);
  int64_t w = 0;
  auto [p, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), w);
  if (whole.empty() || ec != std::errc() || p != whole.data() + whole.size() ||
      s.find_first_of("eE") != std::string_view::npos || w > kMaxMicros)
    return MicrosOfDouble(v);
  double f = 0;
  if (dot != std::string_view::npos) {
    const std::string frac = "0" + std::string(s.substr(dot));
    auto [q, fec] = std::from_chars(frac.data(), frac.data() + frac.size(), f);
    if (fec != std::errc() || q != frac.data() + frac.size() || !(f < 1)) return MicrosOfDouble(v);
  }
  return neg ? Micros{-w, -f} : Micros{w, f};
}

struct RawEvent {
  std::string name, cat, ph, pid;
  Micros ts;
  double dur = 0;
  bool has_ts = false, has_dur = false, has_device = false;
  int64_t device = 0;
};

struct DeviceActivity {
  std::vector<Interval> compute, comm, mem;
};

struct Step {
  int64_t number;
  Interval span;
};

bool IsStepOrLoaderCategory(const std::string& cat) {
  return cat.empty() || cat == "cpu_op" || cat == "operator" || cat == "user_annotation";
}

enum class GpuKind { kNone, kKernel, kMem };

GpuKind GpuKindOf(const std::string& cat) {
  if (cat == "kernel") return GpuKind::kKernel;
  if (cat == "gpu_memcpy" || cat == "memcpy" || cat == "gpu_memset" || cat == "memset")
    return GpuKind::kMem;
  return GpuKind::kNone;
}

// Categories drawn on the GPU timeline that are not activity (annotations, syncs).
bool IsOtherGpuCategory(const std::string& cat) {
  return cat.rfind("gpu_", 0) == 0 || cat == "cuda_sync";
}

std::optional<int64_t> StepNumber(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  const std::string_view digits = name.substr(kPrefix.size());
  if (digits.empty()) return std::nullopt;
  int64_t n = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || p != digits.data() + digits.size() || n < 0) return std::nullopt;
  return n;
}

bool IsDataLoaderWait(std::string_view name) {
  return name.rfind("enumerate(DataLoader)", 0) == 0 &&
         name.find("DataLoaderIter.__next__") != std::string_view::npos;
}

// What the events of a trace add up to, gathered one event at a time.
struct Collected {
  std::vector<Step> steps;
  std::vector<Interval> loader, cpu_ops;
  std::map<std::string, DeviceActivity> devices;
  std::optional<int64_t> base;  // whole µs of the first timestamp; times are relative to it
  double first = 0, last = 0;
  size_t entries = 0, timed = 0, untimed = 0, bad_step_names = 0;
  bool cuda_flows = false;
};

void Collect(const RawEvent& e, Collected* c) {
  ++c->entries;
  const std::string cat = Lower(e.cat);
  if (e.ph != "X") {
    if (cat == "cpu_to_cuda") c->cuda_flows = true;
    return;
  }
  if (!e.has_ts || !e.has_dur || !std::isfinite(e.dur) || e.dur < 0 || e.dur > kMaxMicros) {
    ++c->untimed;
    return;
  }
  if (!c->base) c->base = e.ts.whole;
  const double start = static_cast<double>(e.ts.whole - *c->base) + e.ts.frac;
  const Interval iv{start, start + e.dur};
  if (c->timed++ == 0) {
    c->first = iv.start;
    c->last = iv.end;
  } else {
    c->first = std::min(c->first, iv.start);
    c->last = std::max(c->last, iv.end);
  }
  if (const GpuKind kind = GpuKindOf(cat); kind != GpuKind::kNone) {
    auto& dev = c->devices[e.has_device ? "device " + std::to_string(e.device) : "pid " + e.pid];
    if (kind == GpuKind::kMem) {
      dev.mem.push_back(iv);
    } else if (ContainsNoCase(e.name, "nccl")) {
      dev.comm.push_back(iv);
    } else {
      dev.compute.push_back(iv);
    }
    return;
  }
  if (IsOtherGpuCategory(cat)) return;
  if (IsStepOrLoaderCategory(cat)) {
    if (e.name.rfind("ProfilerStep#", 0) == 0) {
      if (auto n = StepNumber(e.name)) {
        c->steps.push_back({*n, iv});
      } else {
        ++c->bad_step_names;
      }
      return;
    }
    if (IsDataLoaderWait(e.name)) {
      c->loader.push_back(iv);
      return;
    }
  }
  if (cat.empty() || cat == "cpu_op" || cat == "operator") c->cpu_ops.push_back(iv);
}

// SAX handler keeping only the event fields the summary needs: memory stays proportional to the
// events' intervals, not to the JSON.
class TraceSax {
 public:
  explicit TraceSax(Collected* out) : out_(out) {}

  bool null() { return Scalar(Value{}); }
  bool boolean(bool) { return Scalar(Value{}); }
  bool number_integer(nlohmann::json::number_integer_t v) {
    return Scalar(Value{.kind = Value::kNumber, .number = static_cast<double>(v), .integer = v});
  }
  bool number_unsigned(nlohmann::json::number_unsigned_t v) {
    const bool fits = v <= static_cast<uint64_t>(INT64_MAX);
    return Scalar(Value{.kind = fits ? Value::kNumber : Value::kFloat,
                        .number = static_cast<double>(v),
                        .integer = fits ? static_cast<int64_t>(v) : 0});
  }
  bool number_float(nlohmann::json::number_float_t v, const std::string& lexeme) {
    return Scalar(Value{.kind = Value::kFloat, .number = v, .lexeme = &lexeme});
  }
  bool string(std::string& s) { return Scalar(Value{.kind = Value::kString, .text = &s}); }
  bool binary(nlohmann::json::binary_t&) { return Scalar(Value{}); }

  bool start_object(size_t) {
    Role role = Role::kSkip;
    if (stack_.empty()) {
      role = Role::kTop;
    } else if (stack_.back() == Role::kTop) {
      if (key_ == "traceEvents") events_not_array_ = true;
    } else if (stack_.back() == Role::kEvents) {
      event_ = RawEvent{};
      role = Role::kEvent;
    } else if (stack_.back() == Role::kEvent && key_ == "args") {
      role = Role::kArgs;
    }
    stack_.push_back(role);
    return true;
  }
  bool end_object() {
    if (stack_.back() == Role::kEvent) Collect(event_, out_);
    stack_.pop_back();
    return true;
  }
  bool start_array(size_t) {
    Role role = Role::kSkip;
    if (stack_.empty() || (stack_.back() == Role::kTop && key_ == "traceEvents")) {
      role = Role::kEvents;
      found_events_ = true;
    } else if (stack_.back() == Role::kEvents) {
      ++out_->entries;
    }
    stack_.push_back(role);
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  bool key(std::string& k) {
    const Role r = stack_.back();
    if (r == Role::kTop || r == Role::kEvent || r == Role::kArgs) key_ = k;
    return true;
  }
  bool parse_error(size_t position, const std::string&, const nlohmann::json::exception& ex) {
    error_ = "not JSON at byte " + std::to_string(position) + ": " + ex.what();
    return false;
  }

  bool found_events() const { return found_events_; }
  bool events_not_array() const { return events_not_array_; }
  const std::string& error() const { return error_; }

 private:
  enum class Role { kTop, kEvents, kEvent, kArgs, kSkip };
  struct Value {
    enum Kind { kOther, kNumber, kFloat, kString } kind = kOther;
    double number = 0;
    int64_t integer = 0;
    const std::string* text = nullptr;
    const std::string* lexeme = nullptr;  // a float's text as written
  };

  bool Scalar(const Value& v) {
    if (stack_.empty()) return true;
    switch (stack_.back()) {
      case Role::kTop:
        if (key_ == "traceEvents") events_not_array_ = true;
        break;
      case Role::kEvents: ++out_->entries; break;
      case Role::kEvent: EventField(v); break;
      case Role::kArgs:
        if (key_ == "device" && v.kind == Value::kNumber) {
          event_.has_device = true;
          event_.device = v.integer;
        }
        break;
      case Role::kSkip: break;
    }
    return true;
  }

  void EventField(const Value& v) {
    const bool number = v.kind == Value::kNumber || v.kind == Value::kFloat;
    if (v.kind == Value::kString) {
      if (key_ == "name") event_.name = *v.text;
      if (key_ == "cat") event_.cat = *v.text;
      if (key_ == "ph") event_.ph = *v.text;
      if (key_ == "pid") event_.pid = "\"" + *v.text + "\"";
    } else if (number) {
      if (key_ == "ts") {
        std::optional<Micros> ts;
        if (v.kind == Value::kNumber) {
          constexpr auto kMax = static_cast<int64_t>(kMaxMicros);
          if (v.integer >= -kMax && v.integer <= kMax) ts = Micros{v.integer, 0};
        } else {
          ts = v.lexeme ? MicrosOfLexeme(*v.lexeme, v.number) : MicrosOfDouble(v.number);
        }
        event_.has_ts = ts.has_value();
        if (ts) event_.ts = *ts;
      }
      if (key_ == "dur") event_.dur = v.number, event_.has_dur = true;
      if (key_ == "pid")
        event_.pid =
            v.kind == Value::kNumber ? std::to_string(v.integer) : std::to_string(v.number);
    }
  }

  Collected* out_;
  std::vector<Role> stack_;
  std::string key_;
  RawEvent event_;
  bool found_events_ = false, events_not_array_ = false;
  std::string error_;
};

struct DeviceUnions {
  Union compute, comm, mem, all, hidden;
};

// Sums over one step (or all steps) of the per-device means, in µs.
struct StepTimes {
  double wall = 0, kernel = 0, comm = 0, mem = 0, busy = 0, hidden = 0, comm_pooled = 0;
  double loader = 0, cpu_ops = 0;
};

StepShares Shares(int64_t step, const StepTimes& t, bool has_gpu) {
  StepShares s;
  s.step = step;
  s.wall_ms = t.wall / 1000;
  const auto pct = [&](double x) { return Clamp100(100 * x / t.wall); };
  if (has_gpu) {
    s.kernel_pct = pct(t.kernel);
    s.comm_pct = pct(t.comm);
    s.memcpy_pct = pct(t.mem);
    s.idle_pct = Clamp100(100 - pct(t.busy));
    if (t.comm_pooled > 0) s.comm_overlap_pct = Clamp100(100 * t.hidden / t.comm_pooled);
  }
  s.dataloader_pct = pct(t.loader);
  s.cpu_op_pct = pct(t.cpu_ops);
  return s;
}

Result<TraceSummary> Summarize(Collected c) {
  TraceSummary out;
  out.source = "torch";
  out.events = c.entries;
  if (c.timed == 0)
    return Status::InvalidArgument(
        "the trace has no timed events (complete events, ph \"X\", with ts and dur): nothing to "
        "summarise");
  if (c.untimed > 0)
    out.warnings.push_back(std::to_string(c.untimed) +
                           " complete events skipped: ts or dur missing, negative or out of range");
  if (c.bad_step_names > 0)
    out.warnings.push_back(std::to_string(c.bad_step_names) +
                           " ProfilerStep events skipped: no step number after '#'");

  std::vector<Step> steps;
  size_t empty_steps = 0;
  for (const auto& s : c.steps) {
    if (s.span.end - s.span.start >= kMinStepMicros) {
      steps.push_back(s);
    } else {
      ++empty_steps;
    }
  }
  if (empty_steps > 0)
    out.warnings.push_back(std::to_string(empty_steps) +
                           " ProfilerStep events shorter than 1 ns skipped");
  std::stable_sort(steps.begin(), steps.end(),
                   [](const Step& a, const Step& b) { return a.span.start < b.span.start; });
  if (steps.empty()) {
    if (!(c.last - c.first >= kMinStepMicros))
      return Status::InvalidArgument(
          "the trace spans no time (under 1 ns from its first event's start to its last's end)");
    out.pseudo_step = true;
    steps.push_back({-1, {c.first, c.last}});
    out.warnings.push_back("no ProfilerStep#N events: one pseudo-step spans the whole trace");
  }

  std::vector<DeviceUnions> devices;
  for (auto& [key, d] : c.devices) {
    DeviceUnions u;
    u.compute = Union(std::move(d.compute));
    u.comm = Union(std::move(d.comm));
    u.mem = Union(std::move(d.mem));
    u.all = Merge({&u.compute, &u.comm, &u.mem});
    u.hidden = u.comm.Intersect(u.compute);
    devices.push_back(std::move(u));
  }
  c.devices.clear();
  out.has_gpu = !devices.empty();
  out.gpu_devices = static_cast<int>(devices.size());
  if (devices.size() > 1)
    out.warnings.push_back(std::to_string(devices.size()) +
                           " GPU devices: GPU shares are means over the devices");
  if (!out.has_gpu && c.cuda_flows)
    out.warnings.push_back(
        "CPU-to-CUDA launches but no GPU activity in the trace (the legacy profiler exports no "
        "kernels): GPU shares unknown");
  const Union loader(std::move(c.loader));
  const Union cpu_ops(std::move(c.cpu_ops));

  StepTimes total;
  const double n = devices.empty() ? 1 : static_cast<double>(devices.size());
  for (const auto& step : steps) {
    const double s = step.span.start, e = step.span.end;
    StepTimes t;
    t.wall = e - s;
    for (const auto& d : devices) {
      t.kernel += d.compute.Measure(s, e) / n;
      t.comm += d.comm.Measure(s, e) / n;
      t.mem += d.mem.Measure(s, e) / n;
      t.busy += d.all.Measure(s, e) / n;
      t.hidden += d.hidden.Measure(s, e);
      t.comm_pooled += d.comm.Measure(s, e);
    }
    t.loader = loader.Measure(s, e);
    t.cpu_ops = cpu_ops.Measure(s, e);
    out.steps.push_back(Shares(step.number, t, out.has_gpu));
    total.wall += t.wall;
    total.kernel += t.kernel;
    total.comm += t.comm;
    total.mem += t.mem;
    total.busy += t.busy;
    total.hidden += t.hidden;
    total.comm_pooled += t.comm_pooled;
    total.loader += t.loader;
    total.cpu_ops += t.cpu_ops;
  }
  out.total = Shares(-1, total, out.has_gpu);
  if (out.has_gpu) out.gpu_time = GpuTime{total.kernel / 1000, total.comm / 1000, total.mem / 1000};
  return out;
}

// ---- nsys stats CSV ---------------------------------------------------------------------------

// RFC 4180 records: quoted fields may hold commas, quotes ("") and line breaks; a record ends at
// \n, \r\n or \r.
std::vector<std::vector<std::string>> CsvRecords(std::string_view text) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> rec;
  std::string field;
  bool quoted = false, any = false;
  const auto end_record = [&] {
    rec.push_back(std::move(field));
    field.clear();
    if (rec.size() == 1 && rec[0].empty() && !any) rec.clear();  // a blank line
    records.push_back(std::move(rec));
    rec.clear();
    any = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quoted) {
      if (ch != '"') {
        field += ch;
      } else if (i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else {
        quoted = false;
      }
    } else if (ch == '"') {
      quoted = any = true;
    } else if (ch == ',') {
      rec.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (ch == '\n' || ch == '\r') {
      if (ch == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      end_record();
    } else {
      field += ch;
      any = true;
    }
  }
  if (any || !field.empty()) end_record();
  return records;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// "Total Time (ns)" -> "totaltime(ns)": the spellings of nsys versions differ in case and spaces.
std::string HeaderKey(std::string_view s) {
  std::string out;
  for (char ch : Lower(Trim(s)))
    if (ch != ' ') out += ch;
  return out;
}

std::optional<double> ParseNumber(std::string_view s) {
  s = Trim(s);
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v))
    return std::nullopt;
  return v;
}

struct NsysRow {
  std::string name;
  double total_ns = 0;
};

struct NsysTable {
  std::vector<NsysRow> rows;
  size_t skipped = 0;
  std::string skipped_note;  // nsys' own "SKIPPED: ..." line when it made no table
};

Result<NsysTable> ReadNsysTable(std::string_view csv, std::string_view report,
                                std::string_view name_column) {
  NsysTable table;
  const auto records = CsvRecords(csv);
  size_t header = records.size();
  int total_col = -1, name_col = -1;
  for (size_t r = 0; r < records.size() && header == records.size(); ++r) {
    bool known = false;
    int t = -1, n = -1;
    for (size_t i = 0; i < records[r].size(); ++i) {
      const std::string k = HeaderKey(records[r][i]);
      if (k == "totaltime(ns)" || k == "totaltime") t = static_cast<int>(i);
      if (k == HeaderKey(name_column)) n = static_cast<int>(i);
      if (t == static_cast<int>(i) || n == static_cast<int>(i) || k == "time(%)" ||
          k == "instances" || k == "count" || k == "operations")
        known = true;
    }
    if (!known) {
      if (!records[r].empty() && Trim(records[r][0]).rfind("SKIPPED:", 0) == 0)
        table.skipped_note = std::string(Trim(records[r][0]));
      continue;
    }
    header = r;
    total_col = t;
    name_col = n;
  }
  if (header == records.size()) {
    if (!table.skipped_note.empty()) return table;
    return Status::InvalidArgument(std::string(report) +
                                   ": no CSV header with the columns 'Total Time (ns)' and '" +
                                   std::string(name_column) + "' (run nsys stats --format csv)");
  }
  const auto missing = [&](std::string_view column) {
    std::string got;
    for (const auto& f : records[header]) got += (got.empty() ? "" : ", ") + std::string(Trim(f));
    return Status::InvalidArgument(std::string(report) + ": no column '" + std::string(column) +
                                   "' in the header (" + got + ")");
  };
  if (total_col < 0) return missing("Total Time (ns)");
  if (name_col < 0) return missing(name_column);
  const size_t need = static_cast<size_t>(std::max(total_col, name_col)) + 1;
  for (size_t r = header + 1; r < records.size(); ++r) {
    const auto& rec = records[r];
    if (rec.empty()) break;  // the table ends at a blank line
    const auto total = rec.size() >= need ? ParseNumber(rec[total_col]) : std::nullopt;
    if (!total || *total < 0) {
      ++table.skipped;
      continue;
    }
    table.rows.push_back({rec[name_col], *total});
  }
  return table;
}

bool Blank(std::string_view s) {
  return s.find_first_not_of(" \t\r\n") == std::string::npos;
}

Result<TraceSummary> NsysSummary(std::string_view kern_csv, std::string_view mem_csv,
                                 std::optional<double> wall_ms) {
  if (wall_ms && !(std::isfinite(*wall_ms) && *wall_ms > 0))
    return Status::InvalidArgument("nsys wall time must be a positive number of ms, got " +
                                   std::to_string(*wall_ms));
  if (Blank(kern_csv) && Blank(mem_csv))
    return Status::InvalidArgument(
        "no nsys report: both the kernel summary (cuda_gpu_kern_sum) and the memory summary "
        "(cuda_gpu_mem_time_sum) are empty");
  TraceSummary out;
  out.source = "nsys";
  GpuTime time;
  size_t rows = 0;
  const struct {
    std::string_view csv, report, column;
    bool kernels;
  } reports[] = {{kern_csv, "nsys kernel summary (cuda_gpu_kern_sum)", "Name", true},
                 {mem_csv, "nsys memory summary (cuda_gpu_mem_time_sum)", "Operation", false}};
  for (const auto& rep : reports) {
    if (Blank(rep.csv)) {
      out.warnings.push_back(std::string(rep.report) + ": empty");
      continue;
    }
    auto table = ReadNsysTable(rep.csv, rep.report, rep.column);
    if (!table.ok()) return table.status();
    if (!table->skipped_note.empty() && table->rows.empty())
      out.warnings.push_back(std::string(rep.report) + ": " + table->skipped_note);
    if (table->skipped > 0)
      out.warnings.push_back(std::string(rep.report) + ": " + std::to_string(table->skipped) +
                             " rows without a numeric Total Time skipped");
    for (const auto& row : table->rows) {
      const double ms = row.total_ns / 1e6;
      if (!rep.kernels) {
        time.memcpy_ms += ms;
      } else if (ContainsNoCase(row.name, "nccl")) {
        time.comm_ms += ms;
      } else {
        time.kernel_ms += ms;
      }
    }
    rows += table->rows.size();
  }
  out.events = rows;
  out.has_gpu = rows > 0;
  out.total.wall_ms = wall_ms.value_or(0);
  if (!out.has_gpu) return out;
  if (!std::isfinite(time.kernel_ms + time.comm_ms + time.memcpy_ms))
    return Status::InvalidArgument("nsys reports: total times too large to add up");
  out.gpu_time = time;
  if (wall_ms) {
    const double w = *wall_ms;
    const double sum = time.kernel_ms + time.comm_ms + time.memcpy_ms;
    out.total.kernel_pct = Clamp100(100 * time.kernel_ms / w);
    out.total.comm_pct = Clamp100(100 * time.comm_ms / w);
    out.total.memcpy_pct = Clamp100(100 * time.memcpy_ms / w);
    out.total.idle_pct = Clamp100(100 - 100 * sum / w);
    if (sum > w)
      out.warnings.push_back(
          "the reports' times add up to more than the wall time (concurrent kernels and copies "
          "are summed, not unioned): shares capped at 100");
  }
  return out;
}

}  // namespace

Result<TraceSummary> SummarizeKinetoTrace(std::string_view json) {
  try {
    Collected collected;
    TraceSax sax(&collected);
    const bool parsed = nlohmann::json::sax_parse(json.begin(), json.end(), &sax);
    if (!parsed)
      return Status::InvalidArgument("profiler trace: " +
                                     (sax.error().empty() ? "not JSON" : sax.error()));
    if (!sax.found_events())
      return Status::InvalidArgument(
          sax.events_not_array() ? "profiler trace: traceEvents is not an array"
                                 : "profiler trace: no traceEvents array (expected a Chrome trace: "
                                   "{\"traceEvents\": [...]} or a top-level array of events)");
    return Summarize(std::move(collected));
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("profiler trace: ") + e.what());
  } catch (const std::exception& e) {
    return Status::Internal(std::string("profiler trace: ") + e.what());
  }
}

Result<TraceSummary> SummarizeNsysStats(std::string_view kern_csv, std::string_view mem_csv,
                                        std::optional<double> wall_ms) {
  try {
    return NsysSummary(kern_csv, mem_csv, wall_ms);
  } catch (const std::exception& e) {
    return Status::Internal(std::string("nsys reports: ") + e.what());
  }
}

}  // namespace tunectl
