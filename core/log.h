// The logging seam: libraries report events through a LogFn; only binaries decide where they go.
#pragma once

#include <functional>
#include <string>

namespace tunectl {

enum class LogLevel { kDebug, kInfo, kWarn, kError };
using LogFn = std::function<void(LogLevel, const std::string&)>;

}  // namespace tunectl
