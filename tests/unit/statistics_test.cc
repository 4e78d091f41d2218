#include "core/statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

namespace tunectl {
namespace {

nlohmann::json Vectors() {
  std::ifstream in(std::string(TUNECTL_SOURCE_DIR) + "/tests/oracle/vectors.json");
  EXPECT_TRUE(in) << "tests/oracle/vectors.json missing";
  return nlohmann::json::parse(in);
}

void ExpectRel(double got, double want, double rel, const std::string& what) {
  EXPECT_NEAR(got, want, rel * std::max(1e-300, std::fabs(want))) << what;
}

TEST(StudentT, CdfMatchesScipy) {
  auto v = Vectors();
  ASSERT_GT(v["t_cdf"].size(), 50u);
  for (const auto& c : v["t_cdf"])
    ExpectRel(StudentTCdf(c["t"], c["df"]), c["cdf"], 1e-9,
              "t=" + c["t"].dump() + " df=" + c["df"].dump());
}

TEST(StudentT, QuantileMatchesScipy) {
  for (const auto& c : Vectors()["t_quantile"])
    ExpectRel(StudentTQuantile(c["p"], c["df"]), c["q"], 1e-8,
              "p=" + c["p"].dump() + " df=" + c["df"].dump());
}

TEST(Welch, TDfPAndIntervalMatchScipy) {
  for (const auto& c : Vectors()["welch"]) {
    WelchResult w = Welch(c["x"].get<std::vector<double>>(), c["y"].get<std::vector<double>>());
    ASSERT_TRUE(w.valid);
    ExpectRel(w.t, c["t"], 1e-10, "t");
    ExpectRel(w.df, c["df"], 1e-10, "df");
    ExpectRel(w.p, c["p"], 1e-8, "p");
    Interval ci = WelchInterval(w, 0.05);
    ExpectRel(ci.lo, c["lo"], 1e-8, "lo");
    ExpectRel(ci.hi, c["hi"], 1e-8, "hi");
  }
}

TEST(Welch, InvalidBelowTwoValuesAndExactForConstants) {
  EXPECT_FALSE(Welch({1.0}, {1.0, 2.0}).valid);
  WelchResult same = Welch({2, 2, 2}, {2, 2});
  EXPECT_TRUE(same.valid);
  EXPECT_EQ(same.p, 1);
  WelchResult diff = Welch({2, 2, 2}, {3, 3});
  EXPECT_EQ(diff.p, 0);
  EXPECT_EQ(WelchInterval(diff, 0.05).lo, 1);
}

TEST(Normal, QuantileInvertsCdf) {
  EXPECT_NEAR(NormalQuantile(0.975), 1.959963984540054, 1e-9);
  EXPECT_NEAR(NormalCdf(-1.2815515655446004), 0.1, 1e-12);
}

}  // namespace
}  // namespace tunectl
