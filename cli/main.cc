// tunectl: the user's CLI. Parses flags (the only place), then runs one entry of Commands().
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string_view>

#include "cli/commands.h"
#include "cli/tool_commands.h"
#include "core/spec.h"

namespace {

// The subcommand of `level` named `word`, or nullptr.
CLI::App* Subcommand(CLI::App* level, const std::string& word) {
  for (CLI::App* sub : level->get_subcommands([](CLI::App*) { return true; }))
    if (!sub->get_name().empty() && sub->check_name(word)) return sub;
  return nullptr;
}

std::string PathOf(const CLI::App* level) {
  std::string path;
  for (; level; level = level->get_parent())
    path = level->get_name() + (path.empty() ? "" : " " + path);
  return path;
}

// Before CLI11 parses: a word that is not a command where a command is expected, or a flag that
// the command (and its parents) does not have, is bad input with the nearest name, as kubectl and
// git say it. "" when the words are fine (CLI11 then checks values and what is required).
std::string CheckWords(CLI::App& app, int argc, char** argv) {
  CLI::App* level = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.size() > 1 && arg[0] == '-') {
      if (arg == "-h" || arg == "--help") return "";
      const std::string name = arg.substr(0, arg.find('='));
      const CLI::Option* opt = nullptr;
      for (CLI::App* l = level; l && !opt; l = l->get_parent()) opt = l->get_option_no_throw(name);
      if (!opt) {
        std::vector<std::string> flags;
        for (CLI::App* l = level; l; l = l->get_parent())
          for (const CLI::Option* o : l->get_options())
            for (const auto& n : o->get_lnames()) flags.push_back("--" + n);
        std::string msg = "unknown flag " + name + " for \"" + PathOf(level) + "\"";
        const std::string near = tunectl::NearestName(name, flags);
        if (!near.empty()) msg += "; did you mean " + near + "?";
        return msg + " (see " + PathOf(level) + " --help)";
      }
      if (arg.find('=') == std::string::npos && opt->get_items_expected_min() > 0) ++i;
      continue;
    }
    std::vector<std::string> names;
    for (CLI::App* sub :
         level->get_subcommands([](CLI::App* a) { return !a->get_group().empty(); }))
      if (!sub->get_name().empty()) names.push_back(sub->get_name());
    if (names.empty()) continue;  // a positional argument of a leaf command
    if (CLI::App* sub = Subcommand(level, arg)) {
      level = sub;
      continue;
    }
    std::string msg = "unknown command \"" + arg + "\" for \"" + PathOf(level) + "\"";
    const std::string near = tunectl::NearestName(arg, names);
    if (!near.empty()) msg += "; did you mean \"" + near + "\"?";
    std::string all;
    for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
    return msg + "\navailable: " + all;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  tunectl::CliOptions o;
  CLI::App app{"tunectl: hypothesis-driven performance tuning of training jobs", "tunectl"};
  app.require_subcommand(0, 1);
  app.fallthrough();  // --server, --context and -o anywhere on the line, as kubectl's flags
  bool version = false;
  app.add_flag("--version", version, "the client's and the server's version");
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
      noun->require_subcommand(0, 1);  // `tunectl experiment` alone: its verbs (help)
      if (cmd.hidden) noun->group("");
    }
    const std::string_view n = cmd.noun, v = cmd.verb;
    CLI::App* sub = v.empty() ? noun : noun->add_subcommand(cmd.verb, cmd.help);
    if (v.empty()) {
      noun->description(cmd.help);
      noun->require_subcommand(0);
    }
    sub->add_option("-o,--output", o.output, "output format: table, json, csv or name (kind/id)")
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
    // One convention: the workload positional or --workload, both accepted wherever one is named.
    const bool names_workload = ((n == "baseline" || n == "experiment" || n == "hypothesis") &&
                                 (v == "create" || v == "run" || v == "list")) ||
                                n == "config" || n == "log" || (n == "regress" && v != "resolve") ||
                                n == "goal" || (n == "batch" && v == "create") ||
                                (n == "workload" && v != "apply" && v != "list");
    if (names_workload) {
      sub->add_option("--workload", o.workload, "workload name (optional when there is one)");
      sub->add_option("workload", o.workload_positional, "workload name (or --workload)");
    }
    if (n == "token" && (v == "create" || v == "revoke"))
      sub->add_option("name", o.name, "the token's name")->required();
    if (n == "token" && v == "create") {
      sub->add_option("--role", o.role, "viewer, operator, admin or agent")->required();
      sub->add_option("--agent", o.agent,
                      "role agent: the one agent name the token may register as (default NAME)");
    }
    if (n == "token" && v == "list") sub->add_flag("--all", o.all, "include revoked tokens");
    if (n == "workload" && v == "list")
      sub->add_flag("--all", o.all, "include archived workloads (an ARCHIVED column says when)");
    if (n == "agent" && v == "remove")
      sub->add_option("agent", o.name, "the agent's name (tunectl agent list)")->required();
    if (n == "context" && v == "use")
      sub->add_option("name", o.name, "the context to make current")->required();
    if (n == "completion") sub->add_option("shell", o.name, "bash or zsh")->required();
    if (n == "__complete") sub->add_option("kind", o.name, "what to list")->required();
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
    if (n == "config" && v == "export") {
      sub->add_option("--format", o.format, "json, yaml, env or args")->capture_default_str();
      sub->add_option("--version", o.version,
                      "a past config version N (tunectl config show lists them; default: the "
                      "current one)");
    }
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
      sub->add_option("--repeats", o.repeats,
                      "the cap on runs per arm: runs come in control/variant pairs and stop as "
                      "soon as the verdict is clear, at most this many pairs (default: max(10, 2 "
                      "x run.repeats); 4..500)")
          ->check(CLI::Range(4, 500));
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
    if ((n == "experiment" || n == "baseline") && v == "show") {
      sub->add_flag("--wait", o.wait, "while it runs: wait for it, showing progress");
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
    if ((v == "show" && n != "config" && n != "regress" && n != "goal" && n != "workload") ||
        v == "cancel" || v == "freeze" || v == "advise")
      sub->add_option("id", o.id, std::string(cmd.noun) + " id")->required();
    if (n == "run" && v == "logs") {
      sub->add_option("id", o.id, "run id (tunectl run list)")->required();
      sub->add_flag("-f,--follow", o.follow,
                    "keep streaming while the run runs (waits for a queued run to start, and "
                    "follows a retry to its next attempt)");
      sub->add_option("--tail", o.tail, "start with the last N lines, not the beginning")
          ->check(CLI::Range(1, 100000));
      sub->add_option("--attempt", o.attempt,
                      "an earlier attempt of the run (default: the current one)")
          ->check(CLI::Range(1, 1000));
    }
    if (n == "run" && v == "samples") {
      sub->add_option("id", o.id, "run id (tunectl run list)")->required();
      sub->add_option("--metric", o.metric, "only this metric (default: every metric of the run)");
      sub->add_option("--attempt", o.attempt,
                      "an earlier attempt of the run (default: the current one)");
      sub->add_option("--max-points", o.max_points,
                      "points per metric at most: more are decimated, keeping the lowest and "
                      "highest of each bucket (default 2000; 10..100000)");
    }
    if (n == "run" && v == "list") {
      sub->add_option("--baseline", o.baseline, "only the runs of this baseline");
      sub->add_option("--experiment", o.experiment,
                      "only the runs of this experiment, control and variant");
    }
    if (n == "experiment" && v == "list")
      sub->add_option("--state", o.state,
                      "only experiments in this state: running, measured, decided, frozen, "
                      "closed or cancelled");
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
  if (const std::string bad = CheckWords(app, argc, argv); !bad.empty()) {
    std::cerr << "error: " << bad << "\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ConversionError& e) {
    // CLI11 says "Could not convert: id = abc": name the field, the value and what is allowed.
    std::string what = e.what();
    const auto colon = what.find(": "), eq = what.find(" = ");
    if (colon != std::string::npos && eq != std::string::npos && eq > colon)
      what = what.substr(colon + 2, eq - colon - 2) + ": \"" + what.substr(eq + 3) +
             "\" is not a valid number; allowed: a whole number, e.g. 12";
    std::cerr << "error: " << what << "\n";
    return 2;
  } catch (const CLI::ParseError& e) {
    // Bad input, whatever CLI11 calls it (a missing value, a required flag, a value out of range).
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
  o.interactive = isatty(STDERR_FILENO);

  // The command tree for `completion`: every leaf's flags and what its positional names.
  for (const auto& [sub, cmd] : leaves) {
    tunectl::CompletionCommand c{cmd->noun, cmd->verb, {}, ""};
    if (cmd->hidden) continue;
    for (const CLI::Option* opt : sub->get_options()) {
      for (const auto& l : opt->get_lnames()) c.flags.push_back("--" + l);
      if (opt->get_positional() && c.positional.empty()) c.positional = opt->get_name();
    }
    o.completion.push_back(std::move(c));
  }

  const tunectl::Command* chosen = nullptr;
  CLI::App* chosen_sub = nullptr;
  for (const auto& [sub, cmd] : leaves)  // a noun with verbs is not a leaf: no ambiguity
    if (sub->parsed()) chosen = cmd, chosen_sub = sub;
  if (version) {
    static const tunectl::Command kVersion{"version", "", "", &tunectl::VersionCmd};
    chosen = &kVersion;
  }
  if (!chosen) {
    // `tunectl` or `tunectl experiment` alone: what there is to run.
    CLI::App* level = &app;
    for (auto* n : app.get_subcommands()) level = n;
    std::cout << level->help();
    return 0;
  }
  if (chosen_sub) {
    if (const CLI::Option* limit = chosen_sub->get_option_no_throw("--limit"))
      o.limit_given = limit->count() > 0;
  }
  if (!o.workload_positional.empty()) {
    if (!o.workload.empty() && o.workload != o.workload_positional) {
      std::cerr << "error: workload named twice: \"" << o.workload_positional
                << "\" and --workload \"" << o.workload << "\"; give one\n";
      return 2;
    }
    o.workload = o.workload_positional;
  }
  if (chosen->local) {
    tunectl::Endpoint none;
    none.server = o.server;
    auto client = tunectl::Client::Connect(none);
    return tunectl::Execute(*chosen, *client, o, std::cout, std::cerr);
  }
  auto endpoint = tunectl::ResolveEndpoint(ep);
  if (!endpoint.ok()) {
    if (std::string_view(chosen->noun) == "__complete") return 0;
    std::cerr << "error: " << endpoint.status().message() << "\n";
    return 2;
  }
  o.server = endpoint->server;
  auto client = tunectl::Client::Connect(*endpoint);
  return tunectl::Execute(*chosen, *client, o, std::cout, std::cerr);
}
