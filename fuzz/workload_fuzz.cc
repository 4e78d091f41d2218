// ParseWorkloadSpec on arbitrary text (YAML, and JSON when it starts with '{'): never a crash, a
// hang or a blown stack (core/text.h CheckDocument bounds size and depth first). A spec it
// accepts must also survive what the server does next with it: its canonical JSON parses back to
// the same spec, its defaults bind into a launch whose record round-trips, and the agent can
// compile its metric rules.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/launch.h"
#include "core/metrics.h"
#include "core/spec.h"
#include "core/template.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tunectl;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto spec = ParseWorkloadSpec(text, "fuzz.yaml");
  if (!spec.ok()) {
    FUZZ_CHECK(!spec.status().message().empty(), "a refusal says why");
    return 0;
  }
  const std::string json = WorkloadSpecToJson(*spec);
  auto again = ParseWorkloadSpec(json, "canonical");
  FUZZ_CHECK(again.ok(), "the canonical JSON of an accepted spec parses");
  FUZZ_CHECK(WorkloadSpecToJson(*again) == json, "canonical JSON round-trips");

  auto launch = BindLaunch(*spec, DefaultParamValues(*spec));
  FUZZ_CHECK(launch.ok(), "an accepted spec binds its defaults");
  const LaunchRecord record = MakeLaunchRecord(*spec, *launch);
  auto read = LaunchRecordFromJson(LaunchRecordToJson(record));
  FUZZ_CHECK(read.ok() && *read == record, "the launch record round-trips");
  FUZZ_CHECK(MetricExtractor::Create(record.Rules()).ok(), "the agent compiles its metric rules");
  return 0;
}
