// server/web/web.cc over a mock Client: what each kind of request gets, which token reaches the
// client, and that the API's body is the CLI command's -o json output.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "mock_client.h"
#include "server/web/web.h"

namespace tunectl {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Return;

std::string HeaderOf(const HttpResponse& r, const std::string& name) {
  for (const auto& [n, v] : r.headers)
    if (n == name) return v;
  return "";
}

HttpRequest Get(const std::string& target, const std::string& cookie = "",
                const std::string& authorization = "") {
  HttpRequest r;
  r.method = "GET";
  r.path = target.substr(0, target.find('?'));
  if (target.find('?') != std::string::npos) r.query = target.substr(target.find('?') + 1);
  if (!cookie.empty()) r.headers.emplace_back("cookie", cookie);
  if (!authorization.empty()) r.headers.emplace_back("authorization", authorization);
  return r;
}

v1::Experiment AnExperiment() {
  v1::Experiment e;
  e.set_id(7);
  e.set_workload("demo");
  e.set_state("decided");
  e.set_decision("improved");
  auto* m = e.add_metrics();
  m->set_metric("samples_per_s");
  m->set_n_control(4);
  m->set_n_variant(4);
  m->set_control_median(2379.5);
  m->set_variant_median(5005.25);
  m->set_estimated(true);
  m->set_ratio(2.1);
  return e;
}

// The workload's spec (param types for -o json) is not known: values typed by their literals.
void NoSpecs(MockClient& c) {
  ON_CALL(c, GetConfig(_)).WillByDefault(Return(Status::NotFound("no config")));
}

// A factory that records the tokens it was asked for and hands out mocks set up by `setup`.
struct Clients {
  std::function<void(MockClient&)> setup;
  std::vector<std::string> tokens;
  std::mutex mu;
  WebClientFactory Factory() {
    return [this](const std::string& token) {
      std::lock_guard lock(mu);
      tokens.push_back(token);
      auto c = std::make_unique<::testing::NiceMock<MockClient>>();
      NoSpecs(*c);
      if (setup) setup(*c);
      return std::unique_ptr<Client>(std::move(c));
    };
  }
};

TEST(WebView, AnApiCallWithoutATokenIsRefusedBeforeAnyCall) {
  Clients clients;
  WebView web(clients.Factory(), {});
  auto r = web.Handle(Get("/api/experiments/7"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(r->content_type, "application/json");
  auto j = nlohmann::json::parse(r->body);
  EXPECT_EQ(j["kind"], "Error");
  EXPECT_THAT(j["message"].get<std::string>(), HasSubstr("/login"));
  EXPECT_TRUE(clients.tokens.empty());
}

TEST(WebView, TheApiAnswersTheClisJsonWithTheRequestsToken) {
  Clients clients;
  clients.setup = [](MockClient& c) {
    EXPECT_CALL(c, GetExperiment(7)).WillRepeatedly(Return(AnExperiment()));
  };
  WebView web(clients.Factory(), {});
  auto r = web.Handle(Get("/api/experiments/7", "tunectl_token=tct_cookie"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->content_type, "application/json");
  EXPECT_EQ(HeaderOf(*r, "Cache-Control"), "no-store");
  EXPECT_THAT(HeaderOf(*r, "Content-Security-Policy"), HasSubstr("default-src 'self'"));
  // the very output of `tunectl experiment show 7 -o json`
  ::testing::NiceMock<MockClient> cli;
  NoSpecs(cli);
  EXPECT_CALL(cli, GetExperiment(7)).WillRepeatedly(Return(AnExperiment()));
  CliOptions o;
  o.output = "json";
  o.id = 7;
  std::ostringstream out, err;
  const Command* show = nullptr;
  for (const auto& c : Commands())
    if (std::string(c.noun) == "experiment" && std::string(c.verb) == "show") show = &c;
  ASSERT_NE(show, nullptr);
  ASSERT_EQ(Execute(*show, cli, o, out, err), 0) << err.str();
  EXPECT_EQ(r->body, out.str());
  // the header's token wins over the cookie's
  web.Handle(Get("/api/experiments/7", "tunectl_token=tct_cookie", "Bearer tct_header"));
  EXPECT_EQ(clients.tokens, (std::vector<std::string>{"tct_cookie", "tct_header"}));
}

TEST(WebView, ARunsSamplesRoutePassesItsQueryAsTheCommandsFlags) {
  Clients clients;
  clients.setup = [](MockClient& c) {
    EXPECT_CALL(c, GetRunSamples(_))
        .WillOnce([](const v1::GetRunSamplesRequest& r) -> Result<v1::RunSamples> {
          EXPECT_EQ(r.run_id(), 5);
          EXPECT_EQ(r.metric(), "loss");
          EXPECT_EQ(r.attempt(), 2);
          EXPECT_EQ(r.max_points(), 50);
          v1::RunSamples s;
          s.set_run_id(5);
          return s;
        });
  };
  WebView web(clients.Factory(), {});
  auto r =
      web.Handle(Get("/api/runs/5/samples?metric=loss&attempt=2&max_points=50", "tunectl_token=t"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(nlohmann::json::parse(r->body)["kind"], "RunSamples");
  auto bad = web.Handle(Get("/api/runs/5/samples?max_points=x", "tunectl_token=t"));
  EXPECT_EQ(bad->status, 400);
  EXPECT_THAT(nlohmann::json::parse(bad->body)["message"].get<std::string>(),
              HasSubstr("max_points"));
}

TEST(WebView, ACommandsFailureKeepsItsMeaning) {
  Clients clients;
  clients.setup = [](MockClient& c) {
    EXPECT_CALL(c, GetExperiment(8))
        .WillRepeatedly(Return(Status::NotFound("experiment 8 not found")));
    EXPECT_CALL(c, GetExperiment(9))
        .WillRepeatedly(Return(Status::Unauthenticated(
            "GetExperiment needs a token (the token is unknown or revoked): ...")));
    EXPECT_CALL(c, GetExperiment(10))
        .WillRepeatedly(Return(Status::PermissionDenied("GetExperiment needs role viewer")));
  };
  WebView web(clients.Factory(), {});
  auto nf = web.Handle(Get("/api/experiments/8", "tunectl_token=t"));
  EXPECT_EQ(nf->status, 404);
  EXPECT_EQ(nlohmann::json::parse(nf->body)["message"], "experiment 8 not found");
  EXPECT_EQ(web.Handle(Get("/api/experiments/9", "tunectl_token=t"))->status, 401);
  EXPECT_EQ(web.Handle(Get("/api/experiments/10", "tunectl_token=t"))->status, 403);
  EXPECT_EQ(web.Handle(Get("/api/experiments/x", "tunectl_token=t"))->status, 400);
  EXPECT_EQ(web.Handle(Get("/api/tokens", "tunectl_token=t"))->status, 404);
  HttpRequest post = Get("/api/experiments/8", "tunectl_token=t");
  post.method = "POST";
  EXPECT_EQ(web.Handle(post)->status, 405);  // read-only
}

TEST(WebView, APageWithoutAnAcceptedTokenIsTheLoginFormWith401) {
  Clients clients;
  clients.setup = [](MockClient& c) {
    EXPECT_CALL(c, WhoAmI())
        .WillRepeatedly(Return(Status::Unauthenticated("the token is unknown or revoked")));
  };
  WebView web(clients.Factory(), {});
  auto none = web.Handle(Get("/experiments/7?x=\"><script>"));
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_THAT(none->body, HasSubstr("id=\"login-form\""));
  EXPECT_THAT(none->body, Not(HasSubstr("app.js")));
  EXPECT_THAT(none->body, Not(HasSubstr("<script>")));  // the next path is escaped
  EXPECT_THAT(none->body, HasSubstr("/experiments/7?x=&quot;&gt;&lt;script&gt;"));
  auto refused = web.Handle(Get("/experiments/7", "tunectl_token=tct_old"));
  EXPECT_EQ(refused->status, 401);
  EXPECT_THAT(refused->body, HasSubstr("unknown or revoked"));
}

TEST(WebView, APageWithAnAcceptedTokenIsTheShell) {
  Clients clients;
  clients.setup = [](MockClient& c) {
    v1::WhoAmIResponse w;
    w.set_name("alice");
    w.set_role("viewer");
    EXPECT_CALL(c, WhoAmI()).WillRepeatedly(Return(w));
  };
  WebView web(clients.Factory(), {});
  for (const char* page : {"/", "/workloads/demo", "/experiments/7", "/runs/3", "/log", "/batches",
                           "/batches/2", "/schedules", "/agents"}) {
    auto r = web.Handle(Get(page, "tunectl_token=tct_ok"));
    ASSERT_TRUE(r) << page;
    EXPECT_EQ(r->status, 200) << page;
    EXPECT_THAT(r->body, HasSubstr("/static/app.js")) << page;
    EXPECT_THAT(r->body, HasSubstr("/static/dygraph.min.js")) << page;
  }
  EXPECT_FALSE(web.Handle(Get("/metrics", "tunectl_token=tct_ok")));  // the caller's
  EXPECT_FALSE(web.Handle(Get("/healthz")));
  EXPECT_FALSE(web.Handle(Get("/workloads/demo/extra", "tunectl_token=tct_ok")));
}

TEST(WebView, ALoginChecksTheTokenThenSetsAnHttpOnlyCookie) {
  Clients clients;
  clients.setup = [](MockClient& c) {
    v1::WhoAmIResponse w;
    w.set_actor("token:alice");
    EXPECT_CALL(c, WhoAmI()).WillRepeatedly(Return(w));
  };
  WebView web(clients.Factory(), {.tls = true});
  HttpRequest login;
  login.method = "POST";
  login.path = "/login";
  login.body = "token=tct_abc&next=%2Fexperiments%2F7";
  auto r = web.Handle(login);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 303);
  EXPECT_EQ(HeaderOf(*r, "Location"), "/experiments/7");
  const std::string cookie = HeaderOf(*r, "Set-Cookie");
  EXPECT_THAT(cookie, HasSubstr("tunectl_token=tct_abc;"));
  EXPECT_THAT(cookie, HasSubstr("HttpOnly"));
  EXPECT_THAT(cookie, HasSubstr("SameSite=Strict"));
  EXPECT_THAT(cookie, HasSubstr("Secure"));
  EXPECT_EQ(clients.tokens, (std::vector<std::string>{"tct_abc"}));

  login.body = "token=tct_abc&next=https%3A%2F%2Fevil.example%2F";
  EXPECT_EQ(HeaderOf(*web.Handle(login), "Location"), "/");  // never another site

  HttpRequest logout;
  logout.method = "POST";
  logout.path = "/logout";
  auto out = web.Handle(logout);
  EXPECT_EQ(out->status, 303);
  EXPECT_THAT(HeaderOf(*out, "Set-Cookie"), HasSubstr("Max-Age=0"));
}

TEST(WebView, ARefusedLoginSetsNoCookie) {
  Clients clients;
  clients.setup = [](MockClient& c) {
    EXPECT_CALL(c, WhoAmI()).WillRepeatedly(Return(Status::Unauthenticated("unknown token")));
  };
  WebView web(clients.Factory(), {});
  HttpRequest login;
  login.method = "POST";
  login.path = "/login";
  login.body = "token=tct_wrong&next=%2F";
  auto r = web.Handle(login);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(HeaderOf(*r, "Set-Cookie"), "");
  EXPECT_THAT(r->body, HasSubstr("unknown token"));
  login.body = "token=a%3Bb";  // not a token: never reaches the server or a cookie
  EXPECT_EQ(web.Handle(login)->status, 401);
  EXPECT_EQ(clients.tokens, (std::vector<std::string>{"tct_wrong"}));
}

TEST(WebView, ServesItsScriptsAndTheChartLibrary) {
  Clients clients;
  WebView web(clients.Factory(), {.chart_dir = TUNECTL_SOURCE_DIR "/tests/fixtures/no-such-dir"});
  auto js = web.Handle(Get("/static/app.js"));
  ASSERT_TRUE(js);
  EXPECT_EQ(js->status, 200);
  EXPECT_EQ(js->content_type, "text/javascript; charset=utf-8");
  EXPECT_THAT(js->body, HasSubstr("textContent"));
  EXPECT_EQ(web.Handle(Get("/static/style.css"))->status, 200);
  EXPECT_EQ(web.Handle(Get("/static/page.html"))->status, 404);  // the shell only behind a token
  EXPECT_EQ(web.Handle(Get("/static/../CMakeLists.txt"))->status, 404);
  auto chart = web.Handle(Get("/static/dygraph.min.js"));
  EXPECT_EQ(chart->status, 404);
  EXPECT_THAT(chart->body, HasSubstr("libjs-dygraphs"));
  EXPECT_TRUE(clients.tokens.empty());
}

}  // namespace
}  // namespace tunectl
