#include "core/auth.h"

#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/audit_chain.h"
#include "core/client_config.h"
#include "tunectl/v1/tunectl.grpc.pb.h"

namespace tunectl {
namespace {

Identity Who(Role r, std::string name = "alice", std::string agent = "") {
  Identity w;
  w.token_id = 1;
  w.name = std::move(name);
  w.role = r;
  w.agent = std::move(agent);
  return w;
}

std::string Tuning(const std::string& rpc) {
  return "/tunectl.v1.TuningService/" + rpc;
}

TEST(Auth, EveryRpcOfTheProtoHasARoleAndTheTableNothingElse) {
  std::set<std::string> proto;
  const auto* file = v1::Baseline::descriptor()->file();
  for (const auto* service :
       {file->FindServiceByName("TuningService"), file->FindServiceByName("AgentService")}) {
    ASSERT_NE(service, nullptr);
    for (int i = 0; i < service->method_count(); ++i) {
      const std::string full = "/" + service->full_name() + "/" + service->method(i)->name();
      proto.insert(full);
      EXPECT_TRUE(RequiredRole(full).has_value()) << full << " has no role in core/auth.cc";
    }
  }
  for (const auto& m : KnownMethods()) EXPECT_TRUE(proto.count(m)) << m << " is not in the proto";
}

TEST(Auth, RoleMatrix) {
  struct Case {
    const char* rpc;
    Role need;
  };
  const Case cases[] = {{"ListLog", Role::kViewer},         {"GetExperiment", Role::kViewer},
                        {"VerifyAudit", Role::kViewer},     {"ApplyWorkload", Role::kOperator},
                        {"RunExperiment", Role::kOperator}, {"CreateBatch", Role::kOperator},
                        {"FreezeExperiment", Role::kAdmin}, {"ResolveRegression", Role::kAdmin},
                        {"CreateSchedule", Role::kAdmin},   {"CreateToken", Role::kAdmin},
                        {"ExportAudit", Role::kAdmin}};
  for (const auto& c : cases) {
    ASSERT_EQ(RequiredRole(Tuning(c.rpc)), c.need) << c.rpc;
    for (Role have : {Role::kViewer, Role::kOperator, Role::kAdmin, Role::kAgent}) {
      const bool allowed =
          have != Role::kAgent &&
          (c.need == Role::kViewer || (c.need == Role::kOperator && have != Role::kViewer) ||
           (c.need == Role::kAdmin && have == Role::kAdmin));
      Status st = Authorize(Who(have), Tuning(c.rpc));
      EXPECT_EQ(st.ok(), allowed) << c.rpc << " as " << RoleName(have) << ": " << st.message();
      if (!allowed) {
        EXPECT_EQ(st.code(), Status::Code::kPermissionDenied);
      }
    }
  }
}

TEST(Auth, AgentSessionsAreForAgentAndAdminTokensOnly) {
  EXPECT_TRUE(Authorize(Who(Role::kAgent, "n1", "n1"), kAgentSessionMethod).ok());
  EXPECT_TRUE(Authorize(Who(Role::kAdmin), kAgentSessionMethod).ok());
  Status op = Authorize(Who(Role::kOperator), kAgentSessionMethod);
  EXPECT_EQ(op.code(), Status::Code::kPermissionDenied);
  EXPECT_NE(op.message().find("needs role agent"), std::string::npos) << op.message();
  Status agent_reads = Authorize(Who(Role::kAgent, "n1", "n1"), Tuning("ListLog"));
  EXPECT_EQ(agent_reads.code(), Status::Code::kPermissionDenied);
  EXPECT_NE(agent_reads.message().find("agent tokens may only open agent sessions"),
            std::string::npos);
}

TEST(Auth, RefusalNamesTheRoleNeededAndTheCallersRole) {
  Status st = Authorize(Who(Role::kViewer, "bob"), Tuning("FreezeExperiment"));
  EXPECT_EQ(st.code(), Status::Code::kPermissionDenied);
  EXPECT_NE(st.message().find("FreezeExperiment needs role admin;"), std::string::npos)
      << st.message();
  Status op = Authorize(Who(Role::kViewer, "bob"), Tuning("RunExperiment"));
  EXPECT_NE(op.message().find("needs role operator (or admin);"), std::string::npos)
      << op.message();
  Status agent = Authorize(Who(Role::kAgent, "n1", "n1"), Tuning("ListLog"));
  EXPECT_NE(agent.message().find("needs role viewer (or operator, admin);"), std::string::npos)
      << agent.message();
  EXPECT_NE(st.message().find("\"bob\" has role viewer"), std::string::npos) << st.message();
}

TEST(Auth, NoIdentityIsUnauthenticatedAndSaysWhy) {
  Status st = Authorize(std::nullopt, Tuning("ListLog"), "the token is unknown or revoked");
  EXPECT_EQ(st.code(), Status::Code::kUnauthenticated);
  EXPECT_NE(st.message().find("unknown or revoked"), std::string::npos);
  // the command it suggests is the CLI's own form
  EXPECT_NE(st.message().find("tunectl token create NAME --role"), std::string::npos);
}

TEST(Auth, UnknownMethodIsRefusedEvenForAdmin) {
  EXPECT_FALSE(RequiredRole(Tuning("DropEverything")).has_value());
  EXPECT_FALSE(RequiredRole("/other.Service/ListLog").has_value());
  EXPECT_EQ(Authorize(Who(Role::kAdmin), Tuning("DropEverything")).code(),
            Status::Code::kPermissionDenied);
}

TEST(Auth, AgentTokenIsBoundToItsName) {
  EXPECT_TRUE(CheckAgentBinding(Who(Role::kAgent, "n1", "n1"), "n1").ok());
  Status st = CheckAgentBinding(Who(Role::kAgent, "n1", "n1"), "n2");
  EXPECT_EQ(st.code(), Status::Code::kPermissionDenied);
  EXPECT_NE(st.message().find("bound to agent \"n1\""), std::string::npos);
  EXPECT_TRUE(CheckAgentBinding(Who(Role::kAdmin), "any-node").ok());
}

TEST(Auth, ActorIsTheTokensIdentity) {
  EXPECT_EQ(ActorOf(Who(Role::kOperator, "alice")), "user:alice");
  EXPECT_EQ(ActorOf(Who(Role::kAgent, "n1", "n1")), "agent:n1");
}

TEST(Auth, TokensAreFormattedParsedAndHashed) {
  const std::string token = FormatToken(std::string("\x01\xab\xff") + std::string(29, '\0'));
  EXPECT_EQ(token, "tct_01abff" + std::string(58, '0'));
  EXPECT_EQ(BearerHeader(token), "Bearer " + token);
  auto parsed = BearerToken(BearerHeader(token));
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(*parsed, token);
  EXPECT_EQ(TokenHash(token), Sha256Hex(token));
  EXPECT_EQ(TokenHash(token).size(), 64u);
  const std::vector<std::string> bad = {"",
                                        "Bearer",
                                        "Basic dXNlcjpwdw==",
                                        "Bearer tct_123",
                                        "Bearer " + token + "x",
                                        "bearer " + token,
                                        "Bearer tct_" + std::string(64, 'G')};
  for (const auto& b : bad) {
    auto r = BearerToken(b);
    ASSERT_FALSE(r.ok()) << b;
    EXPECT_EQ(r.status().message().find("tct_a"), std::string::npos);  // no secret echoed
  }
}

TEST(Auth, TokenNamesFollowThePattern) {
  for (const char* ok : {"alice", "n1", "ci-bot", "local-root", "a.b_c@d"})
    EXPECT_TRUE(CheckTokenName(ok).ok()) << ok;
  const std::vector<std::string> names = {"", "Alice", "-x", "a b", "a;rm", std::string(64, 'a')};
  for (const auto& bad : names) {
    Status st = CheckTokenName(bad);
    EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("NAME"), std::string::npos);
  }
}

TEST(Auth, ATokenSpecBindsAnAgentTokenToItsNameByDefault) {
  auto agent = ParseTokenSpec("n1", "agent", "");
  ASSERT_TRUE(agent.ok()) << agent.status().message();
  EXPECT_EQ(agent->role, Role::kAgent);
  EXPECT_EQ(agent->agent, "n1");
  auto host = ParseTokenSpec("gpu7", "agent", "GPU-Node7.cluster");  // agent names are freer
  ASSERT_TRUE(host.ok());
  EXPECT_EQ(host->agent, "GPU-Node7.cluster");
  auto viewer = ParseTokenSpec("bob", "viewer", "");
  ASSERT_TRUE(viewer.ok());
  EXPECT_EQ(viewer->agent, "");
}

TEST(Auth, ATokenSpecRefusesNamingTheFlag) {
  auto bound_viewer = ParseTokenSpec("bob", "viewer", "n1");
  ASSERT_FALSE(bound_viewer.ok());
  EXPECT_NE(bound_viewer.status().message().find("--agent: \"n1\": only an agent token"),
            std::string::npos)
      << bound_viewer.status().message();
  auto role = ParseTokenSpec("bob", "root", "");
  ASSERT_FALSE(role.ok());
  EXPECT_NE(role.status().message().find("--role: \"root\""), std::string::npos);
  auto name = ParseTokenSpec("Bob", "viewer", "");
  ASSERT_FALSE(name.ok());
  EXPECT_NE(name.status().message().find("NAME: \"Bob\""), std::string::npos);
  auto agent = ParseTokenSpec("n1", "agent", std::string("n\x01"));
  ASSERT_FALSE(agent.ok());
  EXPECT_NE(agent.status().message().find("--agent"), std::string::npos);
}

TEST(Auth, TheEmbeddedDefaultKeepsItsLocalAdminTokenValid) {
  const Identity admin = Who(Role::kAdmin, "local-root");
  // embedded: a valid admin token for the same CA stays; anything else is replaced
  EXPECT_FALSE(NeedsLocalAdminToken(true, admin, true, true));
  EXPECT_TRUE(NeedsLocalAdminToken(true, std::nullopt, true, true));  // lost or revoked
  EXPECT_TRUE(NeedsLocalAdminToken(true, Who(Role::kViewer), true, true));
  EXPECT_TRUE(NeedsLocalAdminToken(true, admin, false, true));  // the CA changed
  // an external database: only while nobody holds a live admin token
  EXPECT_FALSE(NeedsLocalAdminToken(false, std::nullopt, false, true));
  EXPECT_TRUE(NeedsLocalAdminToken(false, std::nullopt, false, false));
  EXPECT_EQ(LocalAdminContext("127.0.0.1:7443"), "local-127.0.0.1:7443");
  EXPECT_EQ(LocalAdminTokenName("root"), "local-root");
  EXPECT_EQ(LocalAdminTokenName("Jane Doe"), "local-admin");
  EXPECT_EQ(LocalAdminTokenName(""), "local-admin");
}

TEST(Auth, ParseRoleListsTheRoles) {
  EXPECT_EQ(*ParseRole("operator"), Role::kOperator);
  auto r = ParseRole("root");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("viewer, operator, admin, agent"), std::string::npos);
}

TEST(ClientConfig, RoundTripsAndReplacesAContextByName) {
  ClientConfig c;
  UpsertContext(c, {"local", "127.0.0.1:7443", "/d/tls/ca.pem", "tct_1", "", ""}, false);
  UpsertContext(c, {"prod", "tunectl.example:443", "/etc/ca.pem", "tct_2", "/c.pem", "/k.pem"},
                false);
  EXPECT_EQ(c.current, "local");
  UpsertContext(c, {"local", "127.0.0.1:7443", "/d/tls/ca.pem", "tct_3", "", ""}, true);
  auto back = ParseClientConfig(RenderClientConfig(c), "config");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->contexts.size(), 2u);
  EXPECT_EQ(back->current, "local");
  EXPECT_EQ(back->contexts[0].token, "tct_3");
  EXPECT_EQ(back->contexts[1].client_key, "/k.pem");
}

TEST(ClientConfig, ATokenIsOnlyUsedForTheServerItsContextNames) {
  ClientConfig c;
  UpsertContext(c, {"local", "127.0.0.1:7443", "", "tct_local", "", ""}, true);
  UpsertContext(c, {"prod", "prod:443", "", "tct_prod", "", ""}, false);
  auto cur = ChooseContext(c, "", "");
  ASSERT_TRUE(cur.ok() && cur->has_value());
  EXPECT_EQ((*cur)->token, "tct_local");
  auto prod = ChooseContext(c, "", "prod:443");
  ASSERT_TRUE(prod.ok() && prod->has_value());
  EXPECT_EQ((*prod)->token, "tct_prod");
  auto other = ChooseContext(c, "", "evil:7443");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->has_value());
  auto missing = ChooseContext(c, "staging", "");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("local, prod"), std::string::npos);
}

TEST(ClientConfig, RejectsUnknownFieldsNamingThem) {
  auto r =
      ParseClientConfig("contexts:\n- name: a\n  tokne: x\n", "/home/u/.config/tunectl/config");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("contexts[0]: unknown field \"tokne\""), std::string::npos)
      << r.status().message();
  EXPECT_FALSE(ParseClientConfig("contexts: [{server: x}]", "c").ok());  // no name
  EXPECT_TRUE(ParseClientConfig("", "c").ok());
}

}  // namespace
}  // namespace tunectl

TEST(Auth, DsnHasPasswordFindsOneInEitherForm) {
  using tunectl::DsnHasPassword;
  EXPECT_TRUE(DsnHasPassword("postgresql://tunectl:s3cret@db.internal/tunectl"));
  EXPECT_TRUE(DsnHasPassword("postgres://db/tunectl?sslmode=require&password=x"));
  EXPECT_TRUE(DsnHasPassword("postgresql://db/tunectl?password=x"));
  EXPECT_TRUE(DsnHasPassword("host=db user=tunectl password=x dbname=tunectl"));
  EXPECT_TRUE(DsnHasPassword("password = x host=db"));
  EXPECT_FALSE(DsnHasPassword("postgresql://tunectl@db.internal/tunectl"));
  EXPECT_FALSE(DsnHasPassword("postgresql://db.internal/tunectl?sslmode=require"));
  EXPECT_FALSE(DsnHasPassword("host=db user=tunectl passfile=/etc/tunectl/pgpass dbname=t"));
  EXPECT_FALSE(DsnHasPassword("host=/tmp/sock user=password_keeper dbname=t"));
}
