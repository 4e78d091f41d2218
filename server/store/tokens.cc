// Store: bearer tokens (hashes only), their lookup per call, and refused calls' audit events.
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "core/auth.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace tunectl {

using namespace internal;  // NOLINT(google-build-using-namespace): the store's own helpers

namespace {

constexpr const char* kTokenColumns =
    "id, name, role, coalesce(agent, ''), tunectl_ts(created_at), created_by, "
    "coalesce(tunectl_ts(revoked_at), ''), coalesce(revoked_by, '')";

TokenRow TokenOf(const pqxx::row& r) {
  TokenRow t;
  t.id = r[0].as<int64_t>();
  t.name = r[1].as<std::string>();
  t.role = r[2].as<std::string>();
  t.agent = r[3].as<std::string>();
  t.created_at = r[4].as<std::string>();
  t.created_by = r[5].as<std::string>();
  t.revoked_at = r[6].as<std::string>();
  t.revoked_by = r[7].as<std::string>();
  return t;
}

}  // namespace

Result<TokenRow> Store::CreateToken(const TokenSpec& spec, const std::string& hash,
                                    const std::string& actor) {
  const std::string& name = spec.name;
  const std::string role(RoleName(spec.role));
  const std::string& agent = spec.agent;
  return InTx<TokenRow>(pool_, clock_, [&](pqxx::work& w) -> Result<TokenRow> {
    auto live = w.exec_params("SELECT 1 FROM tokens WHERE name = $1 AND revoked_at IS NULL", name);
    if (!live.empty())
      return Status::AlreadyExists("a live token is named \"" + name +
                                   "\"; revoke it first: tunectl token revoke " + name);
    auto r = w.exec_params(std::string("INSERT INTO tokens(name, role, agent, hash, created_by) "
                                       "VALUES ($1, $2, NULLIF($3, ''), $4, $5) RETURNING ") +
                               kTokenColumns,
                           name, role, agent, hash, actor);
    TokenRow t = TokenOf(r[0]);
    json detail = {{"name", name}, {"role", role}};
    if (!agent.empty()) detail["agent"] = agent;
    Audit(w, actor, "token.create", "token", t.id, detail);
    return t;
  });
}

Result<std::vector<TokenRow>> Store::ListTokens(bool include_revoked) {
  return InTx<std::vector<TokenRow>>(
      pool_, clock_, [&](pqxx::work& w) -> Result<std::vector<TokenRow>> {
        auto rows = w.exec(std::string("SELECT ") + kTokenColumns + " FROM tokens" +
                           (include_revoked ? "" : " WHERE revoked_at IS NULL") + " ORDER BY id");
        std::vector<TokenRow> out;
        for (const auto& r : rows) out.push_back(TokenOf(r));
        return out;
      });
}

Result<TokenRow> Store::RevokeToken(const std::string& name, const std::string& actor) {
  return InTx<TokenRow>(pool_, clock_, [&](pqxx::work& w) -> Result<TokenRow> {
    auto r = w.exec_params(std::string("UPDATE tokens SET revoked_at = tunectl_now(), "
                                       "revoked_by = $2 WHERE name = $1 AND revoked_at IS NULL "
                                       "RETURNING ") +
                               kTokenColumns,
                           name, actor);
    if (r.empty())
      return Status::NotFound("no live token is named \"" + name + "\" (tunectl token list)");
    TokenRow t = TokenOf(r[0]);
    Audit(w, actor, "token.revoke", "token", t.id, {{"name", name}, {"role", t.role}});
    return t;
  });
}

Result<std::optional<Identity>> Store::FindToken(const std::string& hash) {
  return InTx<std::optional<Identity>>(
      pool_, clock_, [&](pqxx::work& w) -> Result<std::optional<Identity>> {
        auto r = w.exec_params(
            "SELECT id, name, role, coalesce(agent, '') FROM tokens WHERE hash = $1 AND "
            "revoked_at IS NULL",
            hash);
        if (r.empty()) return std::optional<Identity>();
        Identity who;
        who.token_id = r[0][0].as<int64_t>();
        who.name = r[0][1].as<std::string>();
        auto role = ParseRole(r[0][2].as<std::string>());
        if (!role.ok()) return role.status();
        who.role = *role;
        who.agent = r[0][3].as<std::string>();
        return std::optional<Identity>(std::move(who));
      });
}

Result<bool> Store::HasLiveAdmin() {
  return InTx<bool>(pool_, clock_, [&](pqxx::work& w) -> Result<bool> {
    return !w.exec("SELECT 1 FROM tokens WHERE role = 'admin' AND revoked_at IS NULL LIMIT 1")
                .empty();
  });
}

Status Store::AuditRefusal(const std::string& actor, const std::string& method,
                           const std::string& reason, const std::string& peer, int64_t suppressed) {
  auto r = InTx<bool>(pool_, clock_, [&](pqxx::work& w) -> Result<bool> {
    json detail = {{"method", method}, {"reason", reason}, {"peer", peer}};
    if (suppressed > 0) detail["suppressed_before"] = suppressed;
    Audit(w, actor, "auth.refused", "rpc", 0, detail);
    return true;
  });
  return r.ok() ? Status::Ok() : r.status();
}

}  // namespace tunectl
