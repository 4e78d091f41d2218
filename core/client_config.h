// The client's contexts file (~/.config/tunectl/config), like a kubeconfig: each context names a
// server, the CA its certificate is checked against, a bearer token and optionally a client
// certificate. Parsing, rendering and choosing a context are pure; reading and writing the file
// (mode 0600) is the binaries' job. Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tunectl {

struct ClientContext {
  std::string name;
  std::string server;       // HOST:PORT
  std::string ca;           // PEM file the server's certificate must chain to; "" = plaintext
  std::string token;        // tct_…
  std::string client_cert;  // PEM files for mutual TLS; "" = none
  std::string client_key;
};

struct ClientConfig {
  std::string current;  // the context used when none is named
  std::vector<ClientContext> contexts;
};

// YAML: {current-context: NAME, contexts: [{name, server, ca, token, client-cert, client-key}]}.
// InvalidArgument naming `source` and the field.
Result<ClientConfig> ParseClientConfig(std::string_view text, std::string_view source);
std::string RenderClientConfig(const ClientConfig& c);

// Adds `ctx`, replacing a context of the same name; makes it current when `make_current` or when
// there was none.
void UpsertContext(ClientConfig& c, ClientContext ctx, bool make_current);

// The context to use: the one named `name` when given (NotFound listing the names otherwise);
// else, for a `server` given by flag or environment, the current context when it names that
// server, or else the first that does (nullopt: no context for it — its token is not sent to
// another server); else the current context (nullopt when none).
Result<std::optional<ClientContext>> ChooseContext(const ClientConfig& c, std::string_view name,
                                                   std::string_view server);

}  // namespace tunectl
