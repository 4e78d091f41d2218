#include "core/text.h"

#include <algorithm>
#include <vector>

namespace tunectl {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

bool Cont(unsigned char c) {
  return (c & 0xC0) == 0x80;
}

// Length of the valid UTF-8 sequence at in[i], or 0 when it is not one (RFC 3629 table 3-7).
size_t SequenceAt(std::string_view in, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(in[i + k]); };
  const size_t left = in.size() - i;
  const unsigned char c = b(0);
  if (c >= 0x01 && c <= 0x7F) return 1;
  if (c >= 0xC2 && c <= 0xDF) return left >= 2 && Cont(b(1)) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (left < 3 || !Cont(b(1)) || !Cont(b(2))) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;  // overlong
    if (c == 0xED && b(1) > 0x9F) return 0;  // UTF-16 surrogates
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (left < 4 || !Cont(b(1)) || !Cont(b(2)) || !Cont(b(3))) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;  // overlong
    if (c == 0xF4 && b(1) > 0x8F) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;  // NUL, a continuation byte, 0xC0/0xC1, 0xF5..0xFF
}

}  // namespace

std::string SanitizeUtf8(std::string_view in, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(in.size(), max_bytes));
  for (size_t i = 0; i < in.size();) {
    const size_t n = SequenceAt(in, i);
    const std::string_view piece = n ? in.substr(i, n) : std::string_view(kReplacement, 3);
    if (out.size() + piece.size() > max_bytes) break;
    out.append(piece);
    i += n ? n : 1;
  }
  return out;
}

Status CheckDocument(std::string_view text, const std::string& what, const DocumentLimits& limits) {
  if (text.size() > limits.max_bytes)
    return Status::InvalidArgument(what + ": " + std::to_string(text.size()) +
                                   " bytes; allowed at most " + std::to_string(limits.max_bytes));
  // UTF-8 text: what is stored as JSON must be (a NUL is refused with the value it is in).
  for (size_t i = 0, line = 1; i < text.size();) {
    if (text[i] == '\0' || text[i] == '\n') {
      line += text[i] == '\n';
      ++i;
      continue;
    }
    const size_t n = SequenceAt(text, i);
    if (n == 0)
      return Status::InvalidArgument(what + ": line " + std::to_string(line) + ": byte " +
                                     std::to_string(i) +
                                     " is not valid UTF-8; a document is "
                                     "UTF-8 text");
    i += n;
  }
  int flow = 0;
  std::vector<size_t> indents;  // YAML block-style indentation levels open at this line
  char quote = 0;
  char prev = 0;  // the last character on this line outside quotes and spaces (0: none yet)
  bool comment = false;
  size_t indent = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      prev = 0, comment = false, indent = 0;
      continue;
    }
    if (comment) continue;
    if (quote) {
      if (quote == '"' && c == '\\')
        ++i;
      else if (c == quote)
        quote = 0, prev = c;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      if (prev == 0 && c == ' ') ++indent;
      continue;
    }
    if (prev == 0 && flow == 0 && c != '#') {
      // The first character of a block-style line: its indentation opens or closes levels, and
      // "- - - x" nests block sequences on one line, one level per dash.
      while (!indents.empty() && indents.back() > indent) indents.pop_back();
      if (indents.empty() || indents.back() < indent) indents.push_back(indent);
      for (size_t j = i; j + 1 < text.size() && text[j] == '-' && text[j + 1] == ' ';) {
        j += 2;
        while (j < text.size() && text[j] == ' ') ++j;
        indents.push_back(indent + (j - i));
      }
    }
    if (c == '#' && (prev == 0 || (text[i - 1] == ' ' || text[i - 1] == '\t'))) {
      comment = true;
      continue;
    }
    // A quote opens a quoted scalar only where a token starts; inside a plain scalar it is text.
    const bool spaced = text[i - (prev ? 1 : 0)] == ' ' || flow > 0;
    const bool token_start = prev == 0 || prev == ',' || prev == '[' || prev == '{' ||
                             ((prev == ':' || prev == '-') && spaced);
    if ((c == '"' || c == '\'') && token_start)
      quote = c;
    else if (c == '[' || c == '{')
      ++flow;
    else if ((c == ']' || c == '}') && flow > 0)
      --flow;
    prev = c;
    if (flow + static_cast<int>(indents.size()) > limits.max_depth)
      return Status::InvalidArgument(what + ": nested more than " +
                                     std::to_string(limits.max_depth) +
                                     " levels deep (brackets, braces or indentation); allowed at "
                                     "most " +
                                     std::to_string(limits.max_depth));
  }
  return Status::Ok();
}

std::string ShellQuote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  out += '\'';
  return out;
}

}  // namespace tunectl
