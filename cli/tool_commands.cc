#include "cli/tool_commands.h"

#include <iostream>
#include <set>
#include <sstream>

#include "cli/views.h"
#include "core/client_config.h"
#include "sys/files.h"

#ifndef TUNECTL_VERSION
#define TUNECTL_VERSION "dev"
#endif

namespace tunectl {
namespace {

int Fail(std::ostream& err, const Status& s) {
  err << "error: " << s.message() << "\n";
  return ExitCode(s);
}

std::string Words(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& w : v) out += (out.empty() ? "" : " ") + w;
  return out;
}

Result<ClientConfig> LoadConfig(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return ClientConfig{};  // no file yet: no contexts
  return ParseClientConfig(*text, path);
}

}  // namespace

const char* ClientVersion() {
  return TUNECTL_VERSION;
}

Result<std::string> RenderCompletion(const std::string& shell,
                                     const std::vector<CompletionCommand>& commands) {
  if (shell != "bash" && shell != "zsh")
    return Status::InvalidArgument("completion: shell \"" + shell +
                                   "\" is not supported; allowed: bash, zsh");
  std::vector<std::string> nouns;
  std::set<std::string> seen;
  for (const auto& c : commands)
    if (seen.insert(c.noun).second) nouns.push_back(c.noun);
  std::ostringstream s;
  s << "# tunectl " << shell << " completion: source <(tunectl completion " << shell << ")\n";
  if (shell == "zsh") s << "autoload -U +X bashcompinit && bashcompinit\n";
  s << "_tunectl_ids() { tunectl __complete \"$1\" 2>/dev/null; }\n"
       "_tunectl() {\n"
       "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
       "  local noun=${COMP_WORDS[1]} verb=${COMP_WORDS[2]} words=\"\" pos=\"\"\n"
       "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
       "    COMPREPLY=($(compgen -W \""
    << Words(nouns)
    << " --server --context --version --help\" -- \"$cur\")); return\n"
       "  fi\n"
       "  case \"$prev\" in\n"
       "    -o|--output) COMPREPLY=($(compgen -W \"table json csv name\" -- \"$cur\")); return ;;\n"
       "    --workload) COMPREPLY=($(compgen -W \"$(_tunectl_ids workloads)\" -- \"$cur\")); "
       "return ;;\n"
       "    --baseline) COMPREPLY=($(compgen -W \"$(_tunectl_ids baselines)\" -- \"$cur\")); "
       "return ;;\n"
       "    --hypothesis) COMPREPLY=($(compgen -W \"$(_tunectl_ids hypotheses)\" -- \"$cur\")); "
       "return ;;\n"
       "    --experiment) COMPREPLY=($(compgen -W \"$(_tunectl_ids experiments)\" -- \"$cur\")); "
       "return ;;\n"
       "    --state) COMPREPLY=($(compgen -W \"running measured decided frozen closed cancelled\" "
       "-- \"$cur\")); return ;;\n"
       "    --schedule) COMPREPLY=($(compgen -W \"$(_tunectl_ids schedules)\" -- \"$cur\")); "
       "return ;;\n"
       "    --vary|--param) COMPREPLY=($(compgen -W \"$(_tunectl_ids params)\" -- \"$cur\")); "
       "compopt -o nospace 2>/dev/null; return ;;\n"
       "    --context) COMPREPLY=($(compgen -W \"$(_tunectl_ids contexts)\" -- \"$cur\")); "
       "return ;;\n"
       "  esac\n"
       "  case \"$noun\" in\n";
  for (const auto& noun : nouns) {
    std::vector<std::string> verbs;
    for (const auto& c : commands)
      if (c.noun == noun && !c.verb.empty()) verbs.push_back(c.verb);
    s << "    " << noun << ")\n";
    if (!verbs.empty())
      s << "      if [ \"$COMP_CWORD\" -eq 2 ]; then COMPREPLY=($(compgen -W \"" << Words(verbs)
        << "\" -- \"$cur\")); return; fi\n";
    s << "      case \"" << (verbs.empty() ? "" : "$verb") << "\" in\n";
    for (const auto& c : commands) {
      if (c.noun != noun) continue;
      s << "        \"" << c.verb << "\") words=\"" << Words(c.flags) << "\"; pos=\""
        << c.positional << "\" ;;\n";
    }
    s << "      esac ;;\n";
  }
  s << "  esac\n"
       "  if [[ \"$cur\" == -* ]]; then COMPREPLY=($(compgen -W \"$words --help\" -- \"$cur\"));\n"
       "  elif [ -n \"$pos\" ]; then\n"
       "    case \"$pos\" in\n"
       "      workload) COMPREPLY=($(compgen -W \"$(_tunectl_ids workloads)\" -- \"$cur\")) ;;\n"
       "      id) COMPREPLY=($(compgen -W \"$(_tunectl_ids \"$noun\")\" -- \"$cur\")) ;;\n"
       "      agent) COMPREPLY=($(compgen -W \"$(_tunectl_ids agents)\" -- \"$cur\")) ;;\n"
       "      context) COMPREPLY=($(compgen -W \"$(_tunectl_ids contexts)\" -- \"$cur\")) ;;\n"
       "      shell) COMPREPLY=($(compgen -W \"bash zsh\" -- \"$cur\")) ;;\n"
       "    esac\n"
       "  fi\n"
       "}\n"
       "complete -F _tunectl tunectl\n";
  return s.str();
}

int VersionCmd(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  auto f = ParseOutputFormat(o.output);
  if (!f.ok()) return Fail(err, f.status());
  auto w = c.WhoAmI();
  if (*f == OutputFormat::kName) {
    err << "error: -o name: a version has no name of its own; use -o json or -o csv\n";
    return 2;
  }
  if (*f == OutputFormat::kJson || *f == OutputFormat::kCsv) {
    ojson j;
    j["client"] = ClientVersion();
    j["server"] = w.ok() ? ojson(w->version()) : ojson(nullptr);
    j["server_address"] = o.server;
    j["server_error"] = w.ok() ? ojson(nullptr) : ojson(w.status().message());
    if (*f == OutputFormat::kJson)
      out << Document("Version", j).dump(2) << "\n";
    else
      out << RenderCsv(DocumentCsv(j));
  } else {
    out << "client: tunectl " << ClientVersion() << "\n";
    if (w.ok()) out << "server: tunectl-server " << w->version() << " (" << o.server << ")\n";
  }
  if (!w.ok()) {
    err << "error: server " << o.server << ": " << w.status().message() << "\n";
    return ExitCode(w.status());
  }
  return 0;
}

int ContextList(Client&, const CliOptions& o, std::ostream& out, std::ostream& err) {
  auto f = ParseOutputFormat(o.output);
  if (!f.ok()) return Fail(err, f.status());
  const std::string path = ClientConfigPath();
  auto config = LoadConfig(path);
  if (!config.ok()) return Fail(err, config.status());
  if (*f == OutputFormat::kJson) {
    ojson arr = ojson::array();
    for (const auto& ctx : config->contexts) {
      ojson j;
      j["name"] = ctx.name;
      j["current"] = ctx.name == config->current;
      j["server"] = ctx.server;
      j["ca"] = ctx.ca.empty() ? ojson(nullptr) : ojson(ctx.ca);
      j["token"] = !ctx.token.empty();  // whether it has one; never the secret
      j["client_cert"] = ctx.client_cert.empty() ? ojson(nullptr) : ojson(ctx.client_cert);
      arr.push_back(std::move(j));
    }
    out << ListDocument("Context", std::move(arr), "").dump(2) << "\n";
    return 0;
  }
  if (*f == OutputFormat::kName) {
    for (const auto& ctx : config->contexts) out << "context/" << ctx.name << "\n";
    return 0;
  }
  Table t{{"current", "name", "server", "tls", "token"}, {}};
  for (const auto& ctx : config->contexts)
    t.rows.push_back({ctx.name == config->current ? "*" : "", ctx.name, ctx.server,
                      ctx.ca.empty() ? "no" : "yes", ctx.token.empty() ? "no" : "yes"});
  out << (*f == OutputFormat::kCsv ? RenderCsv(t) : RenderTable(t));
  if (config->contexts.empty()) err << "no contexts in " << path << "\n";
  return 0;
}

int ContextUse(Client&, const CliOptions& o, std::ostream& out, std::ostream& err) {
  const std::string path = ClientConfigPath();
  auto config = LoadConfig(path);
  if (!config.ok()) return Fail(err, config.status());
  std::vector<std::string> names;
  for (const auto& ctx : config->contexts) names.push_back(ctx.name);
  bool found = false;
  for (const auto& n : names) found |= n == o.name;
  if (!found)
    return Fail(err, Status::NotFound(
                         "context \"" + o.name + "\" is not in " + path +
                         (names.empty() ? "; it has no contexts" : "; contexts: " + Words(names))));
  config->current = o.name;
  if (auto st = WriteSecretFile(path, RenderClientConfig(*config)); !st.ok()) return Fail(err, st);
  out << "current context: " << o.name << "\n";
  return 0;
}

int CompletionCmd(Client&, const CliOptions& o, std::ostream& out, std::ostream& err) {
  auto script = RenderCompletion(o.name, o.completion);
  if (!script.ok()) return Fail(err, script.status());
  out << *script;
  return 0;
}

// Names and ids for the completion script, one per line; silent (exit 0, nothing) when the server
// cannot be asked, so a shell never shows an error while completing.
int CompleteCmd(Client& c, const CliOptions& o, std::ostream& out, std::ostream&) {
  const std::string& kind = o.name;
  auto page = [&](auto req) {
    req.set_limit(50);
    return req;
  };
  if (kind == "workloads") {
    if (auto r = c.ListWorkloads(page(v1::ListWorkloadsRequest{})); r.ok())
      for (const auto& w : r->workloads()) out << w.name() << "\n";
  } else if (kind == "params") {
    if (auto r = c.ListWorkloads(page(v1::ListWorkloadsRequest{})); r.ok() && r->workloads_size()) {
      v1::GetConfigRequest get;
      get.set_workload(o.workload.empty() ? r->workloads(0).name() : o.workload);
      if (auto cfg = c.GetConfig(get); cfg.ok())
        for (const auto& [name, value] : cfg->current().params()) out << name << "=\n";
    }
  } else if (kind == "baseline" || kind == "baselines") {
    if (auto r = c.ListBaselines(page(v1::ListBaselinesRequest{})); r.ok())
      for (const auto& b : r->baselines()) out << b.id() << "\n";
  } else if (kind == "experiment" || kind == "experiments") {
    if (auto r = c.ListExperiments(page(v1::ListExperimentsRequest{})); r.ok())
      for (const auto& e : r->experiments()) out << e.id() << "\n";
  } else if (kind == "hypothesis" || kind == "hypotheses") {
    if (auto r = c.ListHypotheses(page(v1::ListHypothesesRequest{})); r.ok())
      for (const auto& h : r->hypotheses()) out << h.id() << "\n";
  } else if (kind == "batch" || kind == "batches") {
    if (auto r = c.ListBatches(page(v1::ListBatchesRequest{})); r.ok())
      for (const auto& b : r->batches()) out << b.id() << "\n";
  } else if (kind == "run" || kind == "runs") {
    if (auto r = c.ListRuns(page(v1::ListRunsRequest{})); r.ok())
      for (const auto& run : r->runs()) out << run.id() << "\n";
  } else if (kind == "agents") {
    if (auto r = c.ListAgents(); r.ok())
      for (const auto& a : r->agents()) out << a.name() << "\n";
  } else if (kind == "schedules") {
    if (auto r = c.ListSchedules(); r.ok())
      for (const auto& s : r->schedules()) out << s.name() << "\n";
  } else if (kind == "contexts") {
    if (auto config = LoadConfig(ClientConfigPath()); config.ok())
      for (const auto& ctx : config->contexts) out << ctx.name << "\n";
  }
  return 0;
}

}  // namespace tunectl
