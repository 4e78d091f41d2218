// Checks every call to the server in one place: the bearer token in the call's `authorization`
// metadata → the caller's identity (Store::FindToken, by hash), the role the method needs
// (core/auth.h's table), and an audit event for each refusal. Thread-safe.
#pragma once

#include <grpcpp/server_context.h>

#include <string>
#include <string_view>

#include "core/auth.h"
#include "core/status.h"
#include "server/store/store.h"

namespace tunectl {

class Authorizer {
 public:
  explicit Authorizer(Store* store) : store_(store) {}  // not owned; outlives this

  // The caller's identity when it may call `method` (a full gRPC method name); otherwise
  // Unauthenticated / PermissionDenied naming the role needed, written to the audit trail first.
  // Unavailable when the database cannot tell.
  Result<Identity> Check(const grpc::ServerContextBase* ctx, std::string_view method);

  // A refusal decided elsewhere (an agent token registering under another name): audited.
  Status Refuse(const Status& refusal, const std::string& actor, std::string_view method,
                const std::string& peer);

 private:
  Store* store_;
};

// Whether the call came over TLS (the peer's transport security type is "ssl").
bool CallIsTls(const grpc::ServerContextBase* ctx);

}  // namespace tunectl
