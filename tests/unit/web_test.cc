#include "core/web.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tunectl {
namespace {

using ::testing::HasSubstr;

TEST(Web, PercentDecodes) {
  EXPECT_EQ(PercentDecode("a%2Fb%20c+d", true), "a/b c d");
  EXPECT_EQ(PercentDecode("a+b", false), "a+b");
  EXPECT_EQ(PercentDecode("%e2%9c%93", false), "\xe2\x9c\x93");
  EXPECT_EQ(PercentDecode("100%", false), std::nullopt);
  EXPECT_EQ(PercentDecode("%4", false), std::nullopt);
  EXPECT_EQ(PercentDecode("%zz", false), std::nullopt);
  EXPECT_EQ(PercentDecode("a%00b", false), std::nullopt);  // no NUL into a name
}

TEST(Web, ParsesFormsKeepingTheFirstOfARepeatedName) {
  auto f = ParseForm("token=tk_abc%2B1&next=%2Fexperiments%2F3&token=second&empty=&flag");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->at("token"), "tk_abc+1");
  EXPECT_EQ(f->at("next"), "/experiments/3");
  EXPECT_EQ(f->at("empty"), "");
  EXPECT_EQ(f->at("flag"), "");
  EXPECT_TRUE(ParseForm("")->empty());
  auto bad = ParseForm("a=%G1");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("\"a\""));
}

TEST(Web, ReadsTheTokenFromTheHeaderFirstThenTheCookie) {
  EXPECT_EQ(CookieValue("a=1; tunectl_token=tk_x; b=2", "tunectl_token"), "tk_x");
  EXPECT_EQ(CookieValue("xtunectl_token=no", "tunectl_token"), "");
  EXPECT_EQ(CookieValue("tunectl_token=\"q\"", "tunectl_token"), "q");
  EXPECT_EQ(WebToken("Bearer tk_h", "tunectl_token=tk_c"), "tk_h");
  EXPECT_EQ(WebToken("bearer  tk_h ", ""), "tk_h");
  EXPECT_EQ(WebToken("Basic abc", "tunectl_token=tk_c"), "tk_c");
  EXPECT_EQ(WebToken("", "other=1"), "");
}

TEST(Web, TheCookieIsHttpOnlyStrictAndSecureOverTls) {
  const std::string c = TokenCookie("tk_1", true);
  EXPECT_THAT(c, HasSubstr("tunectl_token=tk_1;"));
  EXPECT_THAT(c, HasSubstr("HttpOnly"));
  EXPECT_THAT(c, HasSubstr("SameSite=Strict"));
  EXPECT_THAT(c, HasSubstr("; Secure"));
  EXPECT_THAT(TokenCookie("tk_1", false), ::testing::Not(HasSubstr("Secure")));
  EXPECT_THAT(TokenCookie("", false), HasSubstr("Max-Age=0"));
}

TEST(Web, ALoginSendsTheBrowserOnlyToThisServer) {
  EXPECT_EQ(SafeNext("/experiments/3?x=1"), "/experiments/3?x=1");
  EXPECT_EQ(SafeNext("https://evil.example/"), "/");
  EXPECT_EQ(SafeNext("//evil.example/"), "/");
  EXPECT_EQ(SafeNext("/\\evil.example"), "/");
  EXPECT_EQ(SafeNext("/a\r\nSet-Cookie: x"), "/");
  EXPECT_EQ(SafeNext(""), "/");
}

TEST(Web, EscapesHtml) {
  EXPECT_EQ(HtmlEscape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
}

TEST(Web, ResolvesEachApiPathToItsReadCommand) {
  auto c = ResolveApi("/api/experiments/12", "");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->noun, "experiment");
  EXPECT_EQ(c->verb, "show");
  EXPECT_EQ(c->args.at("id"), "12");

  c = ResolveApi("/api/experiments/12/runs", "");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->noun, "run");
  EXPECT_EQ(c->verb, "list");
  EXPECT_EQ(c->args.at("experiment"), "12");
  EXPECT_EQ(c->args.at("limit"), "0");  // every run unless asked

  c = ResolveApi("/api/workloads/my%2Dmodel/regression", "limit=0");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->noun, "regress");
  EXPECT_EQ(c->args.at("workload"), "my-model");
  EXPECT_EQ(c->args.at("limit"), "0");

  c = ResolveApi("/api/log", "workload=demo&param=num_workers&since=30d&limit=5");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->noun, "log");
  EXPECT_EQ(c->verb, "");
  EXPECT_EQ(c->args.at("param"), "num_workers");
  EXPECT_EQ(c->args.at("since"), "30d");

  c = ResolveApi("/api/runs/9/samples", "metric=samples_per_s&attempt=2&max_points=500");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->noun, "run");
  EXPECT_EQ(c->verb, "samples");
  EXPECT_EQ(
      c->args,
      (std::map<std::string, std::string>{
          {"id", "9"}, {"metric", "samples_per_s"}, {"attempt", "2"}, {"max_points", "500"}}));

  for (const auto& [path, noun, verb] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"/api/workloads", "workload", "list"},
           {"/api/workloads/demo", "workload", "show"},
           {"/api/workloads/demo/config", "config", "show"},
           {"/api/workloads/demo/goal", "goal", "show"},
           {"/api/baselines", "baseline", "list"},
           {"/api/baselines/3", "baseline", "show"},
           {"/api/baselines/3/runs", "run", "list"},
           {"/api/hypotheses/4", "hypothesis", "show"},
           {"/api/experiments", "experiment", "list"},
           {"/api/runs/9", "run", "show"},
           {"/api/batches", "batch", "list"},
           {"/api/batches/2", "batch", "show"},
           {"/api/schedules", "schedule", "list"},
           {"/api/agents", "agent", "list"},
           {"/api/whoami", "auth", "whoami"},
       }) {
    auto r = ResolveApi(path, "");
    ASSERT_TRUE(r.ok()) << path << ": " << r.status().message();
    EXPECT_EQ(r->noun, noun) << path;
    EXPECT_EQ(r->verb, verb) << path;
  }
}

TEST(Web, RefusesWhatIsNotARoute) {
  auto nf = ResolveApi("/api/tokens", "");  // admin data: not in the web view
  ASSERT_FALSE(nf.ok());
  EXPECT_EQ(nf.status().code(), Status::Code::kNotFound);
  EXPECT_THAT(nf.status().message(), HasSubstr("/api/experiments"));
  EXPECT_EQ(ResolveApi("/api/experiments/3/freeze", "").status().code(), Status::Code::kNotFound);
  EXPECT_EQ(ResolveApi("/metrics", "").status().code(), Status::Code::kNotFound);

  auto bad_id = ResolveApi("/api/experiments/abc", "");
  ASSERT_FALSE(bad_id.ok());
  EXPECT_EQ(bad_id.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(bad_id.status().message(), HasSubstr("\"abc\""));
  EXPECT_FALSE(ResolveApi("/api/runs/0", "").ok());
  EXPECT_FALSE(ResolveApi("/api/runs/-1", "").ok());
  EXPECT_FALSE(ResolveApi("/api/workloads/a%2Fb", "").ok());  // a name never holds '/'

  auto unknown = ResolveApi("/api/experiments/3", "limit=3");  // one object: no paging
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("\"limit\""));
  auto bad_limit = ResolveApi("/api/experiments", "limit=-1");
  ASSERT_FALSE(bad_limit.ok());
  EXPECT_THAT(bad_limit.status().message(), HasSubstr("limit"));
  EXPECT_FALSE(ResolveApi("/api/agents", "state=x").ok());
  EXPECT_FALSE(ResolveApi("/api/workloads", "all=maybe").ok());
  auto bad_attempt = ResolveApi("/api/runs/9/samples", "attempt=0");
  ASSERT_FALSE(bad_attempt.ok());
  EXPECT_THAT(bad_attempt.status().message(), HasSubstr("\"attempt\": \"0\""));
  auto bad_points = ResolveApi("/api/runs/9/samples", "max_points=lots");
  ASSERT_FALSE(bad_points.ok());
  EXPECT_THAT(bad_points.status().message(), HasSubstr("\"max_points\": \"lots\""));
  EXPECT_FALSE(ResolveApi("/api/runs/9/samples", "limit=3").ok());  // not a list
  EXPECT_FALSE(ResolveApi("/api/runs/x/samples", "").ok());
}

TEST(Web, MapsExitCodesToHttpStatuses) {
  EXPECT_EQ(HttpStatusOfExit(0, false), 200);
  EXPECT_EQ(HttpStatusOfExit(2, false), 400);
  EXPECT_EQ(HttpStatusOfExit(3, false), 404);
  EXPECT_EQ(HttpStatusOfExit(4, false), 503);
  EXPECT_EQ(HttpStatusOfExit(5, true), 401);
  EXPECT_EQ(HttpStatusOfExit(5, false), 403);
  EXPECT_EQ(HttpStatusOfExit(1, false), 500);
}

}  // namespace
}  // namespace tunectl
