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
  if (const char* s = std::getenv("TUNECTL_SERVER"); s && *s) o.server = s;
  CLI::App app{"tunectl: hypothesis-driven performance tuning of training jobs"};
  app.require_subcommand(1);
  app.add_option("--server", o.server, "tunectl-server address (env TUNECTL_SERVER)")
      ->capture_default_str();

  std::map<std::string, CLI::App*> nouns;
  std::vector<std::pair<CLI::App*, const tunectl::Command*>> leaves;
  for (const auto& cmd : tunectl::Commands()) {
    CLI::App*& noun = nouns[cmd.noun];
    if (!noun) {
      noun = app.add_subcommand(cmd.noun, std::string(cmd.noun) + " commands");
      noun->require_subcommand(1);
    }
    CLI::App* sub = noun->add_subcommand(cmd.verb, cmd.help);
    const std::string_view n = cmd.noun, v = cmd.verb;
    sub->add_option("-o,--output", o.output, "output format: table, json or csv")
        ->capture_default_str();
    if (n == "workload" && v == "apply")
      sub->add_option("-f,--file", o.file, "workload file (YAML or JSON; - for stdin)")->required();
    if ((n == "baseline" && (v == "create" || v == "list")))
      sub->add_option("--workload", o.workload, "workload name (optional when there is one)");
    if (n == "baseline" && v == "create") {
      sub->add_option("--repeats", o.repeats,
                      "runs to measure (default: the workload's run.repeats)")
          ->check(CLI::Range(1, 1000));
      sub->add_flag("--wait", o.wait, "wait for the runs, showing progress, then show the summary");
      sub->add_option("--timeout", o.timeout, "with --wait: give up waiting after this (e.g. 30m)");
    }
    if (v == "show") sub->add_option("id", o.id, std::string(cmd.noun) + " id")->required();
    if (n == "run" && v == "list") {
      sub->add_option("--baseline", o.baseline, "only the runs of this baseline");
      sub->add_option("--limit", o.limit, "at most this many (newest)")
          ->check(CLI::Range(1, 100000));
    }
    leaves.emplace_back(sub, &cmd);
  }
  CLI11_PARSE(app, argc, argv);
  o.interactive = isatty(STDERR_FILENO);

  for (const auto& [sub, cmd] : leaves) {
    if (!sub->parsed()) continue;
    const char* user = std::getenv("USER");
    auto client = tunectl::Client::Connect(o.server, user && *user ? user : "unknown");
    return cmd->run(*client, o, std::cout, std::cerr);
  }
  return 2;
}
