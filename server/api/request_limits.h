// Every field of a client's request within its size (core/names.h's RequestFieldLimit), checked by
// reflection before a TuningService handler runs, so no handler or store method sees an oversize
// value. Thread-safe.
#pragma once

#include <google/protobuf/message.h>

#include "core/status.h"

namespace tunectl {

// Ok, or InvalidArgument naming the field's path ("vary", "vary[3]", "agent.labels"), its size and
// the limit.
Status CheckRequestLimits(const google::protobuf::Message& request);

}  // namespace tunectl
