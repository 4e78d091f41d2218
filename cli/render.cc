#include "cli/render.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace tunectl {

Result<OutputFormat> ParseOutputFormat(const std::string& s) {
  if (s == "table" || s == "wide") return OutputFormat::kTable;
  if (s == "json") return OutputFormat::kJson;
  if (s == "csv") return OutputFormat::kCsv;
  if (s == "name") return OutputFormat::kName;
  return Status::InvalidArgument("-o/--output: \"" + s +
                                 "\" is not a format; allowed: table, json, csv, name");
}

// Display width: UTF-8 code points (continuation bytes do not count).
size_t DisplayWidth(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string RenderTable(const Table& t) {
  std::vector<size_t> widths;
  return RenderTablePage(t, &widths);
}

std::string RenderTablePage(const Table& t, std::vector<size_t>* widths) {
  const bool first = widths->empty();
  std::vector<size_t>& w = *widths;
  if (first) {
    w.assign(t.headers.size(), 0);
    for (size_t i = 0; i < t.headers.size(); ++i) w[i] = DisplayWidth(t.headers[i]);
    for (const auto& r : t.rows)
      for (size_t i = 0; i < r.size() && i < w.size(); ++i)
        w[i] = std::max(w[i], DisplayWidth(r[i]));
  }
  auto line = [&](const std::vector<std::string>& cells, bool upper) {
    std::string out;
    for (size_t i = 0; i < w.size(); ++i) {
      std::string c = i < cells.size() ? cells[i] : "";
      if (upper) std::transform(c.begin(), c.end(), c.begin(), ::toupper);
      out += c;
      if (i + 1 < w.size()) out += std::string(w[i] - std::min(w[i], DisplayWidth(c)) + 2, ' ');
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = first ? line(t.headers, true) : "";
  for (const auto& r : t.rows) out += line(r, false);
  return out;
}

std::string RenderCsv(const Table& t, bool header) {
  auto cell = [](const std::string& c) {
    if (c.find_first_of(",\"\r\n") == std::string::npos) return c;
    std::string q = "\"";
    for (char ch : c) {
      if (ch == '"')
        q += "\"\"";
      else
        q += ch;
    }
    return q + "\"";
  };
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + cell(cells[i]);
    return out + "\r\n";
  };
  std::string out = header ? line(t.headers) : "";
  for (const auto& r : t.rows) out += line(r);
  return out;
}

std::string FormatNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const double a = std::fabs(v);
  if (a == 0) return "0";
  if (a >= 1e7 || a < 1e-3) {
    std::snprintf(buf, sizeof buf, "%.4g", v);
  } else {
    int digits = a >= 1000 ? 0 : a >= 100 ? 1 : a >= 10 ? 2 : a >= 1 ? 3 : 4;
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  }
  return buf;
}

std::string CsvNumber(double v) {
  if (!std::isfinite(v)) return "";
  char buf[64];
  // Plain digits for everyday magnitudes (0.0004, not 4e-04), an exponent beyond them.
  const double a = std::fabs(v);
  auto r = a == 0 || (a >= 1e-5 && a < 1e15)
               ? std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed)
               : std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string FormatPercent(double fraction) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f%%", fraction * 100);
  return buf;
}

std::string FormatDuration(int64_t seconds) {
  if (seconds < 0) seconds = 0;
  const int64_t d = seconds / 86400, h = seconds % 86400 / 3600, m = seconds % 3600 / 60,
                s = seconds % 60;
  std::string out;
  if (d) out += std::to_string(d) + "d";
  if (h) out += std::to_string(h) + "h";
  if (m) out += std::to_string(m) + "m";
  if (s || out.empty()) out += std::to_string(s) + "s";
  return out;
}

}  // namespace tunectl
