#include "server/api/auth.h"

#include <grpcpp/security/auth_context.h>

#include <optional>

namespace tunectl {

Result<Identity> Authorizer::Check(const grpc::ServerContextBase* ctx, std::string_view method) {
  const auto& md = ctx->client_metadata();
  auto header = md.find(grpc::string_ref(kAuthorizationKey.data(), kAuthorizationKey.size()));
  std::optional<Identity> who;
  std::string why_none = "no token";
  if (header != md.end()) {
    auto token = BearerToken(std::string_view(header->second.data(), header->second.size()));
    if (!token.ok()) {
      why_none = token.status().message();
    } else {
      auto found = store_->FindToken(TokenHash(*token));
      if (!found.ok()) return found.status();
      who = *found;
      if (!who) why_none = "the token is unknown or revoked";
    }
  }
  FlushOverdue();
  Status decision = Authorize(who, method, why_none);
  if (decision.ok()) return *who;
  return Refuse(decision, who ? ActorOf(*who) : "anonymous", method, ctx->peer());
}

Status Authorizer::Refuse(const Status& refusal, const std::string& actor, std::string_view method,
                          const std::string& peer) {
  RefusalBudget::Admit admit;
  {
    std::lock_guard<std::mutex> g(mu_);
    admit = budget_.Refused(actor + "\n" + PeerHost(peer) + "\n" + std::string(method),
                            clock_->SteadyMs());
  }
  if (!admit.record) return refusal;  // counted; its source's count is recorded later
  // A refusal that cannot be written is still a refusal; the caller learns the database is down.
  if (auto st = store_->AuditRefusal(actor, std::string(method), refusal.message(), peer,
                                     admit.suppressed);
      !st.ok())
    return Status::Unavailable("refused (" + refusal.message() +
                               "), and the refusal could not be audited: " + st.message());
  return refusal;
}

void Authorizer::FlushOverdue() {
  const int64_t now = clock_->SteadyMs();
  int64_t next = next_flush_ms_.load();
  if (now < next || !next_flush_ms_.compare_exchange_strong(next, now + 1000)) return;
  std::vector<RefusalBudget::Overdue> overdue;
  {
    std::lock_guard<std::mutex> g(mu_);
    overdue = budget_.TakeOverdue(now);
  }
  for (const auto& o : overdue) {
    const size_t a = o.source.find('\n'), b = o.source.find('\n', a + 1);
    // Best effort: a count that cannot be written now is not worth failing a call for.
    (void)store_->AuditRefusal(o.source.substr(0, a), o.source.substr(b + 1),
                               "refusals beyond the audit budget, counted",
                               o.source.substr(a + 1, b - a - 1), o.suppressed);
  }
}

bool CallIsTls(const grpc::ServerContextBase* ctx) {
  auto auth = ctx->auth_context();
  if (!auth) return false;
  for (const auto& v : auth->FindPropertyValues("transport_security_type"))
    if (std::string(v.data(), v.size()) == "ssl") return true;
  return false;
}

}  // namespace tunectl
