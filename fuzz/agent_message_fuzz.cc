// The server's side of an agent's session on arbitrary bytes: AgentMessage::ParseFromArray, then
// what the server applies to each message without a database: a Hello's checks
// (CheckAgentHello) and the agent row `agent list` shows (ToProto), a batch's metric names
// (CheckSampleMetric), a finished run's reason and stderr bytes made text (SanitizeUtf8) and the
// run row `run show` gets (ToProto). What passes must be storable (no NUL, within its size) and
// must reach the CLI intact: the CLI's parser reads back exactly what the server sent.
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/agent_messages.h"
#include "core/text.h"
#include "fuzz/fuzz_check.h"
#include "server/api/convert.h"
#include "tunectl/v1/tunectl.pb.h"

namespace {

using namespace tunectl;

bool Storable(const std::string& s) {
  return s.find('\0') == std::string::npos;
}

// `m` serialized and parsed back as the CLI does; false when the CLI could not read it.
template <typename M>
bool ReachesTheCli(const M& m, M* back) {
  std::string wire;
  return m.SerializeToString(&wire) && back->ParseFromString(wire);
}

void Hello(const v1::Hello& h) {
  const LabelMap labels(h.labels().begin(), h.labels().end());
  if (!CheckAgentHello(h.name(), h.slots(), labels).ok()) return;
  FUZZ_CHECK(!h.name().empty() && h.name().size() <= kMaxAgentNameBytes && Storable(h.name()),
             "an accepted name is storable");
  for (const auto& [k, v] : labels)
    FUZZ_CHECK(!k.empty() && Storable(k) && Storable(v), "accepted labels are storable");
  AgentRow row;
  row.name = h.name();
  row.labels = labels;
  row.slots = h.slots();
  row.version = h.version();
  v1::Agent out, back;
  ToProto(row, &out);
  FUZZ_CHECK(ReachesTheCli(out, &back), "agent list can read the agent");
  FUZZ_CHECK(back.name() == row.name && back.slots() == row.slots, "the agent arrives intact");
  FUZZ_CHECK(LabelMap(back.labels().begin(), back.labels().end()) == labels,
             "its labels arrive intact");
}

void Batch(const v1::MetricBatch& b) {
  for (const auto& s : b.samples()) {
    if (!CheckSampleMetric(s.metric()).ok()) return;  // the whole batch is refused
    FUZZ_CHECK(!s.metric().empty() && Storable(s.metric()), "an accepted metric is storable");
  }
}

void Finished(const v1::RunFinished& f) {
  RunRow row;
  row.reason = SanitizeUtf8(f.reason(), kMaxRunReasonBytes);
  row.stderr_tail = SanitizeUtf8(f.stderr_tail(), kMaxStderrTailBytes);
  row.exit_code = f.exit_code();
  row.signal = f.signal();
  FUZZ_CHECK(row.reason.size() <= kMaxRunReasonBytes, "the reason is cut to its size");
  FUZZ_CHECK(row.stderr_tail.size() <= kMaxStderrTailBytes, "the stderr tail is cut to its size");
  FUZZ_CHECK(Storable(row.reason) && Storable(row.stderr_tail), "output is storable text");
  FUZZ_CHECK(SanitizeUtf8(row.stderr_tail) == row.stderr_tail, "sanitised text is valid UTF-8");
  FUZZ_CHECK(3 * f.stderr_tail().size() > kMaxStderrTailBytes ||
                 row.stderr_tail.size() >= f.stderr_tail().size(),
             "nothing is cut when even all-bad bytes fit (each becomes 3-byte U+FFFD)");
  v1::Run out, back;
  ToProto(row, &out);
  FUZZ_CHECK(ReachesTheCli(out, &back), "run show can read the run");
  FUZZ_CHECK(back.reason() == row.reason && back.stderr_tail() == row.stderr_tail,
             "the run's output arrives intact");
}

}  // namespace

// Invalid UTF-8 in a string field fails the parse, as on the server; protobuf's log line about
// each one is noise here.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  v1::AgentMessage m;
  if (!m.ParseFromArray(data, static_cast<int>(size))) return 0;
  switch (m.msg_case()) {
    case v1::AgentMessage::kHello: Hello(m.hello()); break;
    case v1::AgentMessage::kMetricBatch: Batch(m.metric_batch()); break;
    case v1::AgentMessage::kRunFinished: Finished(m.run_finished()); break;
    default: break;  // Heartbeat, RunStarted: numbers only
  }
  return 0;
}
