// The CLI's subcommands: a table of (noun, verb) -> function, like ninja's tool table. Each
// function talks to the server through Client and writes results to `out`, errors and progress
// to `err`. Exit codes: 0 ok, 1 server/internal error, 2 bad input, 3 not found, 4 unavailable, 5
// not allowed (no/unknown/revoked token, or a role that may not).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "cli/client.h"
#include "core/status.h"

namespace tunectl {

// One command as the completion script sees it: `noun verb` ("" = the noun alone), its flags
// (--x), and what its positional argument names ("workload", "id", "context", "shell"; "" none).
struct CompletionCommand {
  std::string noun, verb;
  std::vector<std::string> flags;
  std::string positional;
};

struct CliOptions {
  std::string server = "127.0.0.1:7443";    // --server, or $TUNECTL_SERVER
  std::string output = "table";             // -o table|json|csv
  std::string file;                         // -f (workload apply; "-" = stdin)
  std::string workload;                     // --workload (or the positional, below)
  std::string workload_positional;          // the workload as a positional argument
  int repeats = 0;                          // --repeats (0 = the workload's run policy)
  bool wait = false;                        // --wait
  std::string timeout;                      // --timeout for --wait ("" = none)
  int64_t id = 0;                           // positional ID
  int64_t baseline = 0;                     // --baseline
  int limit = 0;                            // --limit: rows per page (0 = the default)
  bool limit_given = false;                 // --limit was passed (--limit 0 = all rows)
  std::string page_token;                   // --page-token: continue a list
  std::string since;                        // --since 30d | 12h | 2026-01-31
  std::string until;                        // audit export --until (same forms)
  bool interactive = false;                 // stderr is a terminal: redraw progress in place
  std::vector<std::string> vary;            // --vary NAME=VALUE (experiment run)
  std::vector<std::string> param_values;    // --param NAME=VALUE (hypothesis create)
  std::string param;                        // --param NAME (log filter)
  int64_t hypothesis = 0;                   // --hypothesis
  std::string expect, evidence, statement;  // hypothesis create
  bool force = false;                       // experiment freeze --force
  bool again = false;           // experiment run / batch create --again: a change decided before
  std::string reason;           // experiment freeze --reason; with --again, why it is tested again
  std::string format = "json";  // config export --format json|yaml|env|args
  std::string name;             // schedule create NAME
  std::string window, cron, duration, tz = "UTC";  // schedule create
  int max_agents = 0;
  std::string on_window_end;            // schedule create --on-window-end finish|requeue
  std::string schedule;                 // batch create --schedule
  std::string correction = "holm";      // batch create --correction holm|bh
  std::string request_id;               // --request-id on creates ("" = a new key per command)
  std::string against;                  // audit verify --against HEAD_FILE
  std::string metric;                   // goal set --metric; run samples --metric
  double target = 0;                    // goal set --target
  std::vector<std::string> guardrails;  // goal set --guardrail "mfu >= 0.45" (repeatable)
  std::string role;                     // token create --role
  std::string agent;                    // token create --agent (role agent; default NAME)
  bool all = false;                     // token list --all; workload list --all (archived too)
  int64_t experiment = 0;               // run list --experiment
  std::string state;                    // experiment list --state
  int version = 0;                      // config export --version (0 = the current one)
  bool follow = false;                  // run logs -f: keep streaming while the run runs
  int tail = 0;                         // run logs --tail N (0 = from the beginning)
  int attempt = 0;                      // run logs|samples --attempt N (0 = the current one)
  int max_points = 0;                   // run samples --max-points (0 = the server's default)
  std::vector<CompletionCommand> completion;  // completion: the command tree main.cc built
};

using CommandFn = int (*)(Client& client, const CliOptions& o, std::ostream& out,
                          std::ostream& err);

struct Command {
  const char* noun;
  const char* verb;  // "" = the noun is the command (tunectl log)
  const char* help;
  CommandFn run;
  bool local = false;   // needs no server (context, completion): no endpoint is resolved
  bool hidden = false;  // not in --help (__complete)
};

const std::vector<Command>& Commands();

// Runs `cmd` after what every command shares: an -o the CLI does not know is refused (exit 2)
// before anything reaches the server.
int Execute(const Command& cmd, Client& client, const CliOptions& o, std::ostream& out,
            std::ostream& err);

int ExitCode(const Status& s);

}  // namespace tunectl
