#include "sys/zoneinfo.h"

#include "sys/files.h"

namespace tunectl {

Result<TimeZone> LoadTimeZone(const std::string& name, const std::string& dir) {
  if (name == "UTC" || name == "Etc/UTC") return TimeZone::Utc();
  if (name.empty() || name.find("..") != std::string::npos || name[0] == '/')
    return Status::InvalidArgument(
        "--tz: \"" + name +
        "\" is not a time zone name; use an IANA name like Asia/Shanghai or UTC");
  auto bytes = ReadFile(dir + "/" + name);
  if (!bytes.ok())
    return Status::InvalidArgument("--tz: unknown time zone \"" + name +
                                   "\"; use an IANA name like Asia/Shanghai, Europe/Berlin or UTC");
  return TimeZone::FromTzif(*bytes, name);
}

}  // namespace tunectl
