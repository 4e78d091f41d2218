#include "sys/endpoint.h"

#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <system_error>

#include "core/client_config.h"
#include "sys/files.h"

namespace tunectl {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// The first non-empty of `values`: a flag, then the environment, then the context.
std::string FirstOf(std::initializer_list<std::string> values) {
  for (const auto& v : values)
    if (!v.empty()) return v;
  return "";
}

Result<std::string> ReadNamed(const std::string& path, const std::string& what) {
  auto text = ReadFile(path);
  if (!text.ok())
    return Status::InvalidArgument(what + ": cannot read " + path + ": " + text.status().message());
  return *text;
}

}  // namespace

Result<Endpoint> ResolveEndpoint(const EndpointRequest& req) {
  const std::string path = ClientConfigPath();
  ClientConfig config;
  if (std::error_code ec; std::filesystem::exists(path, ec)) {
    auto text = ReadNamed(path, "client config");
    if (!text.ok()) return text.status();
    auto parsed = ParseClientConfig(*text, path);
    if (!parsed.ok()) return parsed.status();
    config = *parsed;
  }
  auto chosen = ChooseContext(config, req.context, req.server);
  if (!chosen.ok()) return chosen.status();
  const ClientContext ctx = chosen->value_or(ClientContext{});  // empty fields when none

  Endpoint e;
  e.server = FirstOf({req.server, ctx.server, req.default_server});
  if (!req.token_file.empty()) {
    auto t = ReadNamed(req.token_file, "--token-file");
    if (!t.ok()) return t.status();
    e.token = Trim(*t);
  } else if (auto env = Env("TUNECTL_TOKEN"); !env.empty()) {
    e.token = Trim(env);
  } else if (auto f = Env("TUNECTL_TOKEN_FILE"); !f.empty()) {
    auto t = ReadNamed(f, "$TUNECTL_TOKEN_FILE");
    if (!t.ok()) return t.status();
    e.token = Trim(*t);
  } else {
    e.token = ctx.token;
  }
  if (const std::string ca_path = FirstOf({req.ca, Env("TUNECTL_CA"), ctx.ca}); !ca_path.empty()) {
    auto ca = ReadNamed(ca_path, "CA");
    if (!ca.ok()) return ca.status();
    e.ca_pem = *ca;
  }
  const std::string cert = FirstOf({req.client_cert, Env("TUNECTL_CLIENT_CERT"), ctx.client_cert});
  const std::string key = FirstOf({req.client_key, Env("TUNECTL_CLIENT_KEY"), ctx.client_key});
  if (cert.empty() != key.empty())
    return Status::InvalidArgument(
        "client certificate: give both the certificate and its key (--tls-cert/--tls-key or "
        "client-cert/client-key in the context), or neither");
  if (!cert.empty()) {
    auto c = ReadNamed(cert, "client certificate");
    if (!c.ok()) return c.status();
    auto k = ReadNamed(key, "client key");
    if (!k.ok()) return k.status();
    e.client_cert_pem = *c;
    e.client_key_pem = *k;
  }
  return e;
}

}  // namespace tunectl
