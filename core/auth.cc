#include "core/auth.h"

#include <array>
#include <utility>

#include "core/agent_messages.h"
#include "core/audit_chain.h"

namespace tunectl {
namespace {

constexpr std::string_view kTuning = "/tunectl.v1.TuningService/";

// The one table: every RPC and the least role that may call it.
constexpr std::array<std::pair<std::string_view, Role>, 46> kTable{{
    // reads
    {"ListWorkloads", Role::kViewer},
    {"GetWorkload", Role::kViewer},
    {"GetBaseline", Role::kViewer},
    {"ListBaselines", Role::kViewer},
    {"AdviseBaseline", Role::kViewer},
    {"GetGoal", Role::kViewer},
    {"VerifyAudit", Role::kViewer},
    {"ListRuns", Role::kViewer},
    {"GetRun", Role::kViewer},
    {"GetRunSamples", Role::kViewer},
    {"StreamRunLogs", Role::kViewer},
    {"ListAgents", Role::kViewer},
    {"GetHypothesis", Role::kViewer},
    {"ListHypotheses", Role::kViewer},
    {"GetExperiment", Role::kViewer},
    {"ListExperiments", Role::kViewer},
    {"GetConfig", Role::kViewer},
    {"ListLog", Role::kViewer},
    {"ListSchedules", Role::kViewer},
    {"GetBatch", Role::kViewer},
    {"ListBatches", Role::kViewer},
    {"GetRegression", Role::kViewer},
    {"WhoAmI", Role::kViewer},
    // the loop's steps
    {"ApplyWorkload", Role::kOperator},
    {"DeleteWorkload", Role::kOperator},
    {"ArchiveWorkload", Role::kOperator},
    {"UnarchiveWorkload", Role::kOperator},
    {"RemoveAgent", Role::kOperator},
    {"CreateBaseline", Role::kOperator},
    {"CancelBaseline", Role::kOperator},
    {"SetGoal", Role::kOperator},
    {"CreateHypothesis", Role::kOperator},
    {"RunExperiment", Role::kOperator},
    {"CancelExperiment", Role::kOperator},
    {"CreateBatch", Role::kOperator},
    {"CancelBatch", Role::kOperator},
    {"RegressRun", Role::kOperator},
    // what changes the config, its watch, the calendar and who may do what
    {"FreezeExperiment", Role::kAdmin},
    {"ResolveRegression", Role::kAdmin},
    {"CreateSchedule", Role::kAdmin},
    {"RegressSchedule", Role::kAdmin},
    {"RegressStop", Role::kAdmin},
    {"CreateToken", Role::kAdmin},
    {"ListTokens", Role::kAdmin},
    {"RevokeToken", Role::kAdmin},
    // the audit trail's rows: token names, roles and the addresses of refused callers, which only
    // an admin sees elsewhere (`token list`); a viewer verifies the chain without reading a row
    {"ExportAudit", Role::kAdmin},
}};

int Rank(Role r) {
  switch (r) {
    case Role::kViewer: return 0;
    case Role::kOperator: return 1;
    case Role::kAdmin: return 2;
    case Role::kAgent: return -1;
  }
  return -1;
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '@' ||
         c == '-';
}

}  // namespace

std::string_view RoleName(Role r) {
  switch (r) {
    case Role::kViewer: return "viewer";
    case Role::kOperator: return "operator";
    case Role::kAdmin: return "admin";
    case Role::kAgent: return "agent";
  }
  return "?";
}

Result<Role> ParseRole(std::string_view text, std::string_view field) {
  for (Role r : {Role::kViewer, Role::kOperator, Role::kAdmin, Role::kAgent})
    if (text == RoleName(r)) return r;
  return Status::InvalidArgument(std::string(field) + ": \"" + std::string(text) +
                                 "\" is not a role; allowed: viewer, operator, admin, agent");
}

std::string ActorOf(const Identity& who) {
  return (who.role == Role::kAgent ? "agent:" : "user:") + who.name;
}

std::optional<Role> RequiredRole(std::string_view method) {
  if (method == kAgentSessionMethod) return Role::kAgent;
  if (method.substr(0, kTuning.size()) != kTuning) return std::nullopt;
  const std::string_view rpc = method.substr(kTuning.size());
  if (rpc.empty()) return std::nullopt;
  for (const auto& [name, role] : kTable)
    if (name == rpc) return role;
  return std::nullopt;
}

std::vector<std::string> KnownMethods() {
  std::vector<std::string> out;
  for (const auto& [name, role] : kTable) out.push_back(std::string(kTuning) + std::string(name));
  out.emplace_back(kAgentSessionMethod);
  return out;
}

bool Allows(Role have, Role need) {
  if (need == Role::kAgent) return have == Role::kAgent || have == Role::kAdmin;
  if (have == Role::kAgent) return false;
  return Rank(have) >= Rank(need);
}

Status Authorize(const std::optional<Identity>& who, std::string_view method,
                 std::string_view why_none) {
  if (!who)
    return Status::Unauthenticated(
        std::string(method) + " needs a token (" + std::string(why_none) +
        "): set one in ~/.config/tunectl/config or $TUNECTL_TOKEN; an admin creates tokens with "
        "tunectl token create NAME --role viewer|operator|admin|agent");
  const auto need = RequiredRole(method);
  if (!need)
    return Status::PermissionDenied(std::string(method) +
                                    " is not a method this server grants to anyone");
  if (Allows(who->role, *need)) return Status::Ok();
  std::string others;  // the other roles that may, from the same rule
  for (Role r : {Role::kViewer, Role::kOperator, Role::kAdmin, Role::kAgent})
    if (r != *need && Allows(r, *need))
      others += (others.empty() ? "" : ", ") + std::string(RoleName(r));
  std::string msg = std::string(method) + " needs role " + std::string(RoleName(*need)) +
                    (others.empty() ? "" : " (or " + others + ")") + "; token \"" + who->name +
                    "\" has role " + std::string(RoleName(who->role));
  if (who->role == Role::kAgent) msg += " (agent tokens may only open agent sessions)";
  return Status::PermissionDenied(msg);
}

Status CheckAgentBinding(const Identity& who, std::string_view agent_name) {
  if (who.role != Role::kAgent || who.agent == agent_name) return Status::Ok();
  return Status::PermissionDenied("agent token \"" + who.name + "\" is bound to agent \"" +
                                  who.agent + "\"; it may not register as \"" +
                                  std::string(agent_name) + "\"");
}

std::string FormatToken(std::string_view random_bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "tct_";
  for (unsigned char c : random_bytes) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

std::string BearerHeader(std::string_view token) {
  return "Bearer " + std::string(token);
}

Result<std::string> BearerToken(std::string_view header) {
  constexpr std::string_view kBearer = "Bearer ";
  if (header.substr(0, kBearer.size()) != kBearer)
    return Status::InvalidArgument("authorization: not \"Bearer <token>\"");
  std::string_view t = header.substr(kBearer.size());
  if (t.size() != 4 + 64 || t.substr(0, 4) != "tct_")
    return Status::InvalidArgument("authorization: not a tunectl token (tct_ and 64 hex digits)");
  for (char c : t.substr(4))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return Status::InvalidArgument("authorization: not a tunectl token (tct_ and 64 hex digits)");
  return std::string(t);
}

std::string TokenHash(std::string_view token) {
  return Sha256Hex(token);
}

Result<TokenSpec> ParseTokenSpec(std::string_view name, std::string_view role,
                                 std::string_view agent) {
  if (Status st = CheckTokenName(name); !st.ok()) return st;
  auto r = ParseRole(role);
  if (!r.ok()) return r.status();
  TokenSpec spec{std::string(name), *r, std::string(agent)};
  if (*r != Role::kAgent) {
    if (!agent.empty())
      return Status::InvalidArgument("--agent: \"" + spec.agent +
                                     "\": only an agent token is bound to an agent name (--role "
                                     "agent)");
    return spec;
  }
  if (spec.agent.empty()) spec.agent = spec.name;
  if (Status st = CheckAgentName(spec.agent, "--agent"); !st.ok()) return st;
  return spec;
}

std::string LocalAdminContext(std::string_view address) {
  return "local-" + std::string(address);
}

std::string LocalAdminTokenName(std::string_view user) {
  const std::string name = "local-" + std::string(user);
  return !user.empty() && CheckTokenName(name).ok() ? name : "local-admin";
}

bool NeedsLocalAdminToken(bool embedded, const std::optional<Identity>& context_token,
                          bool context_ca_matches, bool any_live_admin) {
  if (!embedded) return !any_live_admin;
  return !context_token || context_token->role != Role::kAdmin || !context_ca_matches;
}

Status CheckTokenName(std::string_view name, std::string_view field) {
  bool ok = !name.empty() && name.size() <= 63 && name[0] != '.' && name[0] != '_' &&
            name[0] != '@' && name[0] != '-';
  for (char c : name) ok = ok && IsNameChar(c);
  if (ok) return Status::Ok();
  return Status::InvalidArgument(std::string(field) + ": \"" + std::string(name) +
                                 "\" is not a token name; allowed: 1-63 of a-z 0-9 . _ @ -, "
                                 "starting with a letter or digit");
}

bool DsnHasPassword(std::string_view dsn) {
  if (dsn.rfind("postgresql://", 0) == 0 || dsn.rfind("postgres://", 0) == 0) {
    const auto rest = dsn.substr(dsn.find("://") + 3);
    const auto at = rest.find('@');
    const auto slash = rest.find('/');
    if (at != std::string_view::npos && (slash == std::string_view::npos || at < slash) &&
        rest.substr(0, at).find(':') != std::string_view::npos)
      return true;
    const auto q = rest.find('?');
    if (q == std::string_view::npos) return false;
    const auto query = rest.substr(q + 1);
    return query.rfind("password=", 0) == 0 || query.find("&password=") != std::string_view::npos;
  }
  // key = value pairs: a "password" key at the start or after a blank.
  for (size_t at = dsn.find("password"); at != std::string_view::npos;
       at = dsn.find("password", at + 1)) {
    if (at > 0 && dsn[at - 1] != ' ' && dsn[at - 1] != '\t') continue;
    size_t i = at + 8;
    while (i < dsn.size() && dsn[i] == ' ') ++i;
    if (i < dsn.size() && dsn[i] == '=') return true;
  }
  return false;
}

}  // namespace tunectl
