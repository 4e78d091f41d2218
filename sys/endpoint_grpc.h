// The gRPC side of sys/endpoint.h: an endpoint's channel credentials and its token on a call.
// Header-only, so that only the files that already include grpcpp (cli/client.cc, agent/agent.cc)
// compile it and sys/ links no gRPC. Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "core/auth.h"
#include "sys/endpoint.h"

namespace tunectl {

// TLS against the endpoint's CA (with its client certificate, if any); plaintext without a CA.
inline std::shared_ptr<grpc::ChannelCredentials> ChannelCredentialsOf(const Endpoint& e) {
  if (e.ca_pem.empty()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = e.ca_pem;
  ssl.pem_cert_chain = e.client_cert_pem;
  ssl.pem_private_key = e.client_key_pem;
  return grpc::SslCredentials(ssl);
}

// The bearer token on a call; nothing when there is none (the server refuses the call).
inline void AddToken(grpc::ClientContext& ctx, const std::string& token) {
  if (!token.empty()) ctx.AddMetadata(std::string(kAuthorizationKey), BearerHeader(token));
}

}  // namespace tunectl
