// Output rendering for the CLI: aligned text tables, RFC 4180 CSV, and number formatting.
// Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace tunectl {

// -o: table (also "wide"), json, csv, or name (kind/id, one a line, like kubectl).
enum class OutputFormat { kTable, kJson, kCsv, kName };
Result<OutputFormat> ParseOutputFormat(const std::string& s);

struct Table {
  std::vector<std::string> headers;
  std::vector<std::vector<std::string>> rows;
};

size_t DisplayWidth(const std::string& s);
// Columns padded to their widest cell (in code points), two spaces apart, headers upper-case;
// no trailing blanks.
std::string RenderTable(const Table& t);
// A table written page by page: the first page (`*widths` empty) sets the column widths and has
// the header line; later pages keep those widths (a wider cell pushes the rest of its row).
std::string RenderTablePage(const Table& t, std::vector<size_t>* widths);
// Header line then rows; cells with , " CR or LF are quoted, quotes doubled; CRLF line ends.
// Without `header`: the rows only (a later page of the same CSV).
std::string RenderCsv(const Table& t, bool header = true);

// Human-readable number: 4 significant digits without exponent for everyday magnitudes.
std::string FormatNumber(double v);
// A number for CSV: the shortest text that reads back as the same double (1.322, 0.0004, 1e+20);
// "" for NaN and infinities (a missing value in a spreadsheet or pandas).
std::string CsvNumber(double v);
std::string FormatPercent(double fraction);
// 7200 -> "2h", 5400 -> "1h30m", 95 -> "1m35s", 42 -> "42s".
std::string FormatDuration(int64_t seconds);

}  // namespace tunectl
