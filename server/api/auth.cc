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
  Status decision = Authorize(who, method, why_none);
  if (decision.ok()) return *who;
  return Refuse(decision, who ? ActorOf(*who) : "anonymous", method, ctx->peer());
}

Status Authorizer::Refuse(const Status& refusal, const std::string& actor, std::string_view method,
                          const std::string& peer) {
  // A refusal that cannot be written is still a refusal; the caller learns the database is down.
  if (auto st = store_->AuditRefusal(actor, std::string(method), refusal.message(), peer); !st.ok())
    return Status::Unavailable("refused (" + refusal.message() +
                               "), and the refusal could not be audited: " + st.message());
  return refusal;
}

bool CallIsTls(const grpc::ServerContextBase* ctx) {
  auto auth = ctx->auth_context();
  if (!auth) return false;
  for (const auto& v : auth->FindPropertyValues("transport_security_type"))
    if (std::string(v.data(), v.size()) == "ssl") return true;
  return false;
}

}  // namespace tunectl
