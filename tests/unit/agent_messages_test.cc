#include "core/agent_messages.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace tunectl {
namespace {

using ::testing::HasSubstr;

TEST(CheckAgentHello, AcceptsWhatAgentsSend) {
  EXPECT_TRUE(CheckAgentHello("gpu-node-17.example.com", 8, {{"pool", "cpu"}, {"gpu", ""}}).ok());
  EXPECT_TRUE(CheckAgentHello("ノード-1", 0, {}).ok());  // UTF-8 is text, not control
}

TEST(CheckAgentHello, RefusesANulInTheNameThatTheDatabaseWouldCutOff) {
  // libpq reads a text parameter up to its first NUL: "node-1\0x" would register as "node-1".
  const Status st = CheckAgentHello(std::string("node-1\0x", 8), 1, {});
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("Hello.name: \"node-1\\x00x\" contains a control character"));
}

TEST(CheckAgentHello, RefusesEmptyLongOrControlNamesAndLabels) {
  EXPECT_THAT(CheckAgentHello("", 1, {}).message(), HasSubstr("Hello.name: empty"));
  EXPECT_THAT(CheckAgentHello(std::string(254, 'n'), 1, {}).message(),
              HasSubstr("is 254 bytes; allowed at most 253"));
  EXPECT_TRUE(CheckAgentHello(std::string(253, 'n'), 1, {}).ok());
  EXPECT_THAT(CheckAgentHello("n", 1, {{std::string(64, 'k'), ""}}).message(),
              HasSubstr("is not a valid label key"));
  EXPECT_TRUE(CheckAgentHello("n", 1, {{std::string(63, 'k'), std::string(63, 'v')}}).ok());
  EXPECT_THAT(CheckAgentHello("n\nfake log line", 1, {}).message(), HasSubstr("control character"));
  EXPECT_THAT(CheckAgentHello("n", 1, {{"", "x"}}).message(),
              HasSubstr("Hello.labels: key \"\" is not a valid label key"));
  EXPECT_THAT(CheckAgentHello("n", 1, {{"pool", std::string("c\0pu", 4)}}).message(),
              HasSubstr("Hello.labels[pool]: value \"c\\x00pu\""));
  LabelMap many;
  for (int i = 0; i < 65; ++i) many["k" + std::to_string(i)] = "v";
  EXPECT_THAT(CheckAgentHello("n", 1, many).message(), HasSubstr("65 labels; allowed at most 64"));
}

TEST(CheckAgentHello, RefusesSlotsOutOfRange) {
  EXPECT_THAT(CheckAgentHello("n", -1, {}).message(),
              HasSubstr("Hello.slots: -1 is out of range; allowed 0..4096"));
  EXPECT_FALSE(CheckAgentHello("n", 4097, {}).ok());
  EXPECT_TRUE(CheckAgentHello("n", 4096, {}).ok());
}

TEST(CheckSampleMetric, AcceptsMetricsAndSkipMarks) {
  EXPECT_TRUE(CheckSampleMetric("samples_per_s").ok());
  EXPECT_TRUE(CheckSampleMetric("skip:checkpoint").ok());
}

TEST(CheckSampleMetric, RefusesANulThatPostgresRefusesInCopy) {
  const Status st = CheckSampleMetric(std::string("loss\0", 5));
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("MetricBatch.samples.metric: \"loss\\x00\""));
  EXPECT_FALSE(CheckSampleMetric("").ok());
  EXPECT_FALSE(CheckSampleMetric(std::string(300, 'm')).ok());
}

}  // namespace
}  // namespace tunectl
