#include "core/template.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tunectl {
namespace {

TEST(Template, ExpandsPlaceholders) {
  auto r = ExpandTemplate("--workers={num_workers} x{a}{b}",
                          {{"num_workers", "8"}, {"a", "1"}, {"b", "2"}}, "f");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "--workers=8 x12");
}

TEST(Template, LeavesJsonBracesAndEscapesAlone) {
  auto r = ExpandTemplate(R"({"workers": {n}, "x": {{n}}, "s": "{ n }"})", {{"n", "4"}}, "f");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, R"({"workers": 4, "x": {n}, "s": "{ n }"})");
}

TEST(Template, MissingValueNamesFieldAndPlaceholder) {
  auto r = ExpandTemplate("{a}{zz}", {{"a", "1"}}, "env.X");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "env.X: placeholder {zz} has no value");
}

TEST(Template, ListsPlaceholderNamesInOrder) {
  EXPECT_EQ(PlaceholderNames("{b} {a} {{c}} {b}"), (std::vector<std::string>{"b", "a", "b"}));
  EXPECT_TRUE(PlaceholderNames("{1x} {} { a}").empty());
}

TEST(BindLaunch, BindsArgvEnvAndFiles) {
  WorkloadSpec s;
  s.command = {"train", "--nw", "{nw}"};
  s.env = {{"LOG", "{li}"}};
  s.files = {{"cfg.json", R"({"nw": {nw}})"}};
  auto l = BindLaunch(s, {{"nw", "8"}, {"li", "5"}});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->argv, (std::vector<std::string>{"train", "--nw", "8"}));
  EXPECT_EQ(l->env.at("LOG"), "5");
  EXPECT_EQ(l->files.at("cfg.json"), R"({"nw": 8})");
}

}  // namespace
}  // namespace tunectl
