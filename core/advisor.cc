#include "core/advisor.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "core/text.h"

namespace tunectl {
namespace {

// Thresholds (docs/advisor.md gives each one's source).
constexpr double kDataWaitPct = 10;         // data_pipeline: data wait share of the step
constexpr double kCommPct = 20;             // communication: exposed collective share
constexpr double kKernelPct = 70;           // kernel_efficiency: kernel share of the step …
constexpr double kMfuPct = 40;              // … with MFU below this
constexpr double kMemoryPct = 90;           // memory_pressure: device memory in use
constexpr double kGpuUtilPct = 70;          // cpu_overhead: GPU utilisation below this
constexpr double kMicroBatchRoomPct = 80;   // cpu_overhead doubles the micro batch only below this
constexpr double kMaxSharePct = 95;         // the expected-size arithmetic caps a share here
constexpr int64_t kVocabDivisibleBy = 128;  // Megatron-LM's --make-vocab-size-divisible-by default

// ---- text -------------------------------------------------------------------------------------

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// A measured value: one decimal from 1 up, three significant digits below.
std::string Num(double v) {
  char buf[64];
  if (v == 0 || std::fabs(v) >= 1)
    std::snprintf(buf, sizeof buf, "%.1f", v);
  else
    std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string Pct(double v) {
  return Fixed(v, 1) + " %";
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool Contains(std::string_view name, std::string_view part) {
  return Lower(name).find(part) != std::string::npos;
}

bool IsWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// `text` names the field `field` as a whole identifier (DCGM_FI_DEV_FB_USED is not
// DCGM_FI_DEV_FB_USED_PERCENT).
bool NamesField(std::string_view text, std::string_view field) {
  for (size_t pos = text.find(field); pos != std::string_view::npos;
       pos = text.find(field, pos + 1)) {
    const bool left = pos == 0 || !IsWordChar(text[pos - 1]);
    const size_t end = pos + field.size();
    const bool right = end == text.size() || !IsWordChar(text[end]);
    if (left && right) return true;
  }
  return false;
}

// A word the shell passes through as is, quoted only when it has to be.
std::string ShellWord(std::string_view text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return IsWordChar(c) || std::string_view("=.,:/+-@%").find(c) != std::string_view::npos;
  });
  return plain ? std::string(text) : ShellQuote(text);
}

std::string JoinWith(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::optional<int64_t> ParseInt(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> ParseDouble(std::string_view s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v))
    return std::nullopt;
  return v;
}

// ---- figures ----------------------------------------------------------------------------------

// One median read for a figure: which metric, and how to name it in evidence.
struct Reading {
  std::string label;  // "step_time_ms" or "t (megatron iter_ms)"
  double value = 0;
  const MetricSpec* metric = nullptr;  // nullptr for profile_* samples
};

// A figure: its value and the text saying how it was read.
struct Figure {
  double value = 0;
  std::string text;  // "data_wait_ms 9.8 ms / step_time_ms 15.9 ms = 61.6 % of the step"
};

std::optional<double> Median(const AdvisorInput& in, const std::string& name) {
  auto it = in.medians.find(name);
  if (it == in.medians.end() || !std::isfinite(it->second)) return std::nullopt;
  return it->second;
}

// The median under `name` (a declared metric or a profile_* sample), or of a declared parser
// metric whose field is `name`. A declared metric named `name` that reads another parser field is
// that field, not `name`.
std::optional<Reading> Named(const AdvisorInput& in, std::string_view name) {
  const std::string key(name);
  const MetricSpec* m = in.spec.FindMetric(name);
  if (!(m && !m->parser.empty() && m->field != key))
    if (auto v = Median(in, key)) return Reading{key, *v, m};
  for (const auto& d : in.spec.metrics) {
    if (d.parser.empty() || d.field != key || d.name == key) continue;
    if (auto v = Median(in, d.name))
      return Reading{d.name + " (" + d.parser + " " + key + ")", *v, &d};
  }
  return std::nullopt;
}

std::optional<Reading> FirstNamed(const AdvisorInput& in,
                                  std::initializer_list<std::string_view> names) {
  for (auto n : names)
    if (auto r = Named(in, n)) return r;
  return std::nullopt;
}

// The median of a declared Prometheus metric whose selector names a DCGM field.
std::optional<Reading> Dcgm(const AdvisorInput& in, std::string_view field) {
  for (const auto& d : in.spec.metrics) {
    if (d.prometheus.empty() || !NamesField(d.match, field)) continue;
    if (auto v = Median(in, d.name))
      return Reading{d.name + " (" + std::string(field) + ")", *v, &d};
  }
  return std::nullopt;
}

// DeepSpeed's step_ms is its optimizer step, not the iteration: not a step time.
std::optional<Figure> StepTime(const AdvisorInput& in) {
  if (auto r = FirstNamed(
          in, {"step_time_ms", "iter_ms", "iteration_ms", "iteration_time_ms", "profile_step_ms"});
      r && r->value > 0)
    return Figure{r->value, r->label + " " + Num(r->value) + " ms"};
  if (auto r = Named(in, "iter_s"); r && r->value > 0)
    return Figure{r->value * 1000, r->label + " " + Num(r->value) + " s"};
  return std::nullopt;
}

// A share of the step: read as a percent, or as a time over the step time.
struct ShareLookup {
  std::optional<Figure> share;    // percent of the step
  std::string time_without_step;  // a time metric was found but no step time to divide it by
};

// A time `t` (ms) as a share of the step. When it exceeds the step time, the step time is read as
// excluding it: t / (step + t).
Figure TimeShare(const Reading& t, const Figure& step, std::string_view what) {
  if (t.value <= step.value)
    return Figure{100 * std::max(0.0, t.value) / step.value,
                  t.label + " " + Num(t.value) + " ms of " + step.text};
  return Figure{100 * t.value / (step.value + t.value),
                t.label + " " + Num(t.value) + " ms exceeds " + step.text +
                    ", so the step time is read as excluding " + std::string(what) +
                    ": share = time / (step + time)"};
}

ShareLookup ShareOrTime(const AdvisorInput& in, std::initializer_list<std::string_view> pct_names,
                        std::initializer_list<std::string_view> ms_names,
                        const std::optional<Figure>& step, std::string_view what) {
  ShareLookup out;
  if (auto r = FirstNamed(in, pct_names)) {
    out.share = Figure{std::clamp(r->value, 0.0, 100.0), r->label + " " + Pct(r->value)};
    return out;
  }
  if (auto r = FirstNamed(in, ms_names)) {
    if (step)
      out.share = TimeShare(*r, *step, what);
    else
      out.time_without_step = r->label;
  }
  return out;
}

ShareLookup DataShare(const AdvisorInput& in, const std::optional<Figure>& step) {
  return ShareOrTime(in, {"data_wait_pct", "dataloader_pct", "profile_dataloader_pct"},
                     {"data_wait_ms", "dataloader_ms", "data_ms", "data_time_ms"}, step,
                     "the wait");
}

// Exposed (not overlapped) communication share. A share metric is reduced by the profiler's
// overlap when it is known; a wall-clock time of the collective is exposed time already.
ShareLookup CommShare(const AdvisorInput& in, const std::optional<Figure>& step) {
  ShareLookup out =
      ShareOrTime(in, {"comm_pct", "profile_comm_pct"}, {}, step, "the communication");
  if (out.share) {
    if (auto ov = Named(in, "profile_comm_overlap_pct")) {
      const double overlap = std::clamp(ov->value, 0.0, 100.0);
      const double raw = out.share->value;
      out.share->value = raw * (1 - overlap / 100);
      out.share->text += " with " + ov->label + " " + Pct(overlap) +
                         " hidden under compute: " + Pct(out.share->value) + " exposed";
    } else {
      out.share->text += ", overlap with compute unknown (read as all exposed)";
    }
    return out;
  }
  return ShareOrTime(in, {}, {"allreduce_ms", "all_reduce_ms", "comm_ms", "bwd_allreduce_ms"}, step,
                     "the communication");
}

std::optional<Figure> KernelShare(const AdvisorInput& in) {
  if (auto r = FirstNamed(in, {"kernel_pct", "profile_kernel_pct"}))
    return Figure{std::clamp(r->value, 0.0, 100.0), r->label + " " + Pct(r->value)};
  if (auto r = Dcgm(in, "DCGM_FI_PROF_SM_ACTIVE")) {
    const double pct = r->value <= 1 ? r->value * 100 : r->value;
    return Figure{std::clamp(pct, 0.0, 100.0),
                  r->label + " " + Num(r->value) + " (SM active " + Pct(pct) + ")"};
  }
  return std::nullopt;
}

std::optional<Figure> Mfu(const AdvisorInput& in) {
  auto r = FirstNamed(in, {"mfu", "mfu_pct", "train_device_mfu"});
  if (!r) return std::nullopt;
  // Percent when its unit says so or its name ends in _pct; otherwise a value up to 1 is a
  // fraction.
  const bool percent =
      (r->metric && r->metric->unit == "%") || Contains(r->label, "pct") || r->value > 1.0;
  if (percent) return Figure{r->value, r->label + " " + Pct(r->value)};
  return Figure{r->value * 100,
                r->label + " " + Num(r->value) + " (a fraction: " + Pct(r->value * 100) + ")"};
}

std::optional<Figure> GpuUtil(const AdvisorInput& in) {
  if (auto r = FirstNamed(in, {"gpu_util", "gpu_util_pct"}))
    return Figure{std::clamp(r->value, 0.0, 100.0), r->label + " " + Pct(r->value)};
  if (auto r = Dcgm(in, "DCGM_FI_DEV_GPU_UTIL"))
    return Figure{std::clamp(r->value, 0.0, 100.0), r->label + " " + Pct(r->value)};
  if (auto r = Named(in, "profile_idle_pct")) {
    const double util = std::clamp(100 - r->value, 0.0, 100.0);
    return Figure{util, "100 - " + r->label + " " + Pct(r->value) + " = " + Pct(util) + " busy"};
  }
  return std::nullopt;
}

struct MemoryLookup {
  std::optional<Figure> share;
  std::string used_without_capacity;  // a used-memory metric was found, no capacity param
};

MemoryLookup MemoryShare(const AdvisorInput& in) {
  MemoryLookup out;
  if (auto r = FirstNamed(in, {"mem_used_pct", "gpu_mem_pct", "memory_pct"})) {
    out.share = Figure{std::clamp(r->value, 0.0, 100.0), r->label + " " + Pct(r->value)};
    return out;
  }
  auto used_fb = Dcgm(in, "DCGM_FI_DEV_FB_USED");
  if (auto free_fb = Dcgm(in, "DCGM_FI_DEV_FB_FREE"); used_fb && free_fb) {
    const double total = used_fb->value + free_fb->value;
    if (total > 0) {
      out.share = Figure{100 * used_fb->value / total,
                         used_fb->label + " " + Num(used_fb->value) + " MiB of " + Num(total) +
                             " MiB (with " + free_fb->label + " " + Num(free_fb->value) + " MiB)"};
      return out;
    }
  }
  // A used-memory figure in MiB over the device's capacity declared as a param (GiB).
  std::optional<Reading> used;
  bool gib = false;
  if (auto r =
          FirstNamed(in, {"mem_max_reserved_mb", "mem_max_allocated_mb", "mem_device_used_mb"})) {
    used = r;
  } else if (auto g = FirstNamed(in, {"max_mem_allocated_gib", "memory_max_mem_allocated_gib",
                                      "memory_device_mem_reserved_gib", "memory_gib"})) {
    used = g;
    gib = true;
  } else if (used_fb) {
    used = used_fb;
  }
  if (!used) return out;
  const double mib = gib ? used->value * 1024 : used->value;
  for (const char* cap_name : {"gpu_memory_gib", "gpu_mem_gb"}) {
    const ParamSpec* p = in.spec.FindParam(cap_name);
    if (!p) continue;
    auto it = in.params.find(p->name);
    auto cap = ParseDouble(it != in.params.end() ? it->second : p->default_value);
    if (!cap || *cap <= 0) continue;
    out.share = Figure{100 * mib / (*cap * 1024), used->label + " " + Num(used->value) +
                                                      (gib ? " GiB" : " MiB") + " of " + p->name +
                                                      " " + Num(*cap) + " GiB"};
    return out;
  }
  out.used_without_capacity = used->label;
  return out;
}

// ---- params -----------------------------------------------------------------------------------

std::string ValueOf(const AdvisorInput& in, const ParamSpec& p) {
  auto it = in.params.find(p.name);
  return it != in.params.end() ? it->second : p.default_value;
}

std::vector<const ParamSpec*> ParamsWith(const WorkloadSpec& spec,
                                         std::initializer_list<std::string_view> parts) {
  std::vector<const ParamSpec*> out;
  for (const auto& p : spec.params)
    for (auto part : parts)
      if (Contains(p.name, part)) {
        out.push_back(&p);
        break;
      }
  return out;
}

// What one attempt at a change gave: the change, or why there is none.
struct Attempt {
  std::optional<SuggestedChange> change;
  std::string skipped;  // "num_workers is already at its max 64"
};

Attempt Make(const ParamSpec& p, const std::string& current, const std::string& raw,
             const std::string& why) {
  auto canon = CanonicalParamValue(p, raw);
  if (!canon.ok())
    return {std::nullopt,
            p.name + " " + raw + " is not allowed (" + canon.status().message() + ")"};
  if (*canon == current) return {std::nullopt, p.name + " is already " + current};
  return {SuggestedChange{p.name, *canon, why}, ""};
}

std::string FormatNumber(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : Num(v);
}

// An int or float param doubled (an int at least +1), clamped to its max.
Attempt Doubled(const AdvisorInput& in, const ParamSpec& p, const std::string& why_prefix) {
  const std::string cur = ValueOf(in, p);
  if (p.type == ParamType::kInt) {
    auto v = ParseInt(cur);
    if (!v) return {std::nullopt, p.name + " " + cur + " is not an integer"};
    int64_t next = std::max(*v * 2, *v + 1);
    if (p.max) next = std::min<int64_t>(next, static_cast<int64_t>(std::floor(*p.max)));
    if (next <= *v) return {std::nullopt, p.name + " is already at its max " + cur};
    const bool clamped = next != std::max(*v * 2, *v + 1);
    return Make(p, cur, std::to_string(next),
                why_prefix + " (" + cur + " -> " + std::to_string(next) +
                    (clamped ? ", clamped to its max" : "") + ")");
  }
  if (p.type == ParamType::kFloat) {
    auto v = ParseDouble(cur);
    if (!v || *v <= 0) return {std::nullopt, p.name + " " + cur + " is not a positive number"};
    double next = *v * 2;
    if (p.max) next = std::min(next, *p.max);
    if (next <= *v) return {std::nullopt, p.name + " is already at its max " + cur};
    const std::string text = FormatNumber(next);
    auto a = Make(p, cur, text, "");
    if (a.change)
      a.change->why = why_prefix + " (" + cur + " -> " + a.change->value +
                      (next != *v * 2 ? ", clamped to its max" : "") + ")";
    return a;
  }
  return {std::nullopt, p.name + " is a " + std::string(ParamTypeName(p.type)) +
                            " param; only an int or float one is doubled"};
}

// An int param halved, at least max(1, min).
Attempt Halved(const AdvisorInput& in, const ParamSpec& p, const std::string& why_prefix) {
  const std::string cur = ValueOf(in, p);
  if (p.type != ParamType::kInt)
    return {std::nullopt, p.name + " is not an int param; only an int one is halved"};
  auto v = ParseInt(cur);
  if (!v) return {std::nullopt, p.name + " " + cur + " is not an integer"};
  int64_t floor = 1;
  if (p.min) floor = std::max<int64_t>(floor, static_cast<int64_t>(std::ceil(*p.min)));
  const int64_t next = std::max(*v / 2, floor);
  if (next >= *v) return {std::nullopt, p.name + " is already at its least " + cur};
  return Make(p, cur, std::to_string(next),
              why_prefix + " (" + cur + " -> " + std::to_string(next) + ")");
}

// A bool param switched to `target`.
Attempt SetBool(const AdvisorInput& in, const ParamSpec& p, bool target, const std::string& why) {
  const std::string cur = ValueOf(in, p);
  const std::string want = target ? "true" : "false";
  if (p.type != ParamType::kBool) return {std::nullopt, p.name + " is not a bool param"};
  if (cur == want) return {std::nullopt, p.name + " is already " + cur};
  return Make(p, cur, want, why + " (" + cur + " -> " + want + ")");
}

// Collects changes in order, and what was declared but gave none.
struct Changes {
  std::vector<SuggestedChange> list;
  std::vector<std::string> skipped;
  void Add(const Attempt& a) {
    if (a.change) {
      for (const auto& c : list)
        if (c.param == a.change->param) return;  // one change per param
      list.push_back(*a.change);
    } else if (!a.skipped.empty()) {
      skipped.push_back(a.skipped);
    }
  }
};

bool IsMicroBatch(const ParamSpec& p) {
  const std::string n = Lower(p.name);
  return n == "mbs" || n == "micro_batch_size" || n.find("micro_batch_size") != std::string::npos ||
         n.find("per_device_train_batch_size") != std::string::npos;
}

// ---- the advice's expected size and command ----------------------------------------------------

// The primary metric's move if `share_pct` of the step went entirely: a rate (higher better)
// rises by up to 1/(1-s)-1, a time (lower better) falls by up to s. The expectation is half that
// bound, at least 1 %.
void SetGain(Advice& a, const MetricSpec* primary, double share_pct, const std::string& condition) {
  if (!primary) {
    a.expected = "the workload has no metric to expect a change of";
    return;
  }
  const double s = std::clamp(share_pct, 0.0, kMaxSharePct) / 100;
  const bool higher = primary->better == Better::kHigher;
  const double bound = higher ? (1 / (1 - s) - 1) * 100 : s * 100;
  const long long half = std::max(1LL, std::llround(bound / 2));
  const std::string sign = higher ? "+" : "-";
  a.direction = higher ? 1 : -1;
  a.expect_arg = primary->name + " " + sign + std::to_string(half) + "%";
  a.expected = primary->name + " " + sign + Fixed(bound, 0) + "% at most, " + condition + " (" +
               Fixed(share_pct, 1) + " % of the step" +
               (share_pct > kMaxSharePct ? ", counted as 95 %" : "") + "); expected " + sign +
               std::to_string(half) + "%, half that bound";
}

// `changes` from the collected attempts, else what the workload could declare.
void SetChanges(Advice& a, Changes c, const std::vector<std::string>& undeclared) {
  a.changes = std::move(c.list);
  if (!a.changes.empty()) return;
  std::vector<std::string> parts = c.skipped;
  if (!undeclared.empty()) parts.push_back("declare " + JoinWith(undeclared, " / ") + " as params");
  a.missing_params = parts.empty() ? "no declared param to vary" : JoinWith(parts, "; ");
}

// ---- rules ------------------------------------------------------------------------------------

Advice DataPipeline(const AdvisorInput& in, const Figure& data) {
  Advice a;
  a.rule = "data_pipeline";
  a.score = data.value;
  a.bottleneck =
      "the data pipeline: the step waits " + Fixed(data.value, 0) + " % of its time for data";
  a.evidence.push_back("data wait " + Pct(data.value) + " of the step (threshold " +
                       Fixed(kDataWaitPct, 0) + " %): " + data.text);
  Changes c;
  std::vector<std::string> undeclared;
  auto workers = ParamsWith(in.spec, {"workers"});
  std::optional<int64_t> worker_count;
  for (const auto* p : workers) {
    if (!worker_count && p->type == ParamType::kInt) worker_count = ParseInt(ValueOf(in, *p));
    c.Add(
        Doubled(in, *p, "twice the loader worker processes, so batches are prepared in parallel"));
  }
  if (workers.empty()) undeclared.push_back("num_workers");
  auto prefetch = ParamsWith(in.spec, {"prefetch"});
  for (const auto* p : prefetch)
    c.Add(Doubled(
        in, *p,
        std::string("twice the batches each worker loads ahead") +
            (worker_count && *worker_count == 0 ? " (takes effect with workers > 0)" : "")));
  if (prefetch.empty()) undeclared.push_back("prefetch_factor");
  auto pin = ParamsWith(in.spec, {"pin_mem"});
  for (const auto* p : pin)
    c.Add(SetBool(in, *p, true,
                  "page-locked host batches: faster, asynchronous host-to-device copies"));
  if (pin.empty()) undeclared.push_back("pin_memory");
  SetChanges(a, std::move(c), undeclared);
  SetGain(a, in.spec.PrimaryMetric(), data.value, "if loading fully overlapped compute");
  return a;
}

std::string BucketWhy(const ParamSpec& p) {
  const std::string n = Lower(p.name);
  std::string what = "a larger gradient bucket";
  if (n.find("bucket_cap") != std::string::npos)
    what = "DDP's bucket_cap_mb: larger all-reduce buckets";
  else if (n.find("reduce_bucket") != std::string::npos)
    what = "DeepSpeed's reduce_bucket_size: more elements reduced at once";
  else if (n.find("allgather_bucket") != std::string::npos)
    what = "DeepSpeed's allgather_bucket_size: more elements gathered at once";
  return what +
         " — fewer, larger collectives (less per-call latency; too large delays the first "
         "one and overlaps less)";
}

Advice Communication(const AdvisorInput& in, const Figure& comm) {
  Advice a;
  a.rule = "communication";
  a.score = comm.value;
  a.bottleneck = "communication: " + Fixed(comm.value, 0) +
                 " % of the step is collective time not hidden under compute";
  a.evidence.push_back("exposed communication " + Pct(comm.value) + " of the step (threshold " +
                       Fixed(kCommPct, 0) + " %): " + comm.text);
  Changes c;
  std::vector<std::string> undeclared;
  auto buckets = ParamsWith(in.spec, {"bucket"});
  for (const auto* p : buckets) c.Add(Doubled(in, *p, BucketWhy(*p)));
  if (buckets.empty())
    undeclared.push_back("bucket_cap_mb (DDP) or reduce_bucket_size (DeepSpeed)");
  auto overlaps = ParamsWith(in.spec, {"overlap"});
  for (const auto* p : overlaps)
    c.Add(SetBool(in, *p, true,
                  "overlap the collective with compute (e.g. Megatron-LM's "
                  "overlap_grad_reduce, DeepSpeed's overlap_comm)"));
  if (overlaps.empty()) undeclared.push_back("overlap_grad_reduce / overlap_comm");
  bool any_nccl = false;
  std::vector<std::string> nccl_mentions;
  for (const auto& p : in.spec.params) {
    if (Lower(p.name).rfind("nccl", 0) != 0) continue;
    any_nccl = true;
    const std::string cur = ValueOf(in, p);
    if (p.type == ParamType::kBool) {
      const bool now = cur == "true";
      c.Add(SetBool(in, p, !now, "an NCCL setting worth one experiment"));
    } else if (p.type == ParamType::kEnum && p.values.size() >= 2) {
      auto it = std::find(p.values.begin(), p.values.end(), cur);
      const size_t i = it == p.values.end()
                           ? 0
                           : (static_cast<size_t>(it - p.values.begin()) + 1) % p.values.size();
      c.Add(Make(p, cur, p.values[i],
                 "an NCCL setting worth one experiment: its next value (" + cur + " -> " +
                     p.values[i] + ")"));
    } else {
      nccl_mentions.push_back(p.name + " (" + cur + ")");
    }
  }
  if (!nccl_mentions.empty())
    a.evidence.push_back("declared NCCL settings without a suggested value: " +
                         JoinWith(nccl_mentions, ", ") + " — worth a sweep of their own");
  if (!any_nccl) undeclared.push_back("nccl_* settings (NCCL_ALGO, NCCL_BUFFSIZE …)");
  auto accum = ParamsWith(in.spec, {"grad_accum", "gradient_accumulation"});
  for (const auto* p : accum)
    c.Add(
        Doubled(in, *p,
                "twice the micro-batches per optimizer step: one gradient all-reduce serves twice "
                "the samples; the global batch doubles, which changes the optimisation "
                "(learning rate, convergence) — watch the loss guardrail"));
  if (accum.empty()) undeclared.push_back("gradient_accumulation_steps");
  SetChanges(a, std::move(c), undeclared);
  SetGain(a, in.spec.PrimaryMetric(), comm.value,
          "if the exposed communication were fully hidden under compute");
  return a;
}

// An integer model dimension declared as a param (the first of `names`), at its baseline value.
struct Dim {
  std::string name;
  int64_t value = 0;
};

std::optional<Dim> DimParam(const AdvisorInput& in, std::initializer_list<std::string_view> names) {
  for (auto n : names)
    if (const ParamSpec* p = in.spec.FindParam(n))
      if (auto v = ParseInt(ValueOf(in, *p)); v && *v > 0) return Dim{p->name, *v};
  return std::nullopt;
}

int64_t NextMultiple(int64_t n, int64_t m) {
  return (n + m - 1) / m * m;
}

// "hidden_size 5120 is a multiple of 64 (fine)" and the other two cases. `remedy` words the fix
// of a dimension that is not a multiple of 64; "" gives "the next multiple of 64 is N".
std::string AlignmentLine(const std::string& subject, int64_t n, const std::string& remedy) {
  const int align = TensorCoreAlignment(n);
  if (align == 64) return subject + " is a multiple of 64 (fine)";
  const std::string fix =
      remedy.empty() ? "the next multiple of 64 is " + std::to_string(NextMultiple(n, 64)) : remedy;
  if (align == 8)
    return subject +
           " is a multiple of 8 but not of 64: Tensor Cores run it, with less efficient tiles "
           "than at a multiple of 64; " +
           fix;
  return subject + " is not a multiple of 8: fp16/bf16 Tensor Core matmuls pad or fall back; " +
         fix;
}

// The divisibility evidence on the model's matmul dimensions; `misaligned` says whether any
// dimension is not a multiple of 64.
std::vector<std::string> DivisibilityEvidence(const AdvisorInput& in, bool* misaligned) {
  std::vector<std::string> ev;
  *misaligned = false;
  auto note = [&](const std::string& subject, int64_t n, const std::string& remedy = "") {
    if (TensorCoreAlignment(n) != 64) *misaligned = true;
    ev.push_back(AlignmentLine(subject, n, remedy));
  };
  auto pad_vocab = [](int64_t n) {
    return "pad it to " + std::to_string(NextMultiple(n, 64)) + " (the next multiple of 64)";
  };
  auto hidden = DimParam(in, {"hidden_size"});
  auto ffn = DimParam(in, {"ffn_hidden_size", "intermediate_size"});
  auto vocab = DimParam(in, {"vocab_size", "padded_vocab_size"});
  auto heads = DimParam(in, {"num_attention_heads"});
  auto tp = DimParam(in, {"tensor_model_parallel_size", "tp", "tp_size"});
  if (!hidden && !ffn && !vocab) {
    ev.push_back(
        "no matmul dimension is declared as a param (hidden_size, ffn_hidden_size / "
        "intermediate_size, vocab_size / padded_vocab_size, num_attention_heads): Tensor Core "
        "alignment not checked");
    return ev;
  }
  auto subject = [](const Dim& d) { return d.name + " " + std::to_string(d.value); };
  if (hidden) note(subject(*hidden), hidden->value);
  if (ffn) note(subject(*ffn), ffn->value);
  // The vocabulary as the model uses it: Megatron-LM pads it to a multiple of
  // make_vocab_size_divisible_by × tp.
  std::optional<Dim> vocab_used = vocab;
  if (vocab) {
    const ParamSpec* div = nullptr;
    for (const auto* p : ParamsWith(in.spec, {"divisible"}))
      if (Contains(p->name, "vocab")) div = p;
    auto d = div ? ParseInt(ValueOf(in, *div)) : std::nullopt;
    const int64_t t = tp && tp->value > 1 ? tp->value : 1;
    if (d && *d > 0 && vocab->name == "vocab_size") {
      const int64_t padded = NextMultiple(vocab->value, *d * t);
      const std::string via = " (a multiple of " + div->name + " " + std::to_string(*d) +
                              (t > 1 ? " × tp " + std::to_string(t) : "") + ")";
      if (padded != vocab->value) {
        ev.push_back("Megatron-LM pads vocab_size " + std::to_string(vocab->value) + " to " +
                     std::to_string(padded) + via);
        vocab_used = Dim{"padded vocab", padded};
      }
      note(vocab_used->name + " " + std::to_string(padded), padded, pad_vocab(padded));
    } else {
      note(subject(*vocab), vocab->value, pad_vocab(vocab->value));
    }
  }
  if (hidden && heads) {
    if (hidden->value % heads->value == 0) {
      const int64_t hd = hidden->value / heads->value;
      note("head dim " + std::to_string(hd) + " (" + subject(*hidden) + " / " + subject(*heads) +
               ")",
           hd);
    } else {
      *misaligned = true;
      ev.push_back(subject(*hidden) + " does not divide by " + subject(*heads) +
                   ": the heads have no whole head dim");
    }
  }
  if (tp && tp->value > 1) {
    const std::string by = " / " + subject(*tp);
    auto shard = [&](const Dim& d, bool is_vocab) {
      const int64_t unit = 64 * tp->value;
      const std::string remedy =
          is_vocab ? "pad the vocabulary to " + std::to_string(NextMultiple(d.value, unit)) +
                         " (the next multiple of 64 × tp = " + std::to_string(unit) + ")"
                   : "";
      if (d.value % tp->value != 0) {
        *misaligned = true;
        ev.push_back(d.name + " " + std::to_string(d.value) + " does not divide by " +
                     subject(*tp) + ": no even per-GPU shard");
        return;
      }
      const int64_t per = d.value / tp->value;
      note(d.name + " " + std::to_string(d.value) + by + " = " + std::to_string(per) + " per GPU",
           per, remedy);
    };
    if (hidden) shard(*hidden, false);
    if (ffn) shard(*ffn, false);
    if (vocab_used) shard(*vocab_used, true);
    if (heads) {
      if (heads->value % tp->value == 0)
        ev.push_back(subject(*heads) + by + " = " + std::to_string(heads->value / tp->value) +
                     " heads per GPU (fine)");
      else {
        *misaligned = true;
        ev.push_back(subject(*heads) + " does not divide by " + subject(*tp) +
                     ": Megatron-LM requires whole heads per GPU");
      }
    }
  }
  if (*misaligned)
    ev.push_back(
        "hidden, FFN and vocabulary sizes are the model's shape: changing them changes the model, "
        "so they are not suggested here");
  return ev;
}

Advice KernelEfficiency(const AdvisorInput& in, const Figure& kernel, const Figure& mfu) {
  Advice a;
  a.rule = "kernel_efficiency";
  const double slack = kernel.value * std::clamp(1 - mfu.value / kMfuPct, 0.0, 1.0);
  a.score = slack;
  a.bottleneck = "kernel efficiency: compute kernels run " + Fixed(kernel.value, 0) +
                 " % of the step at " + Fixed(mfu.value, 0) + " % MFU";
  a.evidence.push_back("kernels " + Pct(kernel.value) + " of the step (threshold " +
                       Fixed(kKernelPct, 0) + " %) at MFU " + Pct(mfu.value) + " (threshold " +
                       Fixed(kMfuPct, 0) + " %): " + kernel.text + "; " + mfu.text);
  bool misaligned = false;
  for (auto& line : DivisibilityEvidence(in, &misaligned)) a.evidence.push_back(std::move(line));
  Changes c;
  std::vector<std::string> undeclared;
  auto divisible = ParamsWith(in.spec, {"divisible"});
  for (const auto* p : divisible) {
    if (p->type != ParamType::kInt) continue;
    const std::string cur = ValueOf(in, *p);
    auto v = ParseInt(cur);
    if (v && *v < kVocabDivisibleBy)
      c.Add(Make(*p, cur, std::to_string(kVocabDivisibleBy),
                 "pad the vocabulary to a multiple of 128 (× tp), so the embedding and output "
                 "matmuls are multiples of 64 — Megatron-LM's default (" +
                     cur + " -> 128)"));
  }
  if (divisible.empty()) undeclared.push_back("make_vocab_size_divisible_by");
  auto fused = ParamsWith(in.spec, {"fused", "fusion"});
  for (const auto* p : fused)
    if (p->type == ParamType::kBool)
      c.Add(SetBool(in, *p, true, "a fused kernel: fewer launches and memory round trips"));
  if (fused.empty()) undeclared.push_back("a fused-kernel switch (e.g. bias_gelu_fusion)");
  auto compile = ParamsWith(in.spec, {"compile"});
  for (const auto* p : compile)
    if (p->type == ParamType::kBool)
      c.Add(SetBool(in, *p, true, "torch.compile: fuses elementwise kernels"));
  if (compile.empty()) undeclared.push_back("torch_compile");
  auto cudnn = ParamsWith(in.spec, {"cudnn_benchmark"});
  for (const auto* p : cudnn)
    c.Add(SetBool(in, *p, true, "cuDNN autotunes its convolution algorithms per input shape"));
  if (cudnn.empty()) undeclared.push_back("cudnn_benchmark");
  SetChanges(a, std::move(c), undeclared);
  SetGain(a, in.spec.PrimaryMetric(), slack,
          "if the kernels reached " + Fixed(kMfuPct, 0) + " % MFU");
  return a;
}

Advice MemoryPressure(const AdvisorInput& in, const Figure& mem) {
  Advice a;
  a.rule = "memory_pressure";
  a.score = 0;  // it holds no step time of its own: a risk, ranked after what does
  a.bottleneck = "memory pressure: " + Fixed(mem.value, 0) + " % of the device's memory is in use";
  a.evidence.push_back("memory " + Pct(mem.value) + " of the device (threshold " +
                       Fixed(kMemoryPct, 0) + " %): " + mem.text);
  Changes c;
  std::vector<std::string> undeclared;
  bool any_recompute = false;
  for (const auto* p : ParamsWith(in.spec, {"checkpoint", "recompute"})) {
    const std::string n = Lower(p->name);
    bool is_saving = false;
    for (const char* w : {"save", "dir", "path", "interval", "every", "freq", "load"})
      if (n.find(w) != std::string::npos) is_saving = true;
    if (is_saving) continue;
    if (p->type == ParamType::kBool) {
      any_recompute = true;
      c.Add(SetBool(in, *p, true,
                    "activation recomputation: keeps fewer activations, re-runs parts of the "
                    "forward pass in the backward pass"));
    } else if (p->type == ParamType::kEnum) {
      auto has = [&](const char* v) {
        return std::find(p->values.begin(), p->values.end(), v) != p->values.end();
      };
      if (!has("selective") && !has("full")) continue;
      any_recompute = true;
      const std::string cur = ValueOf(in, *p);
      std::string next;
      if (cur != "selective" && cur != "full")
        next = has("selective") ? "selective" : "full";
      else if (cur == "selective" && has("full"))
        next = "full";
      if (next.empty()) {
        c.skipped.push_back(p->name + " is already " + cur);
        continue;
      }
      c.Add(Make(*p, cur, next,
                 "stronger activation recomputation (" + cur + " -> " + next +
                     "): selective recomputes the attention core only, full each layer"));
    }
  }
  if (!any_recompute) undeclared.push_back("activation_checkpointing / recompute_granularity");
  bool any_mbs = false;
  for (const auto& p : in.spec.params)
    if (IsMicroBatch(p)) {
      any_mbs = true;
      c.Add(Halved(in, p, "half the micro batch: activations shrink in proportion"));
    }
  if (!any_mbs) undeclared.push_back("micro_batch_size");
  SetChanges(a, std::move(c), undeclared);
  a.direction = 0;
  if (const MetricSpec* primary = in.spec.PrimaryMetric()) {
    a.expect_arg = primary->name + " unchanged";
    a.expected = primary->name +
                 " unchanged at best, likely a little worse: recomputation costs compute (full "
                 "recomputation about a third more per step, selective a few percent) and a "
                 "smaller micro batch runs less efficiently; the point is headroom — no OOM, and "
                 "room for a larger batch or a longer sequence";
  } else {
    a.expected = "the workload has no metric to expect a change of";
  }
  return a;
}

Advice CpuOverhead(const AdvisorInput& in, const Figure& util, const Figure& data,
                   const std::optional<Figure>& mem) {
  Advice a;
  a.rule = "cpu_overhead";
  const double unexplained = std::max(0.0, 100 - util.value - data.value);
  a.score = unexplained;
  a.bottleneck = "CPU overhead: the GPU is busy " + Fixed(util.value, 0) +
                 " % of the time and data waits explain only " + Fixed(data.value, 0) +
                 " % of the step";
  a.evidence.push_back("GPU utilisation " + Pct(util.value) + " (threshold " +
                       Fixed(kGpuUtilPct, 0) + " %) with data wait " + Pct(data.value) +
                       " (below " + Fixed(kDataWaitPct, 0) + " %): " + util.text + "; " +
                       data.text);
  Changes c;
  std::vector<std::string> undeclared;
  auto graphs = ParamsWith(in.spec, {"cuda_graph", "cudagraph", "compile"});
  for (const auto* p : graphs)
    if (p->type == ParamType::kBool)
      c.Add(SetBool(in, *p, true,
                    Contains(p->name, "compile")
                        ? "torch.compile: fewer, fused kernels and less Python per step"
                        : "CUDA graphs: the step's kernels launched as one graph, without "
                          "per-kernel CPU launch cost"));
  if (graphs.empty()) undeclared.push_back("cuda_graphs / torch_compile");
  bool any_mbs = false;
  for (const auto& p : in.spec.params) {
    if (!IsMicroBatch(p)) continue;
    any_mbs = true;
    if (mem && mem->value >= kMicroBatchRoomPct) {
      c.skipped.push_back(p.name + " not doubled: memory is " + Pct(mem->value) + " in use");
      continue;
    }
    c.Add(Doubled(in, p,
                  std::string("twice the micro batch: the same CPU work per step feeds twice the "
                              "GPU work") +
                      (mem ? "" : "; memory use is not measured, so watch for OOM")));
  }
  if (!any_mbs) undeclared.push_back("micro_batch_size");
  SetChanges(a, std::move(c), undeclared);
  SetGain(a, in.spec.PrimaryMetric(), unexplained,
          "if the GPU's idle time not explained by data waits were filled");
  return a;
}

// ---- what each rule needs ---------------------------------------------------------------------

const char* kNeedsStep =
    "a step time: a metric step_time_ms / iter_ms (parser: megatron or nanogpt) / iter_s "
    "(deepspeed pipeline), or `profile: torch` (profile_step_ms)";
const char* kNeedsData =
    "a data-loader wait figure: a metric data_wait_ms (with step_time_ms) or data_wait_pct, or "
    "`profile: torch` (profile_dataloader_pct)";
const char* kNeedsComm =
    "a communication figure: a metric comm_pct, or allreduce_ms / comm_ms / bwd_allreduce_ms "
    "(parser: deepspeed with wall_clock_breakdown) with a step time, or `profile: torch` on a GPU "
    "(profile_comm_pct, profile_comm_overlap_pct)";
const char* kNeedsKernel =
    "a GPU kernel share: a metric kernel_pct, `profile: torch` on a GPU (profile_kernel_pct), or a "
    "`prometheus: dcgm` metric matching DCGM_FI_PROF_SM_ACTIVE";
const char* kNeedsMfu =
    "an MFU figure: a metric mfu / mfu_pct (parser: torchtitan or nanogpt), train_device_mfu "
    "(parser: lightning_csv), or an expr: metric over peak_tflops (docs/derived_metrics.md)";
const char* kNeedsMemory =
    "a memory share: a metric mem_used_pct / gpu_mem_pct, `prometheus: dcgm` metrics matching "
    "DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_FB_FREE, or a peak-memory metric (mem_max_reserved_mb "
    "from parser: megatron, max_mem_allocated_gib from parser: deepspeed) with a param "
    "gpu_memory_gib giving the device's memory";
const char* kNeedsUtil =
    "a GPU utilisation figure: a metric gpu_util, a `prometheus: dcgm` metric matching "
    "DCGM_FI_DEV_GPU_UTIL, or `profile: torch` on a GPU (profile_idle_pct)";

std::string NeedsShare(const ShareLookup& s, const char* needs) {
  if (!s.time_without_step.empty())
    return std::string(kNeedsStep) + ", to divide " + s.time_without_step + " by";
  return needs;
}

}  // namespace

AdvisorReport Advise(const AdvisorInput& in) {
  AdvisorReport out;
  const std::optional<Figure> step = StepTime(in);
  const ShareLookup data = DataShare(in, step);
  const ShareLookup comm = CommShare(in, step);
  const std::optional<Figure> kernel = KernelShare(in);
  const std::optional<Figure> mfu = Mfu(in);
  const std::optional<Figure> util = GpuUtil(in);
  const MemoryLookup mem = MemoryShare(in);

  // 1. data_pipeline
  if (!data.share) {
    out.not_checked.push_back({"data_pipeline", NeedsShare(data, kNeedsData)});
  } else if (data.share->value >= kDataWaitPct) {
    out.advice.push_back(DataPipeline(in, *data.share));
  } else {
    out.checked_fine.push_back("data pipeline: data wait " + Pct(data.share->value) +
                               " of the step (threshold " + Fixed(kDataWaitPct, 0) +
                               " %): " + data.share->text);
  }
  // 2. communication
  if (!comm.share) {
    out.not_checked.push_back({"communication", NeedsShare(comm, kNeedsComm)});
  } else if (comm.share->value >= kCommPct) {
    out.advice.push_back(Communication(in, *comm.share));
  } else {
    out.checked_fine.push_back("communication: exposed " + Pct(comm.share->value) +
                               " of the step (threshold " + Fixed(kCommPct, 0) +
                               " %): " + comm.share->text);
  }
  // 3. kernel_efficiency
  if (!kernel) {
    out.not_checked.push_back(
        {"kernel_efficiency",
         std::string(kNeedsKernel) + (mfu ? "" : "; and " + std::string(kNeedsMfu))});
  } else if (kernel->value < kKernelPct) {
    out.checked_fine.push_back("kernel efficiency: kernels " + Pct(kernel->value) +
                               " of the step (threshold " + Fixed(kKernelPct, 0) +
                               " %), not kernel-bound: " + kernel->text);
  } else if (!mfu) {
    out.not_checked.push_back(
        {"kernel_efficiency", "kernels run " + Pct(kernel->value) + " of the step; " + kNeedsMfu});
  } else if (mfu->value < kMfuPct) {
    out.advice.push_back(KernelEfficiency(in, *kernel, *mfu));
  } else {
    out.checked_fine.push_back("kernel efficiency: kernels " + Pct(kernel->value) +
                               " of the step at MFU " + Pct(mfu->value) + " (threshold " +
                               Fixed(kMfuPct, 0) + " %): " + mfu->text);
  }
  // 4. memory_pressure
  if (!mem.share) {
    out.not_checked.push_back(
        {"memory_pressure", mem.used_without_capacity.empty()
                                ? std::string(kNeedsMemory)
                                : "the device's memory: a param gpu_memory_gib (GiB) to divide " +
                                      mem.used_without_capacity + " by"});
  } else if (mem.share->value >= kMemoryPct) {
    out.advice.push_back(MemoryPressure(in, *mem.share));
  } else {
    out.checked_fine.push_back("memory pressure: " + Pct(mem.share->value) +
                               " of the device in use (threshold " + Fixed(kMemoryPct, 0) +
                               " %): " + mem.share->text);
  }
  // 5. cpu_overhead
  if (!util || !data.share) {
    std::vector<std::string> needs;
    if (!util) needs.push_back(kNeedsUtil);
    if (!data.share)
      needs.push_back("to tell CPU overhead from data waits, " + NeedsShare(data, kNeedsData));
    out.not_checked.push_back({"cpu_overhead", JoinWith(needs, "; and ")});
  } else if (util->value >= kGpuUtilPct) {
    out.checked_fine.push_back("cpu overhead: GPU utilisation " + Pct(util->value) +
                               " (threshold " + Fixed(kGpuUtilPct, 0) + " %): " + util->text);
  } else if (data.share->value >= kDataWaitPct) {
    out.checked_fine.push_back("cpu overhead: GPU utilisation " + Pct(util->value) +
                               " is low, but data waits take " + Pct(data.share->value) +
                               " of the step: the data pipeline comes first");
  } else {
    out.advice.push_back(CpuOverhead(in, *util, *data.share, mem.share));
  }

  // Rank: score, higher first; ties keep rule order.
  std::stable_sort(out.advice.begin(), out.advice.end(),
                   [](const Advice& a, const Advice& b) { return a.score > b.score; });
  for (auto& a : out.advice) a.command = HypothesisCommand(a, in.workload_flag);
  return out;
}

std::string HypothesisCommand(const Advice& a, const std::string& workload_flag) {
  if (a.changes.empty() || a.expect_arg.empty()) return "";
  std::string cmd = "tunectl hypothesis create";
  if (!workload_flag.empty()) cmd += " " + workload_flag;
  cmd += " --param " + ShellWord(a.changes.front().param + "=" + a.changes.front().value);
  cmd += " --expect " + ShellQuote(a.expect_arg);
  cmd += " --statement " + ShellQuote(a.bottleneck);
  if (!a.evidence.empty()) cmd += " --evidence " + ShellQuote(a.evidence.front());
  return cmd;
}

int TensorCoreAlignment(long long n) {
  if (n != 0 && n % 64 == 0) return 64;
  if (n != 0 && n % 8 == 0) return 8;
  return 0;
}

}  // namespace tunectl
