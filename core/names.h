// What the server accepts as a name, and how big any field of a client's request may be. Names
// are stored, printed in tables and logs, used in file names and shell-quoted commands: each kind
// has one safe pattern (docs/security.md, "Input"). Pure functions; thread-safe.
//   workload, schedule   [a-z0-9][a-z0-9_.-]{0,62}
//   parameter, metric    [A-Za-z_][A-Za-z0-9_]{0,62}   (identifiers: {name} in templates)
//   label key            [A-Za-z0-9][A-Za-z0-9._/-]{0,62}
//   label value          empty, or [A-Za-z0-9][A-Za-z0-9._:/@+-]{0,62}
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tunectl {

// `s` quoted for an error message: control characters as \xNN, cut after 64 bytes with "…".
std::string ShownValue(std::string_view s);

// Ok, or InvalidArgument naming `field`, the value (shown safely) and the pattern.
Status CheckScheduleName(std::string_view name, std::string_view field = "schedule name");
Status CheckLabel(std::string_view field, std::string_view key, std::string_view value);

// The limits of one field of a request, by the field's name in the proto (every request of
// TuningService is checked against them before its handler runs): bytes of a string or bytes
// field, and items of a repeated field or a map.
struct FieldLimit {
  size_t max_bytes = 1024;  // names, ids, times, page tokens, cron/window specs
  size_t max_items = 256;
};
FieldLimit RequestFieldLimit(std::string_view field);

}  // namespace tunectl
