// The role matrix through a real server: every RPC of TuningService × every role (and no token),
// called with an empty request over gRPC; refused calls are PERMISSION_DENIED / UNAUTHENTICATED
// and each is an audit event, allowed ones get past the check (whatever the empty request then
// earns). core/auth.h's table is the expectation; the test fails when a handler skips the check.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <sstream>
#include <string>

#include "core/auth.h"
#include "core/client_config.h"
#include "core/clock.h"
#include "server/api/auth.h"
#include "server/server.h"
#include "tests/db/test_db.h"
#include "tunectl/v1/tunectl.grpc.pb.h"

namespace tunectl {
namespace {

grpc::Status CallEmpty(grpc::GenericStub& stub, const std::string& method,
                       const std::string& token) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
  grpc::Slice empty("");  // a valid, empty message of any type
  grpc::ByteBuffer req(&empty, 1), resp;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, method, grpc::StubOptions(), &req, &resp,
                 [&](grpc::Status s) { done.set_value(std::move(s)); });
  return done.get_future().get();
}

// A plaintext server on the test's database, any free port, no HTTP, its admin context (if it
// makes one) written to `admin_config`.
ServerOptions PlainServer(const TestDb& db, const std::string& admin_config) {
  ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.db = db.dsn();
  o.http = "";
  o.insecure = true;
  o.admin_config = admin_config;
  return o;
}

TEST(AuthMatrix, EveryRpcTimesEveryRoleIsAllowedOrRefusedAsTheTableSays) {
  TUNECTL_TEST_DB(db);
  char dir[] = "/tmp/tunectl-authmatrix-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const ServerOptions o = PlainServer(*db, std::string(dir) + "/config");
  auto server = Server::Start(o, [](LogLevel, const std::string&) {});
  ASSERT_TRUE(server.ok()) << server.status().message();

  const std::map<Role, std::string> names = {{Role::kViewer, "m-viewer"},
                                             {Role::kOperator, "m-operator"},
                                             {Role::kAdmin, "m-admin"},
                                             {Role::kAgent, "m-agent"}};
  std::map<Role, std::string> tokens;
  char fill = 'a';
  for (const auto& [role, name] : names) {
    const std::string secret = FormatToken(std::string(32, fill++));
    auto t = db->store().CreateToken({name, role, role == Role::kAgent ? name : ""},
                                     TokenHash(secret), "test");
    ASSERT_TRUE(t.ok()) << t.status().message();
    tokens[role] = secret;
  }

  grpc::GenericStub stub(grpc::CreateChannel("127.0.0.1:" + std::to_string((*server)->port()),
                                             grpc::InsecureChannelCredentials()));
  const auto* service = v1::Baseline::descriptor()->file()->FindServiceByName("TuningService");
  ASSERT_NE(service, nullptr);
  int refused = 0, calls = 0;
  for (int i = 0; i < service->method_count(); ++i) {
    const std::string method = "/" + service->full_name() + "/" + service->method(i)->name();
    const auto need = RequiredRole(method);
    ASSERT_TRUE(need.has_value()) << method;
    const grpc::Status anonymous = CallEmpty(stub, method, "");
    ++calls;
    ++refused;
    EXPECT_EQ(anonymous.error_code(), grpc::StatusCode::UNAUTHENTICATED) << method;
    for (const auto& [role, token] : tokens) {
      const grpc::Status st = CallEmpty(stub, method, token);
      ++calls;
      if (Allows(role, *need)) {
        EXPECT_NE(st.error_code(), grpc::StatusCode::PERMISSION_DENIED)
            << method << " as " << RoleName(role) << ": " << st.error_message();
        EXPECT_NE(st.error_code(), grpc::StatusCode::UNAUTHENTICATED) << method;
      } else {
        ++refused;
        EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED)
            << method << " as " << RoleName(role) << ": " << st.error_message();
        EXPECT_NE(st.error_message().find("needs role " + std::string(RoleName(*need))),
                  std::string::npos)
            << st.error_message();
      }
    }
  }
  EXPECT_GT(calls, 150);
  // Every refusal is an audit event naming the method; a revoked token is refused too.
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM audit_events WHERE kind = 'auth.refused'"),
            std::to_string(refused));
  ASSERT_TRUE(db->store().RevokeToken("m-admin", "test").ok());
  const grpc::Status revoked =
      CallEmpty(stub, "/tunectl.v1.TuningService/ListLog", tokens[Role::kAdmin]);
  EXPECT_EQ(revoked.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(revoked.error_message().find("unknown or revoked"), std::string::npos);
  (*server)->Shutdown();
  server->reset();
  std::remove(o.admin_config.c_str());
  rmdir(dir);
}

// With --db, the first server on a database writes a working admin context; a second one on
// the same database (a fleet) makes no token and revokes nothing.
TEST(AuthRefusals, AFloodIsRecordedUpToItsBudgetThenAsACount) {
  TUNECTL_TEST_DB(db);
  ManualClock clock(1'000'000);
  RefusalBudgetOptions budget;
  budget.per_window = 3;
  Authorizer auth(&db->store(), &clock, budget);
  const Status no = Status::Unauthenticated("no token");
  const std::string method = "/tunectl.v1.TuningService/ListLog";
  for (int i = 0; i < 20; ++i) {  // one host, many ports: one source
    const Status st =
        auth.Refuse(no, "anonymous", method, "ipv4:10.1.2.3:" + std::to_string(40000 + i));
    EXPECT_EQ(st.code(), Status::Code::kUnauthenticated);  // refused either way
  }
  EXPECT_FALSE(
      auth.Refuse(no, "anonymous", "/tunectl.v1.TuningService/WhoAmI", "ipv4:10.1.2.3:1").ok());
  const std::string count = "SELECT count(*) FROM audit_events WHERE kind = 'auth.refused'";
  EXPECT_EQ(db->Scalar(count), "4");  // 3 of ListLog, 1 of WhoAmI
  // The next window's first refusal carries the count of those left out.
  clock.Advance(60'000);
  EXPECT_FALSE(auth.Refuse(no, "anonymous", method, "ipv4:10.1.2.3:50000").ok());
  EXPECT_EQ(db->Scalar("SELECT detail->>'suppressed_before' FROM audit_events WHERE kind = "
                       "'auth.refused' ORDER BY id DESC LIMIT 1"),
            "17");
  // A source that went quiet: its count is recorded once its window is over.
  for (int i = 0; i < 5; ++i)
    EXPECT_FALSE(auth.Refuse(no, "anonymous", method, "ipv4:10.9.9.9:1").ok());
  EXPECT_EQ(db->Scalar(count), "8");
  clock.Advance(61'000);
  auth.FlushOverdue();
  EXPECT_EQ(db->Scalar("SELECT detail->>'peer' || ' ' || (detail->>'suppressed_before') FROM "
                       "audit_events WHERE kind = 'auth.refused' ORDER BY id DESC LIMIT 1"),
            "ipv4:10.9.9.9 2");
  auth.FlushOverdue();  // once
  EXPECT_EQ(db->Scalar(count), "9");
}

// The server checks a spec being applied whatever client sent it (the CLI checks it too, before
// sending): a run.selector past 16 labels, or with a label no agent could carry, is refused with
// the field named, and nothing is stored.
TEST(ApplyWorkloadOverGrpc, ASelectorAnAgentCouldNeverMatchIsRefusedAndNothingIsStored) {
  TUNECTL_TEST_DB(db);
  char dir[] = "/tmp/tunectl-applyspec-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const ServerOptions o = PlainServer(*db, std::string(dir) + "/config");
  auto server = Server::Start(o, [](LogLevel, const std::string&) {});
  ASSERT_TRUE(server.ok()) << server.status().message();
  const std::string secret = FormatToken(std::string(32, 'q'));
  ASSERT_TRUE(
      db->store().CreateToken({"q-admin", Role::kAdmin, ""}, TokenHash(secret), "test").ok());
  auto stub = v1::TuningService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string((*server)->port()), grpc::InsecureChannelCredentials()));
  auto apply = [&](const std::string& selector, v1::ApplyWorkloadResponse* resp) {
    v1::ApplyWorkloadRequest req;
    req.set_source("sel.yaml");
    req.set_spec(
        "name: sel\ncommand: [\"true\"]\nparams:\n  n: {type: int, default: 1}\n"
        "metrics:\n  tput: {pattern: 'tput: (?P<value>[0-9.]+)', better: higher, "
        "role: primary}\nrun:\n  selector: " +
        selector + "\n");
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    ctx.AddMetadata("authorization", "Bearer " + secret);
    return stub->ApplyWorkload(&ctx, req, resp);
  };
  std::string seventeen = "{";
  for (int i = 0; i < 17; ++i) seventeen += (i ? ", l" : "l") + std::to_string(i) + ": x";
  v1::ApplyWorkloadResponse resp;
  const grpc::Status too_many = apply(seventeen + "}", &resp);
  EXPECT_EQ(too_many.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(too_many.error_message().find("sel.yaml: run.selector: 17 labels; at most 16"),
            std::string::npos)
      << too_many.error_message();
  const grpc::Status bad_key = apply("{'p ool': cpu}", &resp);
  EXPECT_EQ(bad_key.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(bad_key.error_message().find("run.selector: key \"p ool\""), std::string::npos)
      << bad_key.error_message();
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM workloads"), "0");
  // The same spec with a selector an agent can match is stored.
  const grpc::Status good = apply("{pool: cpu}", &resp);
  EXPECT_TRUE(good.ok()) << good.error_message();
  EXPECT_EQ(resp.action(), "created");
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM workloads"), "1");
  (*server)->Shutdown();
  server->reset();
  std::filesystem::remove_all(dir);
}

TEST(LocalAdmin, WithAnExternalDatabaseOnlyTheFirstServerMakesAnAdminToken) {
  TUNECTL_TEST_DB(db);
  char dir[] = "/tmp/tunectl-localadmin-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  ServerOptions o = PlainServer(*db, std::string(dir) + "/first");
  auto first = Server::Start(o, [](LogLevel, const std::string&) {});
  ASSERT_TRUE(first.ok()) << first.status().message();
  o.admin_config = std::string(dir) + "/second";
  auto second = Server::Start(o, [](LogLevel, const std::string&) {});
  ASSERT_TRUE(second.ok()) << second.status().message();
  std::ifstream in(std::string(dir) + "/first");
  std::stringstream text;
  text << in.rdbuf();
  auto config = ParseClientConfig(text.str(), "first");
  ASSERT_TRUE(config.ok()) << config.status().message();
  const std::string address = "127.0.0.1:" + std::to_string((*first)->port());
  auto ctx = ChooseContext(*config, "", address);
  ASSERT_TRUE(ctx.ok() && ctx->has_value()) << text.str();
  auto who = db->store().FindToken(TokenHash((*ctx)->token));
  ASSERT_TRUE(who.ok() && who->has_value());
  EXPECT_EQ((*who)->role, Role::kAdmin);
  EXPECT_FALSE(std::ifstream(std::string(dir) + "/second").good());
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM tokens"), "1");
  // The token works through the second server too: tokens live in the database.
  grpc::GenericStub stub(grpc::CreateChannel("127.0.0.1:" + std::to_string((*second)->port()),
                                             grpc::InsecureChannelCredentials()));
  EXPECT_TRUE(CallEmpty(stub, "/tunectl.v1.TuningService/WhoAmI", (*ctx)->token).ok());
  // Flags that do not go together are refused before anything starts.
  ServerOptions bad = o;
  bad.insecure = false;
  auto refused = Server::Start(bad, [](LogLevel, const std::string&) {});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("--tls-cert"), std::string::npos);
  second->reset();
  first->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tunectl
