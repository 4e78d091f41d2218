// The `--vary` parsers on arbitrary arguments: the input, split at newlines, is the list of
// --vary arguments given to `experiment run` (ParseVary against a realistic workload and a
// baseline config that is not all defaults) and to `batch create` (ExpandBatchVary, then each
// single through ParseVary). A change they accept must be one the server can run: canonical values
// that differ from the baseline's, one variable (a parameter or one coupled group), and a config
// that still binds into a launch.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/decisions.h"
#include "core/experiment.h"
#include "core/spec.h"
#include "core/template.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace tunectl;

constexpr std::string_view kWorkload = R"(
name: pretrain-gpt
command: ["torchrun", "pretrain_gpt.py", "--micro-batch-size", "{micro_batch_size}",
          "--global-batch-size", "{global_batch_size}", "--lr", "{lr}", "--{precision}",
          "--recompute-granularity", "{recompute}", "--use-flash-attn={flash}"]
env: {NCCL_ALGO: "{nccl_algo}", CUDA_DEVICE_MAX_CONNECTIONS: "1"}
files: {"ds_config.json": '{"train_micro_batch_size_per_gpu": {micro_batch_size}}'}
params:
  micro_batch_size:  {type: int, default: 2, min: 1, max: 64}
  global_batch_size: {type: int, default: 256, min: 1, max: 65536}
  grad_accum_steps:  {type: int, default: 16, min: 1, max: 1024}
  lr:                {type: float, default: 0.0003, min: 0, max: 1}
  precision:         {type: enum, values: [fp16, bf16, fp32], default: bf16}
  recompute:         {type: enum, values: [full, selective], default: selective}
  flash:             {type: bool, default: true}
  nccl_algo:         {type: string, default: Ring}
coupled: [[micro_batch_size, grad_accum_steps]]
metrics:
  step_time_ms: {pattern: 'elapsed time per iteration \(ms\): (?P<value>[0-9.]+)', better: lower,
                 role: primary, min_effect: 0.02}
  lm_loss:      {pattern: 'lm loss: (?P<value>[0-9.E+-]+)', better: lower, role: guardrail,
                 tolerance: 0.01}
run: {repeats: 5, warmup_steps: 10}
)";

const WorkloadSpec& Spec() {
  static const WorkloadSpec spec = [] {
    auto s = ParseWorkloadSpec(kWorkload, "vary_fuzz");
    FUZZ_CHECK(s.ok(), s.status().message().c_str());
    return *s;
  }();
  return spec;
}

// The baseline's config: v3 of the workload, two parameters frozen away from their defaults.
const ParamValues& Base() {
  static const ParamValues base = [] {
    ParamValues b = DefaultParamValues(Spec());
    b["micro_batch_size"] = "4";
    b["grad_accum_steps"] = "8";
    return b;
  }();
  return base;
}

void CheckAccepted(const Change& c) {
  const WorkloadSpec& spec = Spec();
  FUZZ_CHECK(!c.to.empty() && c.to.size() == c.from.size(), "a change names what it changes");
  FUZZ_CHECK(c.coupled == (c.to.size() > 1), "more than one parameter only as a coupled group");
  ParamValues config = Base();
  for (const auto& [name, value] : c.to) {
    const ParamSpec* p = spec.FindParam(name);
    FUZZ_CHECK(p != nullptr, "only declared parameters change");
    auto canon = CanonicalParamValue(*p, value);
    FUZZ_CHECK(canon.ok() && *canon == value, "new values are canonical");
    FUZZ_CHECK(c.from.at(name) == Base().at(name), "from is the baseline's value");
    FUZZ_CHECK(value != c.from.at(name), "a change changes something");
    config[name] = value;
  }
  FUZZ_CHECK(BindLaunch(spec, config).ok(), "the variant config binds into a launch");
  FUZZ_CHECK(!c.Describe().empty() && !c.Params().empty(), "a change describes itself");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args;
  for (size_t start = 0; start <= in.size();) {
    size_t nl = in.find('\n', start);
    if (nl == std::string_view::npos) nl = in.size();
    args.emplace_back(in.substr(start, nl - start));
    start = nl + 1;
  }

  if (auto c = ParseVary(Spec(), Base(), args); c.ok()) CheckAccepted(*c);

  if (auto singles = ExpandBatchVary(args); singles.ok()) {
    for (const auto& one : *singles) {
      FUZZ_CHECK(one.find(',') == std::string::npos, "a batch member varies one value");
      if (auto c = ParseVary(Spec(), Base(), {one}); c.ok()) {
        FUZZ_CHECK(!c->coupled, "one NAME=VALUE is one parameter");
        CheckAccepted(*c);
      }
    }
  }
  return 0;
}
