// Checks every call to the server in one place: the bearer token in the call's `authorization`
// metadata → the caller's identity (Store::FindToken, by hash), the role the method needs
// (core/auth.h's table), and an audit event for each refusal — one by one up to a budget per
// source (core/refusal_budget.h), beyond it counted and recorded as a count. Thread-safe.
#pragma once

#include <grpcpp/server_context.h>

#include <atomic>
#include <mutex>
#include <string>
#include <string_view>

#include "core/auth.h"
#include "core/clock.h"
#include "core/refusal_budget.h"
#include "core/status.h"
#include "server/store/store.h"

namespace tunectl {

class Authorizer {
 public:
  // Not owned; both outlive this.
  Authorizer(Store* store, const Clock* clock, RefusalBudgetOptions budget = {})
      : store_(store), clock_(clock), budget_(budget) {}

  // The caller's identity when it may call `method` (a full gRPC method name); otherwise
  // Unauthenticated / PermissionDenied naming the role needed, written to the audit trail first.
  // Unavailable when the database cannot tell.
  Result<Identity> Check(const grpc::ServerContextBase* ctx, std::string_view method);

  // A refusal decided elsewhere (an agent token registering under another name): audited.
  Status Refuse(const Status& refusal, const std::string& actor, std::string_view method,
                const std::string& peer);

  // Records the counts of sources whose window ended (at most once a second; Check calls it).
  void FlushOverdue();

 private:
  Store* store_;
  const Clock* clock_;
  std::mutex mu_;
  RefusalBudget budget_;  // guarded by mu_
  std::atomic<int64_t> next_flush_ms_{0};
};

// Whether the call came over TLS (the peer's transport security type is "ssl").
bool CallIsTls(const grpc::ServerContextBase* ctx);

}  // namespace tunectl
