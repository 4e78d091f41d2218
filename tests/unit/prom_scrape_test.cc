// core/prom_scrape.h on the fixtures of tests/fixtures/prometheus (see its README: node_exporter
// output recorded here, dcgm-exporter output written by its documented line format) and on short
// texts. Expected aggregates and rates are computed by hand from numbers read off the fixtures.
#include "core/prom_scrape.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

namespace tunectl {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

std::string Fixture(const std::string& name) {
#ifdef TUNECTL_SOURCE_DIR
  const std::string root = TUNECTL_SOURCE_DIR;
#else
  const char* env = std::getenv("TUNECTL_SOURCE_DIR");
  const std::string root = env != nullptr ? env : ".";
#endif
  const std::string path = root + "/tests/fixtures/prometheus/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

PromScrape Parse(std::string_view text) {
  auto r = ParsePromText(text);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : PromScrape();
}

PromScrape ParseFixture(const std::string& name) {
  return Parse(Fixture(name));
}

PromMatcher Matcher(std::string_view selector) {
  auto m = PromMatcher::Parse(selector);
  EXPECT_TRUE(m.ok()) << selector << ": " << m.status().message();
  if (m.ok()) return std::move(m).value();
  return std::move(PromMatcher::Parse("never_matches_anything")).value();
}

std::string SelectorError(std::string_view selector) {
  auto m = PromMatcher::Parse(selector);
  EXPECT_FALSE(m.ok()) << selector << " was accepted";
  EXPECT_EQ(m.status().code(), Status::Code::kInvalidArgument);
  return m.status().message();
}

const PromPoint* Find(const PromScrape& s, const std::string& name,
                      const std::map<std::string, std::string>& labels = {}) {
  for (const auto& p : s.points) {
    if (p.name == name && p.labels == labels) return &p;
  }
  return nullptr;
}

PromPoint Point(std::string name, std::map<std::string, std::string> labels = {}) {
  return PromPoint{std::move(name), std::move(labels), 0, std::nullopt};
}

// ---- PromText -------------------------------------------------------------------------------

TEST(PromText, ParsesRecordedNodeExporterOutputWithoutSkippingALine) {
  const PromScrape s = ParseFixture("node_exporter_1.5.0_scrape1.txt");
  EXPECT_EQ(s.skipped, 0) << "line " << s.first_skipped_line << ": " << s.first_skipped_reason;
  EXPECT_EQ(s.points.size(), 503u);  // grep -vc '^#'
  EXPECT_EQ(s.types.size(), 282u);   // 60 counter, 174 gauge, 1 summary, 47 untyped
  EXPECT_EQ(s.types.at("node_cpu_seconds_total"), "counter");
  EXPECT_EQ(s.types.at("go_gc_duration_seconds"), "summary");
  const PromPoint* idle = Find(s, "node_cpu_seconds_total", {{"cpu", "1"}, {"mode", "idle"}});
  ASSERT_NE(idle, nullptr);
  EXPECT_EQ(idle->value, 12812.8);
  const PromPoint* rx = Find(s, "node_network_receive_bytes_total", {{"device", "eth0"}});
  ASSERT_NE(rx, nullptr);
  EXPECT_EQ(rx->value, 7.5540358e+07);
  const PromPoint* boot = Find(s, "node_boot_time_seconds");
  ASSERT_NE(boot, nullptr);
  EXPECT_EQ(boot->value, 1796452438.0);
  const PromPoint* quantile = Find(s, "go_gc_duration_seconds", {{"quantile", "0.25"}});
  ASSERT_NE(quantile, nullptr);
}

TEST(PromText, ParsesDcgmExporterLinesWithAllTheirLabels) {
  const PromScrape s = ParseFixture("dcgm_exporter_scrape1.txt");
  EXPECT_EQ(s.skipped, 0) << "line " << s.first_skipped_line << ": " << s.first_skipped_reason;
  EXPECT_EQ(s.points.size(), 24u * 8u);
  EXPECT_EQ(s.types.at("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"), "counter");
  EXPECT_EQ(s.types.at("DCGM_FI_DEV_GPU_UTIL"), "gauge");
  const PromPoint* util = Find(s, "DCGM_FI_DEV_GPU_UTIL",
                               {{"gpu", "0"},
                                {"UUID", "GPU-4a1c7e52-8d3f-2b6e-91a0-5f7c3d8e2b14"},
                                {"pci_bus_id", "00000000:18:00.0"},
                                {"device", "nvidia0"},
                                {"modelName", "NVIDIA H100 80GB HBM3"},
                                {"Hostname", "node1"},
                                {"DCGM_FI_DRIVER_VERSION", "535.161.08"}});
  ASSERT_NE(util, nullptr);
  EXPECT_EQ(util->value, 97);
  for (const auto& p : s.points) {
    if (p.name == "DCGM_FI_DEV_POWER_USAGE" && p.labels.at("gpu") == "4") {
      EXPECT_EQ(p.value, 689.73);
    }
    if (p.name == "DCGM_FI_DEV_MEMORY_TEMP" && p.labels.at("gpu") == "3") {
      EXPECT_EQ(p.value, 9223372036854775794.0);
    }
  }
}

TEST(PromText, UnescapesBackslashQuoteAndNewlineInLabelValues) {
  const PromScrape s =
      Parse(R"(m{path="C:\\dir\\",say="\"hi\"",two="a\nb",other="\t",brace="}{,"} 1)"
            "\n");
  ASSERT_EQ(s.points.size(), 1u);
  EXPECT_THAT(s.points[0].labels,
              ElementsAre(Pair("brace", "}{,"), Pair("other", "\\t"), Pair("path", "C:\\dir\\"),
                          Pair("say", "\"hi\""), Pair("two", "a\nb")));
}

TEST(PromText, ReadsNaNAndInfinitiesAndExponents) {
  const PromScrape s =
      Parse("a NaN\nb +Inf\nc -Inf\nd Inf\ne 1.5e3\nf -0.25\ng 1e999\nh 1e-999\ni -0." +
            std::string(400, '0') + "1\nj 0.001e400\nk +nan\n");
  ASSERT_EQ(s.points.size(), 11u);
  EXPECT_TRUE(std::isnan(s.points[0].value));
  EXPECT_EQ(s.points[1].value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(s.points[2].value, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(s.points[3].value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(s.points[4].value, 1500);
  EXPECT_EQ(s.points[5].value, -0.25);
  EXPECT_EQ(s.points[6].value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(s.points[7].value, 0);
  EXPECT_EQ(s.points[8].value, 0);
  EXPECT_TRUE(std::signbit(s.points[8].value));
  EXPECT_EQ(s.points[9].value, std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(s.points[10].value));
}

TEST(PromText, ReadsAnOptionalTimestampInMilliseconds) {
  const PromScrape s =
      Parse("m{a=\"1\"} 3 1700000000123\nm{a=\"2\"} 4 -5\nm{a=\"3\"} 5\nm{a=\"4\"} 6 \t\n");
  ASSERT_EQ(s.points.size(), 4u);
  EXPECT_EQ(s.points[0].timestamp_ms, 1700000000123);
  EXPECT_EQ(s.points[0].value, 3);
  EXPECT_EQ(s.points[1].timestamp_ms, -5);
  EXPECT_EQ(s.points[2].timestamp_ms, std::nullopt);
  EXPECT_EQ(s.points[3].timestamp_ms, std::nullopt);
  EXPECT_EQ(s.skipped, 0);
}

TEST(PromText, AcceptsCrlfBlankLinesAndSurroundingBlanks) {
  const PromScrape s = Parse(
      "# HELP up Whether up.\r\n# TYPE up gauge\r\n\r\n   \r\n  up 1\r\n"
      "\tdown {job=\"x\"}\t0  \r\nlast 7");
  EXPECT_EQ(s.skipped, 0) << s.first_skipped_reason;
  ASSERT_EQ(s.points.size(), 3u);
  EXPECT_EQ(s.points[0].name, "up");
  EXPECT_EQ(s.points[1].name, "down");
  EXPECT_THAT(s.points[1].labels, ElementsAre(Pair("job", "x")));
  EXPECT_EQ(s.points[2].value, 7);
  EXPECT_EQ(s.types.at("up"), "gauge");
}

TEST(PromText, HistogramBucketLinesAreCumulativePoints) {
  const PromScrape s = Parse(
      "# HELP rpc_seconds RPC latency.\n# TYPE rpc_seconds histogram\n"
      "rpc_seconds_bucket{le=\"0.1\"} 3\nrpc_seconds_bucket{le=\"1\"} 8\n"
      "rpc_seconds_bucket{le=\"+Inf\"} 9\nrpc_seconds_sum 4.25\nrpc_seconds_count 9\n");
  ASSERT_EQ(s.points.size(), 5u);
  EXPECT_EQ(s.points[2].name, "rpc_seconds_bucket");
  EXPECT_THAT(s.points[2].labels, ElementsAre(Pair("le", "+Inf")));
  EXPECT_EQ(s.points[2].value, 9);
  EXPECT_TRUE(s.Cumulative("rpc_seconds_bucket"));
  EXPECT_TRUE(s.Cumulative("rpc_seconds_sum"));
  EXPECT_TRUE(s.Cumulative("rpc_seconds_count"));
}

TEST(PromText, SkipsMalformedLinesCountingThemAndKeepsTheRest) {
  const PromScrape s = Parse(
      "good 1\n"
      "unclosed{a=\"b\" 1\n"
      "too many 1 2 3\n"
      "word abc\n"
      "dup{a=\"1\",a=\"2\"} 1\n"
      "# TYPE weird flavour\n"
      "9starts_with_digit 1\n"
      "{a=\"b\"} 1\n"
      "novalue\n"
      "badts 1 1.5\n"
      "also_good{a=\"b\",} 2 # {trace_id=\"x\"} 1\n"
      "# EOF\n");
  EXPECT_EQ(s.skipped, 9);
  EXPECT_EQ(s.first_skipped_line, 2);
  EXPECT_THAT(s.first_skipped_reason, HasSubstr("column 16: expected ',' or '}'"));
  ASSERT_EQ(s.points.size(), 2u);
  EXPECT_EQ(s.points[0].name, "good");
  EXPECT_EQ(s.points[1].name, "also_good");
  EXPECT_EQ(s.points[1].value, 2);
  EXPECT_EQ(s.types.count("weird"), 0u);
}

TEST(PromText, NamesWhyALineWasSkipped) {
  EXPECT_THAT(Parse("dup{a=\"1\",a=\"2\"} 1\n").first_skipped_reason,
              HasSubstr("label a appears twice"));
  EXPECT_THAT(Parse("# TYPE m flavour\n").first_skipped_reason, HasSubstr("no known type"));
  EXPECT_THAT(Parse("m abc\n").first_skipped_reason,
              HasSubstr("column 3: expected a number, NaN, +Inf or -Inf, found 'a'"));
  EXPECT_THAT(Parse("m{a=\"b\n").first_skipped_reason, HasSubstr("'\"' closing the value of a"));
  EXPECT_THAT(Parse("m{a=b} 1\n").first_skipped_reason, HasSubstr("'\"' opening the value of a"));
  EXPECT_THAT(Parse("m 1 2 3\n").first_skipped_reason,
              HasSubstr("column 7: expected the end of the line"));
  const PromScrape twice = Parse("# TYPE m gauge\n# TYPE m counter\n");
  EXPECT_EQ(twice.types.at("m"), "gauge");
  EXPECT_EQ(twice.skipped, 1);
}

TEST(PromText, RejectsTextBeyondItsLimits) {
  EXPECT_EQ(PromTextLimits().max_bytes, 64u << 20);
  EXPECT_EQ(PromTextLimits().max_points, 1u << 20);
  const std::string text = "a 1\nb 2\nc 3\n";
  EXPECT_TRUE(ParsePromText(text, {.max_bytes = 12, .max_points = 3}).ok());
  const auto big = ParsePromText(text, {.max_bytes = 11, .max_points = 3});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(big.status().message(), HasSubstr("12 bytes is over the limit of 11 bytes"));
  const auto many = ParsePromText(text, {.max_bytes = 12, .max_points = 2});
  ASSERT_FALSE(many.ok());
  EXPECT_THAT(many.status().message(), HasSubstr("more than 2 series (line 3)"));
}

TEST(PromText, CumulativeFollowsTypeThenTheTotalSuffix) {
  const PromScrape s = Parse(
      "# TYPE c counter\n# TYPE om counter\n# TYPE g gauge\n# TYPE s summary\n"
      "# TYPE u_total untyped\n# TYPE gh gaugehistogram\n");
  EXPECT_TRUE(s.Cumulative("c"));
  EXPECT_TRUE(s.Cumulative("om_total"));  // OpenMetrics: TYPE names the family
  EXPECT_FALSE(s.Cumulative("om_created"));
  EXPECT_FALSE(s.Cumulative("g"));
  EXPECT_TRUE(s.Cumulative("g_total"));  // a family of its own, with no TYPE
  EXPECT_FALSE(s.Cumulative("s"));       // the quantiles
  EXPECT_TRUE(s.Cumulative("s_sum"));
  EXPECT_TRUE(s.Cumulative("s_count"));
  EXPECT_FALSE(s.Cumulative("gh_bucket"));  // a gauge histogram's buckets go up and down
  EXPECT_TRUE(s.Cumulative("u_total"));
  EXPECT_TRUE(s.Cumulative("requests_total"));
  EXPECT_FALSE(s.Cumulative("requests"));
  // node_exporter's netstat counters are untyped without _total: read as gauges.
  EXPECT_FALSE(
      ParseFixture("node_exporter_1.5.0_scrape1.txt").Cumulative("node_netstat_Tcp_InSegs"));
}

// ---- PromMatcher ----------------------------------------------------------------------------

TEST(PromMatcher, MatchesNameAndAnchoredRegex) {
  const PromMatcher m = Matcher(R"(DCGM_FI_DEV_GPU_UTIL{gpu=~"0|1"})");
  EXPECT_TRUE(m.Matches(Point("DCGM_FI_DEV_GPU_UTIL", {{"gpu", "0"}})));
  EXPECT_TRUE(m.Matches(Point("DCGM_FI_DEV_GPU_UTIL", {{"gpu", "1"}, {"UUID", "GPU-x"}})));
  EXPECT_FALSE(m.Matches(Point("DCGM_FI_DEV_GPU_UTIL", {{"gpu", "10"}})));
  EXPECT_FALSE(m.Matches(Point("DCGM_FI_DEV_GPU_UTIL", {{"gpu", "2"}})));
  EXPECT_FALSE(m.Matches(Point("DCGM_FI_DEV_GPU_UTIL")));
  EXPECT_FALSE(m.Matches(Point("DCGM_FI_DEV_GPU_UTIL_RATIO", {{"gpu", "0"}})));
  EXPECT_EQ(m.text(), R"(DCGM_FI_DEV_GPU_UTIL{gpu=~"0|1"})");
}

TEST(PromMatcher, RegexIsAnchoredAtBothEnds) {
  const PromMatcher m = Matcher(R"(m{gpu=~"1"})");
  EXPECT_TRUE(m.Matches(Point("m", {{"gpu", "1"}})));
  EXPECT_FALSE(m.Matches(Point("m", {{"gpu", "10"}})));
  EXPECT_FALSE(m.Matches(Point("m", {{"gpu", "21"}})));
  EXPECT_TRUE(Matcher(R"(m{a=~"x.y"})").Matches(Point("m", {{"a", "x\ny"}})));
}

TEST(PromMatcher, NegativeMatchersAndAMissingLabelAsEmpty) {
  const PromMatcher ne = Matcher(R"(m{mode!="idle", cpu!~"1|2"})");
  EXPECT_TRUE(ne.Matches(Point("m", {{"mode", "user"}, {"cpu", "0"}})));
  EXPECT_FALSE(ne.Matches(Point("m", {{"mode", "idle"}, {"cpu", "0"}})));
  EXPECT_FALSE(ne.Matches(Point("m", {{"mode", "user"}, {"cpu", "2"}})));
  EXPECT_TRUE(ne.Matches(Point("m")));
  EXPECT_TRUE(Matcher(R"(m{pod=""})").Matches(Point("m")));
  EXPECT_FALSE(Matcher(R"(m{pod!=""})").Matches(Point("m")));
  EXPECT_TRUE(Matcher(R"(m{pod!=""})").Matches(Point("m", {{"pod", "p"}})));
}

TEST(PromMatcher, MatchesTheNameThroughDunderName) {
  const PromMatcher eq = Matcher(R"({__name__="node_load1"})");
  EXPECT_TRUE(eq.Matches(Point("node_load1")));
  EXPECT_FALSE(eq.Matches(Point("node_load5")));
  const PromMatcher re = Matcher(R"({__name__=~"node_cpu_.*", mode="idle"})");
  EXPECT_TRUE(re.Matches(Point("node_cpu_seconds_total", {{"mode", "idle"}})));
  EXPECT_FALSE(re.Matches(Point("node_cpu_seconds_total", {{"mode", "user"}})));
  EXPECT_FALSE(re.Matches(Point("node_load1", {{"mode", "idle"}})));
}

TEST(PromMatcher, ReadsQuotesBackticksEscapesBlanksAndATrailingComma) {
  // 'it' and 's' are two tokens: an error, not a concatenation.
  EXPECT_FALSE(PromMatcher::Parse("m{a='it''s'}").ok());
  const PromMatcher ok = Matcher("m { a = 'it\\'s' , b=~`\\d+`, c=\"\\x41\\u00e9\\n\\\"\", } ");
  EXPECT_EQ(ok.text(), "m { a = 'it\\'s' , b=~`\\d+`, c=\"\\x41\\u00e9\\n\\\"\", }");
  EXPECT_TRUE(ok.Matches(Point("m", {{"a", "it's"}, {"b", "42"}, {"c", "A\xc3\xa9\n\""}})));
  EXPECT_FALSE(ok.Matches(Point("m", {{"a", "it's"}, {"b", "4x"}, {"c", "A\xc3\xa9\n\""}})));
}

TEST(PromMatcher, RejectsUnclosedBrace) {
  const std::string e = SelectorError(R"(DCGM_FI_DEV_GPU_UTIL{gpu="0")");
  EXPECT_THAT(e, HasSubstr("at column 29: expected ',' or '}', found the end"));
}

TEST(PromMatcher, RejectsAnUnknownOperatorNamingItsColumn) {
  EXPECT_THAT(SelectorError(R"(m{gpu=="0"})"),
              HasSubstr("at column 6: expected one of = != =~ !~ after label gpu"));
  EXPECT_THAT(SelectorError(R"(m{gpu~"0"})"), HasSubstr("at column 6: expected one of"));
}

TEST(PromMatcher, RejectsAnUnquotedValue) {
  EXPECT_THAT(SelectorError("m{gpu=0}"), HasSubstr("at column 7: expected a quoted string"));
}

TEST(PromMatcher, RejectsAnUnterminatedString) {
  EXPECT_THAT(SelectorError(R"(m{gpu="0})"),
              HasSubstr("expected the closing \" of the string opened at column 7"));
}

TEST(PromMatcher, RejectsAnInvalidRegexNamingIt) {
  EXPECT_THAT(SelectorError(R"(m{gpu=~"(0"})"),
              HasSubstr("at column 8: invalid regex \"(0\": missing )"));
  // Valid only once wrapped in (?s: … ): still refused.
  EXPECT_THAT(SelectorError(R"(m{a=~"x)|(y"})"), HasSubstr("invalid regex"));
}

TEST(PromMatcher, RejectsAnUnknownEscapeWithAHintForRegexes) {
  EXPECT_THAT(SelectorError(R"(m{a=~"\d+"})"),
              HasSubstr("at column 7: unknown escape \\d (in a regex write \\\\d or quote it"));
  EXPECT_TRUE(PromMatcher::Parse(R"(m{a=~"\\d+"})").ok());
}

TEST(PromMatcher, RejectsSelectorsThatMatchEverything) {
  EXPECT_THAT(SelectorError("{}"), HasSubstr("needs a matcher that does not match the empty"));
  EXPECT_THAT(SelectorError(R"({a=""})"), HasSubstr("needs a matcher"));
  EXPECT_THAT(SelectorError(R"({a=~".*"})"), HasSubstr("needs a matcher"));
  EXPECT_TRUE(PromMatcher::Parse(R"({a!=""})").ok());
  EXPECT_TRUE(PromMatcher::Parse("m{}").ok());
}

TEST(PromMatcher, RejectsTheNameGivenTwice) {
  EXPECT_THAT(SelectorError(R"(m{__name__="n"})"),
              HasSubstr("at column 3: the metric name is already given (m)"));
}

TEST(PromMatcher, RejectsWhatIsNotASelector) {
  EXPECT_THAT(SelectorError(""),
              HasSubstr("at column 1: expected a metric name or '{', found the end"));
  EXPECT_THAT(SelectorError("9m"), HasSubstr("at column 1: expected a metric name or '{'"));
  EXPECT_THAT(SelectorError(R"(m{a="b"} x)"),
              HasSubstr("at column 10: expected '{' or the end, found 'x'"));
  EXPECT_THAT(SelectorError("m{a=\"b\",,}"),
              HasSubstr("at column 9: expected a label name or '}'"));
  EXPECT_THAT(SelectorError("rate(m[5m])"), HasSubstr("at column 5"));
  EXPECT_THAT(SelectorError(std::string(5000, 'm')), HasSubstr("longer than 4096 bytes"));
}

// ---- PromAgg, intervals, N/A ----------------------------------------------------------------

TEST(PromAgg, ParsesMeanMaxMinSum) {
  EXPECT_EQ(ParsePromAgg("mean").value(), PromAgg::kMean);
  EXPECT_EQ(ParsePromAgg("max").value(), PromAgg::kMax);
  EXPECT_EQ(ParsePromAgg("min").value(), PromAgg::kMin);
  EXPECT_EQ(ParsePromAgg("sum").value(), PromAgg::kSum);
  EXPECT_EQ(kDefaultPromAgg, PromAgg::kMean);
  EXPECT_STREQ(PromAggName(PromAgg::kSum), "sum");
}

TEST(PromAgg, RejectsOthersListingTheAllowed) {
  for (const char* bad : {"", "last", "Mean", "p99"}) {
    const auto r = ParsePromAgg(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr("is not one of mean, max, min, sum"));
  }
  EXPECT_THAT(ParsePromAgg("avg").status().message(), HasSubstr("\"mean\" is the average"));
}

TEST(PromInterval, ParsesDurations) {
  EXPECT_EQ(ParsePromInterval("5s").value(), 5000);
  EXPECT_EQ(ParsePromInterval("500ms").value(), 500);
  EXPECT_EQ(ParsePromInterval("100ms").value(), 100);
  EXPECT_EQ(ParsePromInterval("1m").value(), 60000);
  EXPECT_EQ(ParsePromInterval("1m30s").value(), 90000);
  EXPECT_EQ(ParsePromInterval("1s500ms").value(), 1500);
  EXPECT_EQ(ParsePromInterval("1h").value(), 3600000);
}

TEST(PromInterval, RejectsNamingFieldValueAndWhatIsAllowed) {
  auto message = [](std::string_view t) {
    const auto r = ParsePromInterval(t);
    EXPECT_FALSE(r.ok()) << t;
    return r.status().message();
  };
  EXPECT_THAT(message("5"), HasSubstr("every: \"5\" needs a unit"));
  EXPECT_THAT(message("5x"), HasSubstr("every: \"5x\" has an unknown unit \"x\""));
  EXPECT_THAT(message("50ms"), HasSubstr("every: \"50ms\" is out of range: allowed 100ms to 1h"));
  EXPECT_THAT(message("0s"), HasSubstr("out of range"));
  EXPECT_THAT(message("61m"), HasSubstr("out of range"));
  EXPECT_THAT(message("99999999999s"), HasSubstr("out of range"));
  EXPECT_THAT(message("1.5s"), HasSubstr("every: \"1.5s\" is not a duration: whole numbers only"));
  EXPECT_THAT(message("30s1m"), HasSubstr("is not a duration"));
  EXPECT_THAT(message("5s5s"), HasSubstr("is not a duration"));
  EXPECT_THAT(message("-5s"), HasSubstr("is not a duration"));
  EXPECT_THAT(message(" 5s"), HasSubstr("is not a duration"));
  EXPECT_THAT(message(""), HasSubstr("every: empty; expected a duration such as \"5s\""));
}

TEST(PromNa, DropsDcgmSentinelsNaNAndInfinities) {
  // The int64 sentinels as exposition text gives them, through the parser.
  const PromScrape s = Parse(
      "blank 9223372036854775792\nnot_found 9223372036854775793\n"
      "not_supported 9223372036854775794\nnot_permissioned 9223372036854775795\n"
      "fp64_blank 140737488355328.000000\nfp64_not_permissioned 140737488355331\n");
  ASSERT_EQ(s.points.size(), 6u);
  for (const auto& p : s.points) EXPECT_TRUE(PromValueIsNa(p.value)) << p.name;
  EXPECT_TRUE(PromValueIsNa(std::nan("")));
  EXPECT_TRUE(PromValueIsNa(std::numeric_limits<double>::infinity()));
  EXPECT_TRUE(PromValueIsNa(-std::numeric_limits<double>::infinity()));
  EXPECT_FALSE(PromValueIsNa(0));
  EXPECT_FALSE(PromValueIsNa(97));
  EXPECT_FALSE(PromValueIsNa(9223372036854774784.0));  // the largest double below 2^63
  EXPECT_FALSE(PromValueIsNa(140737488355328.5));
  EXPECT_FALSE(PromValueIsNa(140737488355332.0));
  // DCGM_FT_INT32_BLANK is a plausible energy reading in mJ: kept.
  EXPECT_FALSE(PromValueIsNa(2147483632.0));
}

// ---- PromSampler ----------------------------------------------------------------------------

TEST(PromSampler, MeanOfGpuZeroAndOneUtilization) {
  PromSampler s(Matcher(R"(DCGM_FI_DEV_GPU_UTIL{gpu=~"0|1"})"), PromAgg::kMean);
  const auto a = s.Add(ParseFixture("dcgm_exporter_scrape1.txt"), 0);
  ASSERT_TRUE(a.value.has_value()) << a.why_none;
  EXPECT_EQ(*a.value, 95.5);  // (97 + 94) / 2
  EXPECT_EQ(a.series, 2);
  const auto b = s.Add(ParseFixture("dcgm_exporter_scrape2.txt"), 5000);
  ASSERT_TRUE(b.value.has_value()) << b.why_none;
  EXPECT_EQ(*b.value, 93.5);  // (98 + 89) / 2
}

TEST(PromSampler, MaxMinSumAndMeanOverEightGpus) {
  const PromScrape scrape = ParseFixture("dcgm_exporter_scrape1.txt");
  auto one = [&](PromAgg agg) {
    PromSampler s(Matcher("DCGM_FI_DEV_GPU_UTIL"), agg);
    const auto o = s.Add(scrape, 0);
    EXPECT_EQ(o.series, 8);
    return o.value.value_or(-1);
  };
  // 97 94 98 96 99 95 97 93
  EXPECT_EQ(one(PromAgg::kMax), 99);
  EXPECT_EQ(one(PromAgg::kMin), 93);
  EXPECT_EQ(one(PromAgg::kSum), 769);
  EXPECT_EQ(one(PromAgg::kMean), 96.125);
}

TEST(PromSampler, DcgmNotSupportedSentinelIsDropped) {
  PromSampler mean(Matcher("DCGM_FI_DEV_MEMORY_TEMP"), PromAgg::kMean);
  const auto o = mean.Add(ParseFixture("dcgm_exporter_scrape1.txt"), 0);
  ASSERT_TRUE(o.value.has_value()) << o.why_none;
  EXPECT_EQ(o.series, 7);
  EXPECT_THAT(*o.value, DoubleNear((48 + 50 + 47 + 49 + 51 + 46 + 48) / 7.0, 1e-12));
  PromSampler max(Matcher("DCGM_FI_DEV_MEMORY_TEMP"), PromAgg::kMax);
  EXPECT_EQ(max.Add(ParseFixture("dcgm_exporter_scrape1.txt"), 0).value, 51);
}

TEST(PromSampler, OnlyNaValuesGiveNoSampleAndSaySo) {
  PromSampler s(Matcher(R"(DCGM_FI_DEV_MEMORY_TEMP{gpu="3"})"), PromAgg::kMean);
  const auto o = s.Add(ParseFixture("dcgm_exporter_scrape1.txt"), 0);
  EXPECT_FALSE(o.value.has_value());
  EXPECT_EQ(o.series, 0);
  EXPECT_EQ(o.why_none, "no value from 1 matching series: 1 is N/A");
}

TEST(PromSampler, CounterBecomesARate) {
  PromSampler sum(Matcher("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"), PromAgg::kSum);
  PromSampler pair(Matcher(R"(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=~"0|1"})"), PromAgg::kMean);
  const PromScrape first = ParseFixture("dcgm_exporter_scrape1.txt");
  const PromScrape second = ParseFixture("dcgm_exporter_scrape2.txt");
  const auto a = sum.Add(first, 1000);
  EXPECT_FALSE(a.value.has_value());
  EXPECT_EQ(a.why_none,
            "no value from 8 matching series: 8 counters are on a first scrape (a rate needs two)");
  EXPECT_FALSE(pair.Add(first, 1000).value.has_value());
  // mJ over 5 s: (3250000 + 3100000 + 3350000 + 3200000 + 3450000 + 3150000 + 3300000 +
  // 3000000) / 5 = 5160000 mJ/s, i.e. 5160 W.
  const auto b = sum.Add(second, 6000);
  ASSERT_TRUE(b.value.has_value()) << b.why_none;
  EXPECT_EQ(b.series, 8);
  EXPECT_THAT(*b.value, DoubleNear(5160000, 1e-6));
  const auto p = pair.Add(second, 6000);
  ASSERT_TRUE(p.value.has_value()) << p.why_none;
  EXPECT_THAT(*p.value, DoubleNear((650000 + 620000) / 2.0, 1e-6));
}

// node_exporter, recorded: the scrapes' node_time_seconds are 1796474165.281743 and
// 1796474167.5279644, so 2246 ms apart in whole milliseconds.
constexpr int64_t kNodeAt1 = 1796474165282, kNodeAt2 = 1796474167528;

TEST(PromSampler, NodeExporterIdleCpuSecondsSummedOverCpusAsARate) {
  PromSampler s(Matcher(R"(node_cpu_seconds_total{mode="idle"})"), PromAgg::kSum);
  EXPECT_FALSE(s.Add(ParseFixture("node_exporter_1.5.0_scrape1.txt"), kNodeAt1).value);
  const auto o = s.Add(ParseFixture("node_exporter_1.5.0_scrape2.txt"), kNodeAt2);
  ASSERT_TRUE(o.value.has_value()) << o.why_none;
  EXPECT_EQ(o.series, 2);
  // cpu 0: 13117.57 -> 13117.76; cpu 1: 12812.8 -> 12813.
  EXPECT_THAT(*o.value, DoubleNear((0.19 + 0.2) / 2.246, 1e-9));
}

TEST(PromSampler, NodeExporterContextSwitchesAndAnUnchangedCounter) {
  const PromScrape first = ParseFixture("node_exporter_1.5.0_scrape1.txt");
  const PromScrape second = ParseFixture("node_exporter_1.5.0_scrape2.txt");
  PromSampler cs(Matcher("node_context_switches_total"), PromAgg::kMean);
  PromSampler rx(Matcher(R"(node_network_receive_bytes_total{device="eth0"})"), PromAgg::kMean);
  PromSampler load(Matcher("node_load1"), PromAgg::kMean);
  cs.Add(first, kNodeAt1);
  rx.Add(first, kNodeAt1);
  EXPECT_EQ(load.Add(first, kNodeAt1).value, 4.8);
  // 2.0438322e+07 -> 2.0466628e+07
  EXPECT_THAT(cs.Add(second, kNodeAt2).value.value_or(-1), DoubleNear(28306 / 2.246, 1e-6));
  // 7.5540358e+07 in both: a rate of 0, not a missing sample.
  EXPECT_EQ(rx.Add(second, kNodeAt2).value, 0);
  EXPECT_EQ(load.Add(second, kNodeAt2).value, 5.14);  // a gauge is read as is
}

TEST(PromSampler, CounterResetGivesNoSampleForThatSeriesThatInterval) {
  PromSampler s(Matcher("jobs_total"), PromAgg::kSum);
  const auto scrape = [](double a, double b) {
    return Parse("jobs_total{q=\"a\"} " + std::to_string(a) + "\njobs_total{q=\"b\"} " +
                 std::to_string(b) + "\n");
  };
  EXPECT_FALSE(s.Add(scrape(100, 100), 0).value);
  const auto reset = s.Add(scrape(50, 300), 10000);  // a restarted: only b's 20/s
  ASSERT_TRUE(reset.value.has_value()) << reset.why_none;
  EXPECT_EQ(*reset.value, 20);
  EXPECT_EQ(reset.series, 1);
  const auto after = s.Add(scrape(150, 400), 20000);  // a counts again from 50
  EXPECT_EQ(after.value, 20);
  EXPECT_EQ(after.series, 2);
  const auto both = s.Add(scrape(1, 1), 30000);
  EXPECT_FALSE(both.value.has_value());
  EXPECT_EQ(both.why_none, "no value from 2 matching series: 2 counters were reset");
}

TEST(PromSampler, NaCounterReadingKeepsThePreviousOne) {
  PromSampler s(Matcher("c_total"), PromAgg::kMean);
  s.Add(Parse("c_total 100\n"), 0);
  EXPECT_EQ(s.Add(Parse("c_total NaN\n"), 5000).why_none,
            "no value from 1 matching series: 1 is N/A");
  EXPECT_EQ(s.Add(Parse("c_total 200\n"), 10000).value, 10);
}

TEST(PromSampler, SeriesMissingFromAScrapeStartsOver) {
  PromSampler s(Matcher("c_total"), PromAgg::kMean);
  s.Add(Parse("c_total 100\n"), 0);
  EXPECT_EQ(s.Add(Parse("other 1\n"), 5000).why_none, "no series matches c_total");
  EXPECT_FALSE(s.Add(Parse("c_total 200\n"), 10000).value.has_value());
  EXPECT_EQ(s.Add(Parse("c_total 250\n"), 15000).value, 10);
}

TEST(PromSampler, NoTimeSinceThePreviousScrapeGivesNoRate) {
  PromSampler s(Matcher("c_total"), PromAgg::kMean);
  s.Add(Parse("c_total 100\n"), 5000);
  EXPECT_EQ(s.Add(Parse("c_total 110\n"), 5000).why_none,
            "no value from 1 matching series: 1 counter has no time since the previous scrape");
  EXPECT_EQ(s.Add(Parse("c_total 120\n"), 6000).value, 10);
}

TEST(PromSampler, SaysWhenNothingMatchesOrTheScrapeIsEmpty) {
  PromSampler s(Matcher(R"(DCGM_FI_DEV_GPU_UTIL{gpu="9"})"), PromAgg::kMean);
  EXPECT_EQ(s.Add(ParseFixture("dcgm_exporter_scrape1.txt"), 0).why_none,
            R"(no series matches DCGM_FI_DEV_GPU_UTIL{gpu="9"})");
  EXPECT_EQ(s.Add(Parse(""), 1000).why_none, "the scrape holds no series");
}

TEST(PromSampler, ARepeatedSeriesCountsOnce) {
  PromSampler s(Matcher("g"), PromAgg::kMean);
  const auto o = s.Add(Parse("g{a=\"1\"} 10\ng{a=\"1\"} 30\ng{a=\"2\"} 20\n"), 0);
  EXPECT_EQ(o.value, 15);
  EXPECT_EQ(o.series, 2);
}

TEST(PromSampler, AnOverflowingSumGivesNoValueButTheMeanIsKept) {
  // Large positive values are DCGM sentinels (>= 2^63); large negative ones are not.
  const PromScrape big = Parse("g{a=\"1\"} -1e308\ng{a=\"2\"} -1e308\n");
  PromSampler sum(Matcher("g"), PromAgg::kSum);
  const auto o = sum.Add(big, 0);
  EXPECT_FALSE(o.value.has_value());
  EXPECT_EQ(o.why_none, "the sum of 2 series is out of the range of a double");
  PromSampler mean(Matcher("g"), PromAgg::kMean);
  EXPECT_EQ(mean.Add(big, 0).value, -1e308);
}

TEST(PromSampler, HistogramBucketsBecomeRates) {
  PromSampler s(Matcher(R"(rpc_seconds_bucket{le="+Inf"})"), PromAgg::kSum);
  const std::string head = "# TYPE rpc_seconds histogram\n";
  s.Add(Parse(head + "rpc_seconds_bucket{le=\"+Inf\"} 9\n"), 0);
  EXPECT_EQ(s.Add(Parse(head + "rpc_seconds_bucket{le=\"+Inf\"} 29\n"), 4000).value, 5);
}

// ---- PromUrl and HTTP -----------------------------------------------------------------------

TEST(PromUrl, ReadsHostPortAndPath) {
  const PromUrl u = ParsePromUrl("http://localhost:9400/metrics").value();
  EXPECT_EQ(u.host, "localhost");
  EXPECT_EQ(u.port, 9400);
  EXPECT_EQ(u.path, "/metrics");
  const PromUrl d = ParsePromUrl("HTTP://node1").value();
  EXPECT_EQ(d.host, "node1");
  EXPECT_EQ(d.port, 80);
  EXPECT_EQ(d.path, "/metrics");
  EXPECT_EQ(ParsePromUrl("http://127.0.0.1:9100/").value().path, "/");
  EXPECT_EQ(ParsePromUrl("http://h:1/m?collect[]=cpu#x").value().path, "/m?collect[]=cpu");
  EXPECT_EQ(ParsePromUrl("http://h:1?x=1").value().path, "/metrics?x=1");
  const PromUrl v6 = ParsePromUrl("http://[::1]:9400/metrics").value();
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, 9400);
}

TEST(PromUrl, RefusesHttpsClearly) {
  const auto r = ParsePromUrl("https://localhost:9400/metrics");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("https is not supported"));
}

TEST(PromUrl, RejectsWhatIsNotAPlainHttpUrl) {
  const std::pair<const char*, const char*> cases[] = {
      {"localhost:9400/metrics", "has no scheme"},
      {"ftp://h/", "scheme \"ftp\" is not supported"},
      {"http://:9400/", "has no valid host"},
      {"http://h:0/", "port \"0\" is not a number from 1 to 65535"},
      {"http://h:65536/", "is not a number from 1 to 65535"},
      {"http://h:/", "is not a number"},
      {"http://h:x/", "is not a number"},
      {"http://u:p@h/", "credentials in the URL are not supported"},
      {"http://h/a b", "a blank or control character at column 11"},
      {"http://h/\r\nX: y", "a blank or control character"},
      {"http://::1:9400/", "an IPv6 host goes in brackets"},
      {"http://[::1/", "no closing ']'"},
      {"http://[zz]/", "not an IPv6 address"},
  };
  for (const auto& [url, why] : cases) {
    const auto r = ParsePromUrl(url);
    ASSERT_FALSE(r.ok()) << url;
    EXPECT_THAT(r.status().message(), HasSubstr(why)) << url;
  }
}

TEST(PromUrl, RequestAsksForTheTextFormatUncompressed) {
  EXPECT_EQ(PromHttpRequest(ParsePromUrl("http://localhost:9400/metrics").value()),
            "GET /metrics HTTP/1.1\r\nHost: localhost:9400\r\nUser-Agent: tunectl-agent\r\n"
            "Accept: text/plain;version=0.0.4\r\nAccept-Encoding: identity\r\n"
            "Connection: close\r\n\r\n");
  EXPECT_THAT(PromHttpRequest(ParsePromUrl("http://[::1]/m").value()),
              HasSubstr("GET /m HTTP/1.1\r\nHost: [::1]\r\n"));
}

TEST(HttpResponse, HonoursContentLength) {
  EXPECT_EQ(HttpResponseBody("HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
                             "Content-Length: 5\r\n\r\nhelloEXTRA")
                .value(),
            "hello");
  const auto short_body = HttpResponseBody("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello");
  ASSERT_FALSE(short_body.ok());
  EXPECT_THAT(short_body.status().message(),
              HasSubstr("truncated: Content-Length 10, got 5 bytes"));
  EXPECT_FALSE(
      HttpResponseBody("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!")
          .ok());
  EXPECT_FALSE(HttpResponseBody("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n").ok());
}

TEST(HttpResponse, ReadsToTheEndWithoutALength) {
  EXPECT_EQ(HttpResponseBody("HTTP/1.0 200 OK\r\nServer: x\r\n\r\nup 1\n").value(), "up 1\n");
  EXPECT_EQ(HttpResponseBody("HTTP/1.0 200 OK\n\nup 1\n").value(), "up 1\n");
  EXPECT_EQ(HttpResponseBody("HTTP/1.1 200\r\n\r\n").value(), "");
}

TEST(HttpResponse, DecodesChunkedTransferEncoding) {
  EXPECT_EQ(HttpResponseBody("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                             "Content-Length: 999\r\n\r\n"
                             "5\r\nhello\r\nA;ext=1\r\n, world!!!\r\n0\r\nX-Trailer: y\r\n\r\n")
                .value(),
            "hello, world!!!");
  const auto truncated =
      HttpResponseBody("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nshort");
  ASSERT_FALSE(truncated.ok());
  EXPECT_THAT(truncated.status().message(), HasSubstr("truncated"));
  EXPECT_THAT(HttpResponseBody("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
                  .status()
                  .message(),
              HasSubstr("bad chunk size line \"zz\""));
  EXPECT_THAT(
      HttpResponseBody("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n")
          .status()
          .message(),
      HasSubstr("not followed by CRLF"));
}

TEST(HttpResponse, ChunkedNodeExporterFixtureRoundTrips) {
  const std::string text = Fixture("node_exporter_1.5.0_scrape1.txt");
  std::string raw =
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
      "Transfer-Encoding: chunked\r\n\r\n";
  for (size_t i = 0; i < text.size(); i += 4096) {
    const std::string part = text.substr(i, 4096);
    char size[16];
    std::snprintf(size, sizeof size, "%zx", part.size());
    raw += std::string(size) + "\r\n" + part + "\r\n";
  }
  raw += "0\r\n\r\n";
  const auto body = HttpResponseBody(raw);
  ASSERT_TRUE(body.ok()) << body.status().message();
  EXPECT_EQ(*body, text);
  EXPECT_EQ(Parse(*body).points.size(), 503u);
}

TEST(HttpResponse, NamesTheStatusLineOfAFailure) {
  const auto r = HttpResponseBody("HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("\"HTTP/1.1 404 Not Found\""));
  EXPECT_THAT(HttpResponseBody("HTTP/1.1 503 Service Unavailable\r\n\r\n").status().message(),
              HasSubstr("503 Service Unavailable"));
}

TEST(HttpResponse, SkipsAnInterimContinue) {
  EXPECT_EQ(HttpResponseBody("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"
                             "Content-Length: 2\r\n\r\nok")
                .value(),
            "ok");
}

TEST(HttpResponse, RejectsMalformedOrCompressedResponses) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "ends before its status line does"},
      {"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP/1.x response: \"SSH-2.0-OpenSSH\""},
      {"HTTP/2 200\r\n\r\n", "not an HTTP/1.x response"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n", "ends inside its headers"},
      {"HTTP/1.1 200 OK\r\nno colon\r\n\r\n", "malformed HTTP header line \"no colon\""},
      {"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n\x1f\x8b", "Content-Encoding \"gzip\""},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "Transfer-Encoding \"gzip\""},
  };
  for (const auto& [raw, why] : cases) {
    const auto r = HttpResponseBody(raw);
    ASSERT_FALSE(r.ok()) << raw;
    EXPECT_THAT(r.status().message(), HasSubstr(why)) << raw;
  }
}

}  // namespace
}  // namespace tunectl
