#include "cli/render.h"

#include <gtest/gtest.h>

namespace tunectl {
namespace {

TEST(RenderTable, AlignsColumnsAndUppercasesHeaders) {
  Table t{{"id", "name"}, {{"1", "demo"}, {"12", "x"}}};
  EXPECT_EQ(RenderTable(t), "ID  NAME\n1   demo\n12  x\n");
}

TEST(RenderCsv, QuotesSpecialCells) {
  Table t{{"a", "b"}, {{"x,y", "say \"hi\""}, {"plain", "line\nbreak"}}};
  EXPECT_EQ(RenderCsv(t), "a,b\r\n\"x,y\",\"say \"\"hi\"\"\"\r\nplain,\"line\nbreak\"\r\n");
}

TEST(RenderCsv, LaterPagesHaveNoHeader) {
  Table t{{"a", "b"}, {{"1", "2"}}};
  EXPECT_EQ(RenderCsv(t, false), "1,2\r\n");
}

TEST(RenderTablePage, TheFirstPageSetsTheWidthsAndLaterPagesKeepThem) {
  std::vector<size_t> widths;
  EXPECT_EQ(RenderTablePage({{"id", "name"}, {{"1", "demo"}}}, &widths), "ID  NAME\n1   demo\n");
  EXPECT_EQ(RenderTablePage({{"id", "name"}, {{"12", "x"}, {"1234", "y"}}}, &widths),
            "12  x\n1234  y\n");
}

TEST(FormatNumber, FourSignificantDigitsWithoutExponent) {
  EXPECT_EQ(FormatNumber(2427.49), "2427");
  EXPECT_EQ(FormatNumber(13.1875), "13.19");
  EXPECT_EQ(FormatNumber(0.0097), "0.0097");
  EXPECT_EQ(FormatNumber(123.456), "123.5");
  EXPECT_EQ(FormatNumber(0), "0");
  EXPECT_EQ(FormatNumber(1.5e9), "1.5e+09");
  EXPECT_EQ(FormatPercent(0.0312), "3.1%");
}

TEST(ParseOutputFormat, RejectsUnknownNamingAllowed) {
  EXPECT_EQ(*ParseOutputFormat("json"), OutputFormat::kJson);
  auto r = ParseOutputFormat("yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "-o/--output: \"yaml\" is not a format; allowed: table, json, csv, name");
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST(RenderTable, AlignsMultibyteCells) {
  Table t{{"change", "x"}, {{"n 1→4", "a"}, {"abcdef", "b"}}};
  EXPECT_EQ(RenderTable(t), "CHANGE  X\nn 1→4   a\nabcdef  b\n");
}

TEST(FormatDuration, WritesTheLargestUnitsFirst) {
  EXPECT_EQ(FormatDuration(7200), "2h");
  EXPECT_EQ(FormatDuration(5400), "1h30m");
  EXPECT_EQ(FormatDuration(95), "1m35s");
  EXPECT_EQ(FormatDuration(0), "0s");
  EXPECT_EQ(FormatDuration(90000), "1d1h");
}

}  // namespace
}  // namespace tunectl
