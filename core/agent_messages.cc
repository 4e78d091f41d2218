#include "core/agent_messages.h"

#include <string>

#include "core/names.h"

namespace tunectl {
namespace {

// Ok, or InvalidArgument naming `field`: `min_bytes` to `max_bytes` bytes, no control character.
Status CheckText(const std::string& field, std::string_view s, size_t min_bytes,
                 size_t max_bytes = kMaxAgentTextBytes) {
  if (s.size() < min_bytes)
    return Status::InvalidArgument(field + ": empty; " + std::to_string(min_bytes) + " to " +
                                   std::to_string(max_bytes) + " bytes allowed");
  if (s.size() > max_bytes)
    return Status::InvalidArgument(field + ": " + ShownValue(s) + " is " +
                                   std::to_string(s.size()) + " bytes; allowed at most " +
                                   std::to_string(max_bytes));
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F)
      return Status::InvalidArgument(field + ": " + ShownValue(s) +
                                     " contains a control character; allowed is printable text");
  }
  return Status::Ok();
}

}  // namespace

Status CheckAgentName(std::string_view name, std::string_view field) {
  return CheckText(std::string(field), name, 1, kMaxAgentNameBytes);
}

Status CheckAgentHello(std::string_view name, int slots, const LabelMap& labels) {
  if (Status st = CheckAgentName(name); !st.ok()) return st;
  if (slots < 0 || slots > kMaxAgentSlots)
    return Status::InvalidArgument("Hello.slots: " + std::to_string(slots) +
                                   " is out of range; allowed 0.." +
                                   std::to_string(kMaxAgentSlots));
  if (labels.size() > kMaxAgentLabels)
    return Status::InvalidArgument("Hello.labels: " + std::to_string(labels.size()) +
                                   " labels; allowed at most " + std::to_string(kMaxAgentLabels));
  for (const auto& [key, value] : labels)
    if (Status st = CheckLabel("Hello.labels", key, value); !st.ok()) return st;
  return Status::Ok();
}

Status CheckSampleMetric(std::string_view metric) {
  return CheckText("MetricBatch.samples.metric", metric, 1);
}

}  // namespace tunectl
