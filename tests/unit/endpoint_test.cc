// ResolveEndpoint (sys/endpoint.h) against real files and environment variables, and
// WriteSecretFile (sys/files.h), which the server writes the contexts file with.
#include "sys/endpoint.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "sys/files.h"

namespace tunectl {
namespace {

// A temporary directory and a clean client environment for one test; restored afterwards.
class ClientEnv {
 public:
  ClientEnv() {
    char tmpl[] = "/tmp/tunectl-endpoint-XXXXXX";
    dir_ = mkdtemp(tmpl);
    for (const char* v : kVars) {
      if (const char* old = std::getenv(v)) saved_.emplace_back(v, old);
      unsetenv(v);
    }
    setenv("TUNECTL_CONFIG", (dir_ + "/config").c_str(), 1);
  }
  ~ClientEnv() {
    for (const char* v : kVars) unsetenv(v);
    for (const auto& [k, v] : saved_) setenv(k.c_str(), v.c_str(), 1);
    std::filesystem::remove_all(dir_);
  }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  const std::string& dir() const { return dir_; }

 private:
  static constexpr const char* kVars[] = {"TUNECTL_CONFIG",      "TUNECTL_TOKEN",
                                          "TUNECTL_TOKEN_FILE",  "TUNECTL_CA",
                                          "TUNECTL_CLIENT_CERT", "TUNECTL_CLIENT_KEY"};
  std::string dir_;
  std::vector<std::pair<std::string, std::string>> saved_;
};

constexpr const char* kConfig = R"(current-context: local
contexts:
- name: local
  server: 127.0.0.1:7443
  token: tct_local
- name: prod
  server: prod:443
  token: tct_prod
)";

TEST(Endpoint, TheCurrentContextGivesServerAndTokenWhenNothingElseIsSaid) {
  ClientEnv env;
  env.Write("config", kConfig);
  auto e = ResolveEndpoint({});
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->server, "127.0.0.1:7443");
  EXPECT_EQ(e->token, "tct_local");
  EXPECT_EQ(e->ca_pem, "");  // plaintext: the context names no CA
}

TEST(Endpoint, AServerGivenPicksItsOwnContextAndNoOtherServersToken) {
  ClientEnv env;
  env.Write("config", kConfig);
  EndpointRequest req;
  req.server = "prod:443";
  auto prod = ResolveEndpoint(req);
  ASSERT_TRUE(prod.ok());
  EXPECT_EQ(prod->token, "tct_prod");
  req.server = "elsewhere:7443";
  auto other = ResolveEndpoint(req);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->server, "elsewhere:7443");
  EXPECT_EQ(other->token, "");  // the local token does not travel to another server
}

TEST(Endpoint, FlagThenEnvironmentThenContext) {
  ClientEnv env;
  env.Write("config", kConfig);
  const std::string ca = env.Write("ca.pem", "-----BEGIN CERTIFICATE-----\nx\n");
  setenv("TUNECTL_TOKEN", "tct_env\n", 1);
  setenv("TUNECTL_CA", ca.c_str(), 1);
  auto e = ResolveEndpoint({});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->token, "tct_env");  // trailing newline trimmed
  EXPECT_EQ(e->ca_pem, "-----BEGIN CERTIFICATE-----\nx\n");
  EndpointRequest req;
  req.token_file = env.Write("token", "tct_file\n");
  auto f = ResolveEndpoint(req);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->token, "tct_file");
}

TEST(Endpoint, ANamedContextIsUsedWhateverTheServerAndAMissingOneIsNamed) {
  ClientEnv env;
  env.Write("config", kConfig);
  EndpointRequest req;
  req.context = "prod";
  req.server = "127.0.0.1:9999";  // e.g. a proxy in front of prod
  auto e = ResolveEndpoint(req);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->server, "127.0.0.1:9999");
  EXPECT_EQ(e->token, "tct_prod");
  req.context = "staging";
  auto missing = ResolveEndpoint(req);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("it has: local, prod"), std::string::npos);
}

TEST(Endpoint, BadInputNamesTheFileOrTheField) {
  ClientEnv env;
  env.Write("config", "contexts:\n- name: a\n  tokne: x\n");
  auto typo = ResolveEndpoint({});
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find(env.dir() + "/config"), std::string::npos);
  EXPECT_NE(typo.status().message().find("tokne"), std::string::npos);
  env.Write("config", kConfig);
  setenv("TUNECTL_CA", (env.dir() + "/nope.pem").c_str(), 1);
  auto ca = ResolveEndpoint({});
  ASSERT_FALSE(ca.ok());
  EXPECT_NE(ca.status().message().find("nope.pem"), std::string::npos);
  unsetenv("TUNECTL_CA");
  EndpointRequest half;
  half.client_cert = env.Write("c.pem", "x");
  auto cert = ResolveEndpoint(half);
  ASSERT_FALSE(cert.ok());
  EXPECT_NE(cert.status().message().find("give both"), std::string::npos);
}

TEST(Endpoint, NoConfigFileIsNoContext) {
  ClientEnv env;
  auto e = ResolveEndpoint({});
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->server, "127.0.0.1:7443");
  EXPECT_EQ(e->token, "");
}

TEST(SecretFile, IsWrittenOwnerOnlyAndReplacedWhole) {
  ClientEnv env;
  const std::string path = env.dir() + "/sub/config";
  ASSERT_TRUE(WriteSecretFile(path, "first\n").ok());
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((env.dir() + "/sub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_TRUE(WriteSecretFile(path, "second\n").ok());
  EXPECT_EQ(*ReadFile(path), "second\n");
}

TEST(SecretFile, RefusesToWriteThroughASymlink) {
  ClientEnv env;
  const std::string target = env.Write("target", "untouched\n");
  const std::string link = env.dir() + "/config";
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  Status st = WriteSecretFile(link, "secret\n");
  EXPECT_EQ(st.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(st.message().find("symlink"), std::string::npos);
  EXPECT_EQ(*ReadFile(target), "untouched\n");
}

}  // namespace
}  // namespace tunectl
