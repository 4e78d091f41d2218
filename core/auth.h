// Who may call what: the roles, the role every RPC needs (one table), the decision on a caller's
// identity, and the shape of tokens. Tokens are stored only as their SHA-256; the random bytes
// come from the caller (core reads no entropy). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tunectl {

// viewer reads; operator also creates workloads, baselines, hypotheses, experiments, batches,
// goals and stability runs, and cancels them; admin also freezes, resolves regressions, manages
// schedules, watches and tokens, and may open agent sessions under any name; agent may only open
// an agent session, under the name its token is bound to.
enum class Role { kViewer, kOperator, kAdmin, kAgent };

std::string_view RoleName(Role r);
// InvalidArgument naming the field (`field`), the value and the roles allowed.
Result<Role> ParseRole(std::string_view text, std::string_view field = "--role");

// A token to be made, checked: `name` matches CheckTokenName, `role` is one of the four, `agent`
// is the one agent name an agent token is bound to (only an agent token has one).
struct TokenSpec {
  std::string name;
  Role role = Role::kViewer;
  std::string agent;
};
// The one rule for a new token: the name's pattern, the role, and for role agent the bound agent
// name (default: the token's name; a valid agent name). InvalidArgument naming NAME, --role or
// --agent, the value and what is allowed.
Result<TokenSpec> ParseTokenSpec(std::string_view name, std::string_view role,
                                 std::string_view agent);

// The caller behind a valid, unrevoked token.
struct Identity {
  int64_t token_id = 0;
  std::string name;  // the token's name: "alice", "n1"
  Role role = Role::kViewer;
  std::string agent;  // agent tokens: the only agent name it may register as
};

// The actor written into audit events and tuning-log entries: "user:alice" / "agent:n1".
std::string ActorOf(const Identity& who);

// Full gRPC method names, "/tunectl.v1.TuningService/FreezeExperiment".
inline constexpr std::string_view kAgentSessionMethod = "/tunectl.v1.AgentService/Session";

// The role a method needs; nullopt for a method the table does not know (refused: a new RPC
// must be added to the table before anyone may call it).
std::optional<Role> RequiredRole(std::string_view method);
// Every method the table knows, for the role-matrix test and the docs.
std::vector<std::string> KnownMethods();

// Whether `have` may call a method that needs `need`: viewer < operator < admin; an agent token
// only agent methods; an admin also agent methods.
bool Allows(Role have, Role need);

// The decision for one call. Unauthenticated when there is no identity (no token, an unknown or a
// revoked one: `why_none` says which), PermissionDenied naming the role needed and the caller's
// role otherwise; Ok when allowed.
Status Authorize(const std::optional<Identity>& who, std::string_view method,
                 std::string_view why_none = "no token");

// Whether an agent session under `agent_name` is the identity's to open: an agent token bound to
// another name is refused (PermissionDenied naming both).
Status CheckAgentBinding(const Identity& who, std::string_view agent_name);

// "tct_" + 64 lowercase hex digits of `random_bytes` (32 of them).
std::string FormatToken(std::string_view random_bytes);
// The gRPC metadata key a token travels in, and its value: "Bearer tct_…".
inline constexpr std::string_view kAuthorizationKey = "authorization";
std::string BearerHeader(std::string_view token);
// The bearer token out of an `authorization` header value ("Bearer tct_…"); InvalidArgument (no
// secret echoed) when it is not one.
Result<std::string> BearerToken(std::string_view header);
// What is stored: SHA-256 of the token as 64 hex digits.
std::string TokenHash(std::string_view token);

// A token's name: 1–63 of [a-z0-9._@-], starting with a letter or digit. InvalidArgument naming
// `field`, the value and the pattern.
Status CheckTokenName(std::string_view name, std::string_view field = "NAME");

// The local admin the server keeps for the embedded default (no set-up): its context in the
// client config is named after the address clients dial, its token after the local user.
std::string LocalAdminContext(std::string_view address);  // "local-127.0.0.1:7443"
std::string LocalAdminTokenName(std::string_view user);   // "local-root"; "local-admin" if odd
// Whether the server must make a new local admin token. The embedded default keeps the
// context's token valid: a new one when the context has none, its token is not a live admin
// token, or it names another CA. With an external database (`embedded` false) only while no live
// admin token exists at all, so servers sharing a database do not replace each other's.
bool NeedsLocalAdminToken(bool embedded, const std::optional<Identity>& context_token,
                          bool context_ca_matches, bool any_live_admin);

// Whether a libpq connection string (key=value or postgresql:// URI) carries a password: one the
// server warns about on its command line, where ps shows it.
bool DsnHasPassword(std::string_view dsn);

}  // namespace tunectl
