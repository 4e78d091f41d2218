#include "core/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tunectl {
namespace {

TEST(Describe, MatchesHandComputedValues) {
  // values 2,4,4,4,5,5,7,9: mean 5, sample variance 32/7
  Descriptive d = Describe({9, 2, 4, 4, 5, 4, 5, 7});
  EXPECT_EQ(d.n, 8);
  EXPECT_DOUBLE_EQ(d.mean, 5);
  EXPECT_DOUBLE_EQ(d.median, 4.5);
  EXPECT_NEAR(d.stddev, std::sqrt(32.0 / 7.0), 1e-12);
  EXPECT_NEAR(d.cv, std::sqrt(32.0 / 7.0) / 5, 1e-12);
  EXPECT_DOUBLE_EQ(d.min, 2);
  EXPECT_DOUBLE_EQ(d.max, 9);
}

TEST(Describe, IgnoresNonFiniteAndHandlesSmallInputs) {
  Descriptive d = Describe(
      {1, std::numeric_limits<double>::quiet_NaN(), 3, std::numeric_limits<double>::infinity()});
  EXPECT_EQ(d.n, 2);
  EXPECT_DOUBLE_EQ(d.median, 2);
  EXPECT_EQ(Describe({}).n, 0);
  Descriptive one = Describe({7});
  EXPECT_DOUBLE_EQ(one.median, 7);
  EXPECT_DOUBLE_EQ(one.stddev, 0);
}

}  // namespace
}  // namespace tunectl
