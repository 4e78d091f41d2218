// Loads a time zone by IANA name from the system's tz database (/usr/share/zoneinfo).
#pragma once

#include <string>

#include "core/status.h"
#include "core/timezone.h"

namespace tunectl {

// "UTC" always works; other names need the tzdata package. InvalidArgument names the zone.
Result<TimeZone> LoadTimeZone(const std::string& name,
                              const std::string& dir = "/usr/share/zoneinfo");

}  // namespace tunectl
