// Text from the outside (a job's output, a user's file) made safe to carry and store, and limits
// on what a parser is handed. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tunectl {

// `in` as valid UTF-8 with no NUL, at most `max_bytes` long: each invalid byte (a stray
// continuation byte, a truncated, overlong or surrogate sequence, a code point past U+10FFFF)
// and each NUL becomes U+FFFD; a cut falls between characters, never inside one. Output is bytes,
// PostgreSQL text and protobuf strings are not: this is the one conversion between them.
std::string SanitizeUtf8(std::string_view in, size_t max_bytes = std::string::npos);

// Limits on a document before it is parsed (YAML or JSON): its size, and how deeply brackets,
// braces and indentation nest. A parser that recurses per level must never see more.
struct DocumentLimits {
  size_t max_bytes = 1 << 20;  // 1 MiB: a workload is a page of YAML
  int max_depth = 64;          // nesting of [ { and of indentation levels
};

// Ok, or InvalidArgument naming `what`, the size or depth found and the limit, or the line and
// byte of the first byte that is not UTF-8 (a NUL is left to the parser's own check). Depth counts
// unquoted [ and { (JSON, YAML flow style) and indentation levels (YAML block style); quoted
// strings and comments are skipped.
Status CheckDocument(std::string_view text, const std::string& what,
                     const DocumentLimits& limits = DocumentLimits());

// 'text' for the shell: single quotes, an inner ' written as '\''.
std::string ShellQuote(std::string_view text);

}  // namespace tunectl
