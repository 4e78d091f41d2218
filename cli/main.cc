// tunectl: the user's CLI. Parses flags (the only place), then runs one entry of Commands().
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string_view>

#include "cli/commands.h"

int main(int argc, char** argv) {
  tunectl::CliOptions o;
  CLI::App app{"tunectl: hypothesis-driven performance tuning of training jobs"};
  app.require_subcommand(1);
  tunectl::EndpointRequest ep;
  if (const char* s = std::getenv("TUNECTL_SERVER"); s && *s) ep.server = s;
  if (const char* c = std::getenv("TUNECTL_CONTEXT"); c && *c) ep.context = c;
  app.add_option(
      "--server", ep.server,
      "tunectl-server address (env TUNECTL_SERVER; default: the context's, else " + o.server + ")");
  app.add_option("--context", ep.context,
                 "context of the client config ($TUNECTL_CONFIG or ~/.config/tunectl/config) to "
                 "use (env TUNECTL_CONTEXT; default: the one for --server, else the current)");

  std::map<std::string, CLI::App*> nouns;
  std::vector<std::pair<CLI::App*, const tunectl::Command*>> leaves;
  for (const auto& cmd : tunectl::Commands()) {
    CLI::App*& noun = nouns[cmd.noun];
    if (!noun) {
      noun = app.add_subcommand(cmd.noun, std::string(cmd.noun) + " commands");
      noun->require_subcommand(1);
    }
    const std::string_view n = cmd.noun, v = cmd.verb;
    CLI::App* sub = v.empty() ? noun : noun->add_subcommand(cmd.verb, cmd.help);
    if (v.empty()) {
      noun->description(cmd.help);
      noun->require_subcommand(0);
    }
    sub->add_option("-o,--output", o.output, "output format: table, json or csv")
        ->capture_default_str();
    const bool creates = (n == "baseline" && v == "create") || (n == "experiment" && v == "run") ||
                         (n == "batch" && v == "create") || (n == "hypothesis" && v == "create") ||
                         (n == "regress" && v == "run");
    if (creates)
      sub->add_option("--request-id", o.request_id,
                      "retry a request that timed out without creating twice: the key its error "
                      "message named (default: a new one)");
    if (n == "workload" && v == "apply")
      sub->add_option("-f,--file", o.file, "workload file (YAML or JSON; - for stdin)")->required();
    if ((n == "baseline" && (v == "create" || v == "list")) || n == "hypothesis" ||
        (n == "experiment" && (v == "run" || v == "list")) || n == "config" || n == "log")
      sub->add_option("--workload", o.workload, "workload name (optional when there is one)");
    if (n == "config" || (n == "regress" && v != "resolve") || n == "goal")
      sub->add_option("workload", o.workload, "workload name");
    if (n == "token" && (v == "create" || v == "revoke"))
      sub->add_option("name", o.name, "the token's name")->required();
    if (n == "token" && v == "create") {
      sub->add_option("--role", o.role, "viewer, operator, admin or agent")->required();
      sub->add_option("--agent", o.agent,
                      "role agent: the one agent name the token may register as (default NAME)");
    }
    if (n == "token" && v == "list") sub->add_flag("--all", o.all, "include revoked tokens");
    if (n == "audit" && v == "verify")
      sub->add_option("--against", o.against,
                      "a head file written earlier by `tunectl audit head`: the chain must still "
                      "extend it");
    if (n == "audit" && v == "export") {
      sub->add_option("--since", o.since,
                      "required: the oldest rows to export: 2026-12-01, 2026-12-01T08:00:00Z "
                      "(RFC 3339) or a duration back from now, e.g. 7d, 24h");
      sub->add_option("--until", o.until, "only rows before then (the same forms; default: none)");
    }
    if (n == "goal" && v == "set") {
      sub->add_option("--metric", o.metric, "the metric the goal is about")->required();
      sub->add_option("--target", o.target, "the level to reach, in the metric's unit")->required();
      sub->add_option("--guardrail", o.guardrails,
                      "METRIC >= X (or >, <=, <) that a freeze must keep (repeatable)");
    }
    if (n == "config" && v == "export")
      sub->add_option("--format", o.format, "json, yaml, env or args")->capture_default_str();
    if (n == "hypothesis" && v == "create") {
      sub->add_option("--baseline", o.baseline,
                      "baseline to improve on (default: latest of the current config)");
      sub->add_option("--param", o.param_values, "NAME=VALUE: the one change to test")->required();
      sub->add_option("--expect", o.expect, "expected effect, e.g. \"samples_per_s +10%\"")
          ->required();
      sub->add_option("--evidence", o.evidence, "what points to the bottleneck");
      sub->add_option("--statement", o.statement, "the hypothesis in one sentence");
    }
    if (n == "experiment" && v == "run") {
      sub->add_option("--vary", o.vary, "NAME=VALUE: the one parameter to change");
      sub->add_option("--baseline", o.baseline,
                      "baseline to compare with (default: latest of the current config)");
      sub->add_option("--hypothesis", o.hypothesis, "the hypothesis this experiment tests");
      sub->add_option("--repeats", o.repeats, "runs per arm (default: the workload's run.repeats)")
          ->check(CLI::Range(1, 1000));
      sub->add_flag("--wait", o.wait, "wait for the verdict, showing progress");
      sub->add_option("--timeout", o.timeout, "with --wait: give up waiting after this (e.g. 30m)");
    }
    if ((n == "experiment" && v == "run") || (n == "batch" && v == "create")) {
      sub->add_flag("--again", o.again,
                    "test a change already decided on the same config again (needs --reason)");
      sub->add_option("--reason", o.reason, "with --again: why (kept in the tuning log)");
    }
    if (n == "experiment" && v == "freeze") {
      sub->add_flag("--force", o.force, "freeze although the verdict is not improved");
      sub->add_option("--reason", o.reason, "why a forced freeze is right (recorded in the log)");
    }
    if (n == "log") sub->add_option("--param", o.param, "only changes of this parameter");
    if (n == "schedule" && v == "create") {
      sub->add_option("name", o.name, "schedule name, e.g. nightly")->required();
      sub->add_option("--window", o.window, "weekly window, e.g. \"Mon-Fri 01:00-06:00\"");
      sub->add_option("--cron", o.cron, "cron start, e.g. \"0 22 * * Sat\" (with --duration)");
      sub->add_option("--duration", o.duration, "window length for --cron, e.g. 20h");
      sub->add_option("--tz", o.tz, "IANA time zone of the window")->capture_default_str();
      sub->add_option("--max-agents", o.max_agents, "agents used at once (0 = no limit)");
      sub->add_option("--on-window-end", o.on_window_end,
                      "runs still going when the window closes: finish (default) or requeue "
                      "(stopped, run again in the next window)");
    }
    if (n == "batch" && v == "create") {
      sub->add_option("--workload", o.workload, "workload name (optional when there is one)");
      sub->add_option("--baseline", o.baseline, "baseline all experiments compare with");
      sub->add_option("--vary", o.vary, "NAME=V1,V2: one experiment per value (repeatable)")
          ->required();
      sub->add_option("--schedule", o.schedule, "run only inside this schedule's windows");
      sub->add_option("--repeats", o.repeats, "runs per arm cap per experiment")
          ->check(CLI::Range(1, 1000));
      sub->add_option("--correction", o.correction, "holm (default) or bh for exploratory sweeps");
    }
    if (n == "baseline" && v == "create") {
      sub->add_option("--repeats", o.repeats,
                      "runs to measure (default: the workload's run.repeats)")
          ->check(CLI::Range(1, 1000));
      sub->add_flag("--wait", o.wait, "wait for the runs, showing progress, then show the summary");
      sub->add_option("--timeout", o.timeout, "with --wait: give up waiting after this (e.g. 30m)");
    }
    if (n == "regress" && v == "run") {
      sub->add_option("--duration", o.duration, "how long the stability run lasts, e.g. 2h")
          ->required();
      sub->add_option("--schedule", o.schedule, "start it only inside a window of this schedule");
      sub->add_flag("--wait", o.wait, "wait for the verdict, showing progress");
    }
    if (n == "regress" && v == "schedule") {
      sub->add_option("--schedule", o.schedule, "the schedule whose windows the checks run in")
          ->required();
      sub->add_option("--repeats", o.repeats, "runs per window (default 3)")
          ->check(CLI::Range(1, 100));
    }
    if (n == "regress" && v == "resolve") {
      sub->add_option("id", o.id, "regression id (tunectl regress show)")->required();
      sub->add_option("--reason", o.reason, "what fixed it (kept in the tuning log)")->required();
    }
    if ((v == "show" && n != "config" && n != "regress" && n != "goal") || v == "cancel" ||
        v == "freeze" || v == "advise")
      sub->add_option("id", o.id, std::string(cmd.noun) + " id")->required();
    if (n == "run" && v == "list")
      sub->add_option("--baseline", o.baseline, "only the runs of this baseline");
    // Every list pages: the newest 50 (workloads: the first 50 by name), oldest first.
    const bool paged = (v == "list" && n != "agent" && n != "schedule") || n == "log";
    if (paged) {
      sub->add_option("--limit", o.limit,
                      "rows per page (default 50; 0 = all of them, refused past 1000)");
      sub->add_option("--page-token", o.page_token,
                      "the next page: the token the previous page printed");
    }
    if (paged && n != "workload")
      sub->add_option("--since", o.since,
                      "only rows since then: 30d, 12h, 2026-01-31 or 2026-01-31T08:00:00Z (UTC)");
    if (n == "regress" && v == "show")
      sub->add_option("--limit", o.limit,
                      "the newest points of the series (default 200; 0 = the whole series, "
                      "refused past 20000)");
    leaves.emplace_back(sub, &cmd);
  }
  CLI11_PARSE(app, argc, argv);
  o.interactive = isatty(STDERR_FILENO);

  for (const auto& [sub, cmd] : leaves) {
    if (!sub->parsed()) continue;
    if (const CLI::Option* limit = sub->get_option_no_throw("--limit"))
      o.limit_given = limit->count() > 0;
    auto endpoint = tunectl::ResolveEndpoint(ep);
    if (!endpoint.ok()) {
      std::cerr << "error: " << endpoint.status().message() << "\n";
      return 2;
    }
    o.server = endpoint->server;
    auto client = tunectl::Client::Connect(*endpoint);
    return cmd->run(*client, o, std::cout, std::cerr);
  }
  return 2;
}
