// What the server accepts from an agent's session, as pure checks of the values its messages
// carry: a Hello's name, slots and labels, and the metric names of a batch's samples. Each is text
// the server stores (PostgreSQL refuses NUL in text and jsonb) and prints (`agent list`, logs), so
// it must be short, non-empty and free of control characters. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

#include "core/selector.h"
#include "core/status.h"

namespace tunectl {

inline constexpr size_t kMaxAgentNameBytes = 253;  // a host name's length
inline constexpr size_t kMaxAgentTextBytes = 255;  // a label's key or value, a metric name
inline constexpr size_t kMaxAgentLabels = 64;
inline constexpr int kMaxAgentSlots = 4096;
// An agent's bytes the server keeps as text, as SanitizeUtf8(bytes, these sizes): a finished run's
// reason and stderr tail, a heartbeat's (or Hello's) reason for being unhealthy.
inline constexpr size_t kMaxRunReasonBytes = 4096;
inline constexpr size_t kMaxStderrTailBytes = 8192;
inline constexpr size_t kMaxUnhealthyBytes = 1024;

// Ok, or InvalidArgument naming the field (Hello.name, Hello.slots, Hello.labels), the value and
// what is allowed: a name of 1..253 bytes, 0..4096 slots, at most 64 labels whose keys and values
// match core/names.h's label patterns.
Status CheckAgentHello(std::string_view name, int slots, const LabelMap& labels);
// The name part of that: 1..253 bytes without a control character; InvalidArgument naming `field`.
Status CheckAgentName(std::string_view name, std::string_view field = "Hello.name");

// Ok, or InvalidArgument: a sample's metric name is 1..255 bytes with no control character.
Status CheckSampleMetric(std::string_view metric);

}  // namespace tunectl
