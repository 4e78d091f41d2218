// MetricExtractor (what the agent runs on every line a job prints) over arbitrary output, split
// into lines at '\n', with the rules of real trainers: Megatron-LM, DeepSpeed, the HuggingFace
// Trainer as JSON, the demo's own, and skip rules with and without a step. Never a crash, a hang
// or undefined behaviour; every sample names one of the rules, and a skip mark has value 1.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/metrics.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace tunectl;

const std::vector<MetricRule>& Rules() {
  static const std::vector<MetricRule> rules = {
      {"samples_per_s", R"(samples/s: (?P<value>[0-9.]+))", ""},
      {"step_time_ms",
       R"(iteration\s+(?P<step>\d+)/\s*\d+ \|.*elapsed time per iteration \(ms\): (?P<value>[0-9.]+))",
       ""},
      {"tflops", R"(throughput per GPU \(TFLOP/s/GPU\): ([0-9.]+))", ""},
      {"lm_loss", R"(lm loss: (?P<value>[0-9.E+-]+))", ""},
      {"ds_samples_per_s",
       R"(global_step=(?P<step>\d+), RunningAvgSamplesPerSec=(?P<value>[0-9.eE+-]+))", ""},
      {"pipe_samples_per_s", R"(steps: (?P<step>-?\d+) .*samples/sec: ([0-9,.]+))", ""},
      {"loss", "", "loss"},
      {"grad_norm", "", "grad_norm"},
      {"skip:checkpoint", R"(saving checkpoint at iteration\s+(?P<step>\d+))", ""},
      {"skip:eval", R"(validation loss at iteration)", ""},
  };
  return rules;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::set<std::string> names = [] {
    std::set<std::string> n;
    for (const auto& r : Rules()) n.insert(r.name);
    return n;
  }();
  auto x = MetricExtractor::Create(Rules());
  FUZZ_CHECK(x.ok(), x.status().message().c_str());
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<ExtractedSample> out;
  for (size_t start = 0; start < in.size();) {
    size_t nl = in.find('\n', start);
    if (nl == std::string_view::npos) nl = in.size();
    (*x)->ProcessLine(in.substr(start, nl - start), &out);
    start = nl + 1;
  }
  for (const auto& s : out) {
    FUZZ_CHECK(names.count(s.metric) == 1, "a sample names one of the rules");
    if (IsSkipRule(s.metric)) FUZZ_CHECK(s.value == 1, "a skip mark has value 1");
  }
  return 0;
}
