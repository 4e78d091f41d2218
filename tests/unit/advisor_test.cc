#include "core/advisor.h"

#include <gtest/gtest.h>

namespace tunectl {
namespace {

TEST(TensorCoreAlignment, FiveThousandOneHundredTwentyIsAMultipleOfSixtyFour) {
  EXPECT_EQ(TensorCoreAlignment(5120), 64);
  EXPECT_EQ(TensorCoreAlignment(5128), 8);
  EXPECT_EQ(TensorCoreAlignment(50257), 0);
}

}  // namespace
}  // namespace tunectl
