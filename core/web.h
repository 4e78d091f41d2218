// The web view's pure rules (docs/web.md): percent-decoding, query strings and forms, cookies,
// the token a request carries, where a login may send the browser back to, and which read-only
// CLI command each `/api/...` path is (the pages' JSON is the CLI's `-o json` of that command).
// Pure functions over strings; thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/status.h"

namespace tunectl {

// The cookie the login page sets: the bearer token itself (HttpOnly, SameSite=Strict).
inline constexpr const char* kWebTokenCookie = "tunectl_token";

// %XX decoded; with `plus_is_space` (forms, queries) '+' is a space. nullopt when a '%' is not
// followed by two hex digits or the result holds a NUL byte.
std::optional<std::string> PercentDecode(const std::string& s, bool plus_is_space);

// application/x-www-form-urlencoded (a query string or a POST form): name -> value, the first of
// a repeated name kept. InvalidArgument naming the field when one does not decode.
Result<std::map<std::string, std::string>> ParseForm(const std::string& s);

// The value of cookie `name` in a Cookie header ("a=1; b=2"), "" when absent.
std::string CookieValue(const std::string& cookie_header, const std::string& name);

// The token of a request: `Authorization: Bearer T` first, else the login cookie; "" when none.
// `authorization` and `cookie` are the header fields' values ("" when absent).
std::string WebToken(const std::string& authorization, const std::string& cookie);

// The Set-Cookie value that keeps `token` for the web view (token "" = the one that clears it):
// HttpOnly, SameSite=Strict, Path=/, Secure when served over TLS, 12 hours.
std::string TokenCookie(const std::string& token, bool secure);

// Where a login goes after it succeeds: `next` when it is a path on this server ("/..." but not
// "//..." or "/\..."), else "/". Never another site.
std::string SafeNext(const std::string& next);

// One `/api/...` path as the read-only CLI command it runs: noun and verb as in `tunectl NOUN
// VERB`, and its arguments by the name of the CLI's option ("workload", "id", "experiment",
// "baseline", "param", "state", "since", "limit", "page_token", "all", "metric", "attempt",
// "max_points").
struct ApiCall {
  std::string noun, verb;
  std::map<std::string, std::string> args;
};

// The API's routes (docs/web.md has the table):
//   /api/workloads                      workload list
//   /api/workloads/NAME                 workload show NAME
//   /api/workloads/NAME/config          config show --workload NAME
//   /api/workloads/NAME/goal            goal show NAME
//   /api/workloads/NAME/regression      regress show NAME        (?limit=)
//   /api/baselines                      baseline list            (?workload=)
//   /api/baselines/ID                   baseline show ID
//   /api/baselines/ID/runs              run list --baseline ID
//   /api/hypotheses/ID                  hypothesis show ID
//   /api/experiments                    experiment list          (?workload=&state=)
//   /api/experiments/ID                 experiment show ID
//   /api/experiments/ID/runs            run list --experiment ID
//   /api/runs/ID                        run show ID
//   /api/runs/ID/samples                run samples ID           (?metric=&attempt=&max_points=)
//   /api/log                            log                      (?workload=&param=&since=)
//   /api/batches, /api/batches/ID       batch list, batch show ID
//   /api/schedules, /api/agents         schedule list, agent list
//   /api/whoami                         auth whoami
// Every list also takes ?limit= and ?page_token=; a run list without ?limit= has them all.
// `query` is the raw query string. NotFound for any other path (the message lists the routes),
// InvalidArgument for an id that is not a positive integer, a name that is empty or holds '/', an
// unknown or malformed query parameter (naming it).
Result<ApiCall> ResolveApi(const std::string& path, const std::string& query);

// Text made safe inside HTML element content and double-quoted attributes (& < > " ').
std::string HtmlEscape(const std::string& s);

// The HTTP status of a command's exit code (cli/commands.h): 0 → 200, 2 → 400, 3 → 404,
// 4 → 503, 5 → 403 (`unauthenticated` → 401), anything else 500.
int HttpStatusOfExit(int exit_code, bool unauthenticated);

}  // namespace tunectl
