#include "server/api/auth.h"

#include <grpcpp/security/auth_context.h>

#include <optional>

namespace tunectl {

Result<Identity> Authorizer::Check(const grpc::ServerContextBase* ctx, std::string_view method) {
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return Check("", false, ctx->peer(), method);
  return Check(std::string(it->second.data(), it->second.size()), true, ctx->peer(), method);
}

Result<Identity> Authorizer::Check(const std::string& authorization, bool has_authorization,
                                   const std::string& peer, std::string_view method) {
  std::optional<Identity> who;
  std::string why_none = "no token";
  if (has_authorization) {
    auto token = BearerToken(authorization);
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
  return Refuse(decision, who ? ActorOf(*who) : "anonymous", method, peer);
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
