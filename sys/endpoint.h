// Where and how a client (the CLI, the agent) reaches the server: the address, the bearer token,
// the CA to check the server's certificate against and an optional client certificate, resolved
// from flags, the environment and the contexts file (core/client_config.h). Secrets come from
// files or the environment, never from an argument that `ps` would show. Reads files; no gRPC.
#pragma once

#include <string>

#include "core/status.h"

namespace tunectl {

struct Endpoint {
  std::string server;           // HOST:PORT
  std::string token;            // "" = none (the server refuses every call)
  std::string ca_pem;           // "" = plaintext
  std::string client_cert_pem;  // mutual TLS; "" = none
  std::string client_key_pem;
};

struct EndpointRequest {
  std::string server;  // from --server or $TUNECTL_SERVER ("" = not given)
  std::string default_server = "127.0.0.1:7443";
  std::string context;     // --context or $TUNECTL_CONTEXT ("" = by server, else current)
  std::string token_file;  // --token-file (agents); else $TUNECTL_TOKEN_FILE
  std::string ca;          // --ca; else $TUNECTL_CA
  std::string client_cert, client_key;  // --tls-cert/--tls-key; else the context's
};

// Resolves in this order: the token from `token_file`, $TUNECTL_TOKEN, $TUNECTL_TOKEN_FILE, the
// context; the CA from `ca`, $TUNECTL_CA, the context; the client certificate and key from the
// request, $TUNECTL_CLIENT_CERT/$TUNECTL_CLIENT_KEY, the context; the server from the request,
// the context, the default. A context is used only for the server it names (its token is never sent
// to another server). Errors name the file or variable.
Result<Endpoint> ResolveEndpoint(const EndpointRequest& req);

}  // namespace tunectl
