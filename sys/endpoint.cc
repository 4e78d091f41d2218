#include "sys/endpoint.h"

#include <sys/stat.h>

#include <cstdlib>
#include <optional>

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
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    auto text = ReadNamed(path, "client config");
    if (!text.ok()) return text.status();
    auto parsed = ParseClientConfig(*text, path);
    if (!parsed.ok()) return parsed.status();
    config = *parsed;
  }
  auto chosen = ChooseContext(config, req.context, req.server);
  if (!chosen.ok()) return chosen.status();
  const std::optional<ClientContext>& ctx = *chosen;

  Endpoint e;
  e.context = ctx ? ctx->name : "";
  e.server = !req.server.empty()           ? req.server
             : ctx && !ctx->server.empty() ? ctx->server
                                           : req.default_server;
  std::string token_file = req.token_file;
  if (!token_file.empty()) {
    auto t = ReadNamed(token_file, "--token-file");
    if (!t.ok()) return t.status();
    e.token = Trim(*t);
  } else if (auto env = Env("TUNECTL_TOKEN"); !env.empty()) {
    e.token = Trim(env);
  } else if (auto f = Env("TUNECTL_TOKEN_FILE"); !f.empty()) {
    auto t = ReadNamed(f, "$TUNECTL_TOKEN_FILE");
    if (!t.ok()) return t.status();
    e.token = Trim(*t);
  } else if (ctx) {
    e.token = ctx->token;
  }
  e.ca_path = !req.ca.empty()              ? req.ca
              : !Env("TUNECTL_CA").empty() ? Env("TUNECTL_CA")
              : ctx                        ? ctx->ca
                                           : "";
  if (!e.ca_path.empty()) {
    auto ca = ReadNamed(e.ca_path, "CA");
    if (!ca.ok()) return ca.status();
    e.ca_pem = *ca;
  }
  std::string cert = req.client_cert, key = req.client_key;
  if (cert.empty()) cert = Env("TUNECTL_CLIENT_CERT");
  if (key.empty()) key = Env("TUNECTL_CLIENT_KEY");
  if (cert.empty() && ctx) cert = ctx->client_cert;
  if (key.empty() && ctx) key = ctx->client_key;
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
