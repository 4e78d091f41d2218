#include "core/names.h"

#include <re2/re2.h>

#include <string>

namespace tunectl {
namespace {

bool Matches(std::string_view s, const RE2& re) {
  return RE2::FullMatch(re2::StringPiece(s.data(), s.size()), re);
}

}  // namespace

std::string ShownValue(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < 64; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F)
      out += std::string("\\x") + kHex[c >> 4] + kHex[c & 0xF];
    else
      out += static_cast<char>(c);
  }
  return out + (s.size() > 64 ? "\"…" : "\"");
}

Status CheckScheduleName(std::string_view name, std::string_view field) {
  static const RE2 re("[a-z0-9][a-z0-9_.-]{0,62}");
  if (Matches(name, re)) return Status::Ok();
  return Status::InvalidArgument(std::string(field) + ": " + ShownValue(name) +
                                 " is not a valid name; allowed: 1-63 of a-z 0-9 _ . - starting "
                                 "with a letter or digit, e.g. nightly");
}

Status CheckLabel(std::string_view field, std::string_view key, std::string_view value) {
  static const RE2 key_re("[A-Za-z0-9][A-Za-z0-9._/-]{0,62}");
  static const RE2 value_re("[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,62}");
  if (!Matches(key, key_re))
    return Status::InvalidArgument(std::string(field) + ": key " + ShownValue(key) +
                                   " is not a valid label key; allowed: 1-63 of A-Z a-z 0-9 . _ "
                                   "/ - starting with a letter or digit, e.g. gpu");
  if (!value.empty() && !Matches(value, value_re))
    return Status::InvalidArgument(std::string(field) + "[" + std::string(key.substr(0, 64)) +
                                   "]: value " + ShownValue(value) +
                                   " is not a valid label value; allowed: empty, or 1-63 of A-Z "
                                   "a-z 0-9 . _ : / @ + - starting with a letter or digit, e.g. "
                                   "a100");
  return Status::Ok();
}

FieldLimit RequestFieldLimit(std::string_view field) {
  FieldLimit l;
  if (field == "spec") {  // a workload's YAML (core/text.h's CheckDocument bounds its shape)
    l.max_bytes = 1 << 20;
  } else if (field == "statement" || field == "evidence" || field == "expect" ||
             field == "reason" || field == "again_reason") {  // free text a person writes
    l.max_bytes = 16 << 10;
  } else if (field == "source") {  // the path the spec was read from
    l.max_bytes = 4096;
  } else if (field == "vary") {
    l.max_items = 64;
  } else if (field == "guardrails") {
    l.max_items = 32;
  }
  return l;
}

}  // namespace tunectl
