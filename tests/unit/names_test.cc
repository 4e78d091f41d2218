#include "core/names.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/api/request_limits.h"
#include "tunectl/v1/tunectl.pb.h"

namespace tunectl {
namespace {

using ::testing::HasSubstr;

TEST(Names, ScheduleNamesFollowTheWorkloadPattern) {
  EXPECT_TRUE(CheckScheduleName("nightly").ok());
  EXPECT_TRUE(CheckScheduleName("off-peak_2.eu").ok());
  EXPECT_TRUE(CheckScheduleName(std::string(63, 'a')).ok());
  const std::vector<std::string> bad_names = {
      "", "Nightly", "-x", "a b", "x;rm -rf", std::string(64, 'a'), "a\nb"};
  for (const std::string& bad : bad_names) {
    SCOPED_TRACE(bad);
    const Status st = CheckScheduleName(bad);
    EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
    EXPECT_THAT(st.message(), HasSubstr("schedule name"));
    EXPECT_THAT(st.message(), HasSubstr("e.g. nightly"));
  }
  EXPECT_THAT(CheckScheduleName("a\nb").message(), HasSubstr("\"a\\x0ab\""));
}

TEST(Names, LabelsAreKeyValueWordsWithoutBlanksOrSeparators) {
  EXPECT_TRUE(CheckLabel("l", "gpu", "a100").ok());
  EXPECT_TRUE(CheckLabel("l", "topology.kubernetes.io/zone", "eu-west-1a").ok());
  EXPECT_TRUE(CheckLabel("l", "pool", "").ok());
  EXPECT_TRUE(CheckLabel("l", "ib", "mlx5_0:1").ok());
  EXPECT_THAT(CheckLabel("--label", "gpu model", "x").message(),
              HasSubstr("--label: key \"gpu model\" is not a valid label key"));
  EXPECT_THAT(CheckLabel("--label", "gpu", "H100 80GB").message(),
              HasSubstr("--label[gpu]: value \"H100 80GB\" is not a valid label value"));
  EXPECT_FALSE(CheckLabel("l", "gpu", "a=b").ok());
  EXPECT_FALSE(CheckLabel("l", "gpu", "a,b").ok());
  EXPECT_FALSE(CheckLabel("l", "k", std::string(64, 'v')).ok());
}

TEST(RequestLimits, NamesTheFieldItsSizeAndTheLimit) {
  v1::CreateHypothesisRequest h;
  h.set_workload("demo");
  h.set_statement(std::string(16 << 10, 's'));
  EXPECT_TRUE(CheckRequestLimits(h).ok());
  h.set_statement(std::string((16 << 10) + 1, 's'));
  const Status st = CheckRequestLimits(h);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(st.message(), "statement: 16385 bytes; allowed at most 16384");

  v1::CreateHypothesisRequest names;
  names.set_workload(std::string(1025, 'w'));
  EXPECT_THAT(CheckRequestLimits(names).message(), HasSubstr("workload: 1025 bytes"));
}

TEST(RequestLimits, CountsRepeatedFieldsAndChecksEachItem) {
  v1::RunExperimentRequest r;
  for (int i = 0; i < 64; ++i) r.add_vary("num_workers=8");
  EXPECT_TRUE(CheckRequestLimits(r).ok());
  r.add_vary("x=1");
  EXPECT_EQ(CheckRequestLimits(r).message(), "vary: 65 items; allowed at most 64");
  v1::RunExperimentRequest one;
  one.add_vary("ok=1");
  one.add_vary(std::string(2000, 'v'));
  EXPECT_EQ(CheckRequestLimits(one).message(), "vary[1]: 2000 bytes; allowed at most 1024");
}

TEST(RequestLimits, AWorkloadSpecMayBeUpToAMebibyte) {
  v1::ApplyWorkloadRequest a;
  a.set_spec(std::string(1 << 20, '#'));
  EXPECT_TRUE(CheckRequestLimits(a).ok());
  a.set_spec(std::string((1 << 20) + 1, '#'));
  EXPECT_THAT(CheckRequestLimits(a).message(), HasSubstr("spec: 1048577 bytes"));
}

}  // namespace
}  // namespace tunectl
