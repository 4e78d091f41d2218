#include "core/statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "tests/unit/oracle_vectors.h"

namespace tunectl {
namespace {

void ExpectRel(double got, double want, double rel, const std::string& what) {
  EXPECT_NEAR(got, want, rel * std::max(1e-300, std::fabs(want))) << what;
}

TEST(StudentT, CdfMatchesScipy) {
  nlohmann::json cases;
  ASSERT_TRUE(LoadOracleVectors("t_cdf", &cases));
  ASSERT_GT(cases.size(), 50u);
  for (const auto& c : cases)
    ExpectRel(StudentTCdf(c["t"], c["df"]), c["cdf"], 1e-9,
              "t=" + c["t"].dump() + " df=" + c["df"].dump());
}

// Analyses run on several threads at once (run finishes, the regression watch): the same values
// from each, and nothing shared written (scripts/test-sanitize thread reports a race here).
TEST(StudentT, CdfIsTheSameFromThreadsAtOnce) {
  std::vector<double> want;
  for (int i = 0; i < 200; ++i) want.push_back(StudentTCdf(-4 + 0.04 * i, 3 + i % 20));
  std::vector<std::vector<double>> got(4);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&got, t] {
      for (int rep = 0; rep < 20; ++rep) {
        got[t].clear();
        for (int i = 0; i < 200; ++i) got[t].push_back(StudentTCdf(-4 + 0.04 * i, 3 + i % 20));
      }
    });
  for (auto& t : ts) t.join();
  for (const auto& g : got) EXPECT_EQ(g, want);
}

TEST(StudentT, QuantileMatchesScipy) {
  nlohmann::json cases;
  ASSERT_TRUE(LoadOracleVectors("t_quantile", &cases));
  for (const auto& c : cases) {
    const std::string what = "p=" + c["p"].dump() + " df=" + c["df"].dump();
    const double got = StudentTQuantile(c["p"], c["df"]), want = c["q"];
    // The median (p = 0.5) is 0 by symmetry; scipy's ~7e-17 there is rounding noise, so near 0 the
    // tolerance is absolute.
    if (std::fabs(want) < 1e-12)
      EXPECT_NEAR(got, want, 1e-12) << what;
    else
      ExpectRel(got, want, 1e-8, what);
  }
}

TEST(Welch, TDfPAndIntervalMatchScipy) {
  nlohmann::json cases;
  ASSERT_TRUE(LoadOracleVectors("welch", &cases));
  for (const auto& c : cases) {
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

namespace tunectl {
namespace {

TEST(MannWhitney, UAndPMatchScipyExactAndAsymptotic) {
  nlohmann::json cases;
  ASSERT_TRUE(LoadOracleVectors("mannwhitney", &cases));
  int exact = 0;
  for (const auto& c : cases) {
    MannWhitneyResult r =
        MannWhitney(c["x"].get<std::vector<double>>(), c["y"].get<std::vector<double>>());
    EXPECT_DOUBLE_EQ(r.u, c["u"].get<double>());
    EXPECT_NEAR(r.p, c["p"].get<double>(), 1e-9 * std::max(1.0, c["p"].get<double>()))
        << c["x"].dump();
    exact += r.exact;
  }
  EXPECT_GE(exact, 3);
  EXPECT_LT(exact, static_cast<int>(cases.size()));
}

TEST(MultipleTesting, HolmAndBenjaminiHochbergMatchReference) {
  nlohmann::json cases;
  ASSERT_TRUE(LoadOracleVectors("adjust", &cases));
  for (const auto& c : cases) {
    auto p = c["p"].get<std::vector<double>>();
    auto holm = HolmAdjust(p), bh = BenjaminiHochbergAdjust(p);
    for (size_t i = 0; i < p.size(); ++i) {
      EXPECT_NEAR(holm[i], c["holm"][i].get<double>(), 1e-12);
      EXPECT_NEAR(bh[i], c["bh"][i].get<double>(), 1e-12);
    }
  }
}

TEST(Bootstrap, BcaRatioOfMediansMatchesScipyWithinMonteCarloError) {
  nlohmann::json cases;
  ASSERT_TRUE(LoadOracleVectors("bootstrap", &cases));
  for (const auto& c : cases) {
    auto x = c["x"].get<std::vector<double>>(), y = c["y"].get<std::vector<double>>();
    Interval ci = BootstrapRatioOfMediansBca(x, y, 0.05, 20000, 3);
    const double lo = c["low"], hi = c["high"], width = hi - lo;
    EXPECT_NEAR(ci.lo, lo, 0.1 * width) << c["x"].dump();
    EXPECT_NEAR(ci.hi, hi, 0.1 * width);
    // seeded: reproducible
    Interval again = BootstrapRatioOfMediansBca(x, y, 0.05, 20000, 3);
    EXPECT_EQ(ci.lo, again.lo);
  }
}

}  // namespace
}  // namespace tunectl
