#include "core/kube.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "core/text.h"

namespace tunectl {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxName = 63;                  // a DNS-1123 label; a label value
constexpr size_t kConfigMapBytes = 1000 * 1000;  // a ConfigMap holds 1 MiB; room for the rest
constexpr const char* kContainer = kKubeContainer;

std::string Quoted(std::string_view v) {
  return "\"" + std::string(v) + "\"";
}

bool IsAlnumLower(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
bool IsAlnum(char c) {
  return IsAlnumLower(c) || (c >= 'A' && c <= 'Z');
}

// [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63.
bool IsDns1123Label(std::string_view s) {
  if (s.empty() || s.size() > kMaxName) return false;
  if (!IsAlnumLower(s.front()) || !IsAlnumLower(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return IsAlnumLower(c) || c == '-'; });
}

// Labels joined by dots, at most 253.
bool IsDns1123Subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t i = 0;
  while (i <= s.size()) {
    size_t dot = s.find('.', i);
    if (dot == std::string_view::npos) dot = s.size();
    if (!IsDns1123Label(s.substr(i, dot - i))) return false;
    i = dot + 1;
  }
  return true;
}

// A label value: "" or [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most 63.
bool IsLabelValue(std::string_view s) {
  if (s.empty()) return true;
  if (s.size() > kMaxName || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

// A label key: [prefix/]name, the prefix a DNS subdomain, the name a non-empty label value.
bool IsLabelKey(std::string_view s) {
  const size_t slash = s.find('/');
  std::string_view name = s;
  if (slash != std::string_view::npos) {
    if (!IsDns1123Subdomain(s.substr(0, slash))) return false;
    name = s.substr(slash + 1);
  }
  return !name.empty() && IsLabelValue(name);
}

// `text` made a label value: other characters become '-', cut to 63, ends alphanumeric.
std::string AsLabelValue(std::string_view text) {
  std::string v;
  for (char c : text) v += IsAlnum(c) || c == '-' || c == '_' || c == '.' ? c : '-';
  if (v.size() > kMaxName) v.resize(kMaxName);
  while (!v.empty() && !IsAlnum(v.back())) v.pop_back();
  size_t i = 0;
  while (i < v.size() && !IsAlnum(v[i])) ++i;
  return v.substr(i);
}

bool IsUtf8(std::string_view s) {
  return SanitizeUtf8(s) == s;
}

// A YAML double-quoted scalar (valid JSON too): control characters, DEL and the characters YAML
// 1.1 reads as line breaks (U+0085, U+2028, U+2029) and the BOM escaped. `s` is valid UTF-8.
std::string Q(std::string_view s) {
  std::string out = "\"";
  char buf[8];
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x85) {
      out += "\\u0085";
      ++i;
    } else if (c == 0xe2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(s[i + 2]) == 0xa8 ||
                static_cast<unsigned char>(s[i + 2]) == 0xa9)) {
      out += static_cast<unsigned char>(s[i + 2]) == 0xa8 ? "\\u2028" : "\\u2029";
      i += 2;
    } else if (c == 0xef && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0xbb &&
               static_cast<unsigned char>(s[i + 2]) == 0xbf) {
      out += "\\ufeff";
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// Whether `s` reads back unchanged from a literal block ("|" or "|-"): text lines only, the first
// not indented, no whitespace-only line, at most one newline at the end.
bool FitsLiteralBlock(std::string_view s) {
  if (s.empty() || s.front() == ' ' || s.front() == '\t' || s.front() == '\n') return false;
  if (s.size() >= 2 && s.substr(s.size() - 2) == "\n\n") return false;
  if (Q(s).find("\\u") != std::string::npos) return false;  // control or line-break characters
  if (s.find('\r') != std::string_view::npos) return false;
  size_t i = 0;
  while (i < s.size()) {
    size_t nl = s.find('\n', i);
    if (nl == std::string_view::npos) nl = s.size();
    const std::string_view line = s.substr(i, nl - i);
    if (!line.empty() && line.find_first_not_of(" \t") == std::string_view::npos) return false;
    i = nl + 1;
  }
  return true;
}

std::string Base64(std::string_view in) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t n = (static_cast<unsigned char>(in[i]) << 16) |
                       (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  if (i < in.size()) {
    uint32_t n = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// A path relative to the run directory: no empty, "." or ".." component, not absolute.
bool IsRelativePath(std::string_view p) {
  if (p.empty() || p.front() == '/' || p.size() > 4096) return false;
  size_t i = 0;
  while (i <= p.size()) {
    size_t slash = p.find('/', i);
    if (slash == std::string_view::npos) slash = p.size();
    const std::string_view part = p.substr(i, slash - i);
    if (part.empty() || part == "." || part == "..") return false;
    i = slash + 1;
  }
  return true;
}

// A ConfigMap key for a file path: [-._a-zA-Z0-9]+, other characters '_'.
std::string KeyOf(std::string_view path) {
  std::string k;
  for (char c : path) k += IsAlnum(c) || c == '-' || c == '.' || c == '_' ? c : '_';
  if (k.size() > 200) k = k.substr(k.size() - 200);
  if (k == "." || k == "..") k = "_" + k;
  return k;
}

// An env name every Kubernetes version accepts: [-._a-zA-Z][-._a-zA-Z0-9]*.
bool IsEnvName(std::string_view s) {
  if (s.empty() || (s.front() >= '0' && s.front() <= '9')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '.' || c == '_'; });
}

Status Invalid(const std::string& field, const std::string& value, const std::string& allowed) {
  return Status::InvalidArgument(field + ": " + value + " " + allowed);
}

// Emits YAML lines.
class Yaml {
 public:
  void Line(int indent, const std::string& text) {
    out_.append(static_cast<size_t>(indent), ' ');
    out_ += text;
    out_ += '\n';
  }
  void Labels(int indent, const std::map<std::string, std::string>& labels) {
    Line(indent, "labels:");
    for (const auto& [k, v] : labels) Line(indent + 2, Q(k) + ": " + Q(v));
  }
  void Text(int indent, const std::string& key, const std::string& content) {
    if (!FitsLiteralBlock(content)) return Line(indent, key + ": " + Q(content));
    const bool newline_at_end = content.back() == '\n';
    Line(indent, key + ": |" + (newline_at_end ? "" : "-"));
    const std::string_view body(content.data(), content.size() - (newline_at_end ? 1 : 0));
    size_t i = 0;
    while (i <= body.size()) {
      size_t nl = body.find('\n', i);
      if (nl == std::string_view::npos) nl = body.size();
      const std::string_view line = body.substr(i, nl - i);
      if (line.empty())
        out_ += '\n';
      else
        Line(indent + 2, std::string(line));
      i = nl + 1;
    }
  }
  std::string str() const { return out_; }

 private:
  std::string out_;
};

}  // namespace

std::string KubeObjectName(const KubeOptions& opts, int64_t run_id, int attempt) {
  return opts.name_prefix + "-" + std::to_string(run_id) + "-" + std::to_string(attempt);
}

Result<KubeToleration> ParseKubeToleration(std::string_view text) {
  const std::string shown = "\"" + std::string(text) + "\"";
  KubeToleration t;
  std::string_view rest = text;
  const size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos) {
    t.effect = std::string(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
  }
  const size_t eq = rest.find('=');
  t.key = std::string(rest.substr(0, eq));
  if (eq != std::string_view::npos) {
    t.op = "Equal";
    t.value = std::string(rest.substr(eq + 1));
  } else {
    t.op = "Exists";
  }
  static const std::set<std::string> kEffects = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
  if (colon != std::string_view::npos && !kEffects.count(t.effect))
    return Invalid("toleration", shown,
                   "has the effect \"" + t.effect +
                       "\"; allowed: NoSchedule, PreferNoSchedule, NoExecute (written "
                       "key=value:Effect, key:Effect, key=value or key)");
  if (!t.key.empty() && !IsLabelKey(t.key))
    return Invalid("toleration", shown,
                   "has the key \"" + t.key + "\", which is not a label key ([prefix/]name)");
  if (t.key.empty() && t.op == "Equal")
    return Invalid("toleration", shown, "has a value without a key; write key=value:Effect");
  if (t.op == "Equal" && !IsLabelValue(t.value))
    return Invalid("toleration", shown, "has the value \"" + t.value + "\", not a label value");
  if (text.empty()) return Invalid("toleration", shown, "is empty; write key=value:Effect");
  return t;
}

Result<std::pair<std::string, std::string>> ParseKubeNodeSelector(std::string_view text) {
  const size_t eq = text.find('=');
  const std::string shown = "\"" + std::string(text) + "\"";
  if (eq == std::string_view::npos)
    return Invalid("node selector", shown, "has no '='; write KEY=VALUE (a node label)");
  std::string key(text.substr(0, eq)), value(text.substr(eq + 1));
  if (!IsLabelKey(key))
    return Invalid("node selector", shown,
                   "has the key \"" + key +
                       "\", which is not a label key ([prefix/]name, the name at most 63 of "
                       "[A-Za-z0-9-_.])");
  if (!IsLabelValue(value))
    return Invalid("node selector", shown,
                   "has the value \"" + value +
                       "\", which is not a label value (at most 63 of [A-Za-z0-9-_.], "
                       "alphanumeric at both ends)");
  return std::make_pair(key, value);
}

Status CheckKubeOptions(const KubeOptions& o) {
  if (o.image.empty())
    return Status::InvalidArgument(
        "image: empty; the Kubernetes executor needs a container image "
        "(--kube-image registry/name:tag)");
  if (!IsUtf8(o.image) || o.image.find_first_of(" \t\n\r") != std::string::npos)
    return Invalid("image", Quoted(o.image), "has spaces or bytes that are not text");
  if (!o.ns.empty() && !IsDns1123Label(o.ns))
    return Invalid("namespace", Quoted(o.ns),
                   "is not a DNS-1123 label (at most 63 of [a-z0-9-], alphanumeric at both ends)");
  if (!IsDns1123Label(o.name_prefix) || o.name_prefix.size() > 30)
    return Invalid("name prefix", Quoted(o.name_prefix),
                   "is not a DNS-1123 label of at most 30 characters ([a-z0-9-])");
  if (!o.service_account.empty() && !IsDns1123Subdomain(o.service_account))
    return Invalid("service account", Quoted(o.service_account),
                   "is not a DNS-1123 subdomain ([a-z0-9-.], at most 253)");
  for (const auto& [k, v] : o.node_selector) {
    if (!IsLabelKey(k)) return Invalid("node selector key", Quoted(k), "is not a label key");
    if (!IsLabelValue(v))
      return Invalid("node selector \"" + k + "\"", Quoted(v), "is not a label value");
  }
  for (const auto& t : o.tolerations) {
    if (t.op != "Exists" && t.op != "Equal")
      return Invalid("toleration operator", Quoted(t.op), "is not Exists or Equal");
    if (!t.key.empty() && !IsLabelKey(t.key))
      return Invalid("toleration key", Quoted(t.key), "is not a label key");
    if (t.op == "Exists" && !t.value.empty())
      return Invalid("toleration \"" + t.key + "\"", Quoted(t.value),
                     "is a value with operator Exists; use Equal");
    if (!t.effect.empty() && t.effect != "NoSchedule" && t.effect != "PreferNoSchedule" &&
        t.effect != "NoExecute")
      return Invalid("toleration effect", Quoted(t.effect),
                     "is not NoSchedule, PreferNoSchedule or NoExecute");
  }
  if (!o.image_pull_policy.empty() && o.image_pull_policy != "Always" &&
      o.image_pull_policy != "IfNotPresent" && o.image_pull_policy != "Never")
    return Invalid("image pull policy", Quoted(o.image_pull_policy),
                   "is not Always, IfNotPresent or Never");
  if (!IsLabelKey(o.gpu_resource) || o.gpu_resource.find('/') == std::string::npos)
    return Invalid("gpu resource", Quoted(o.gpu_resource),
                   "is not an extended resource name (domain/name, e.g. nvidia.com/gpu)");
  if (o.ttl_seconds_after_finished < -1)
    return Invalid("ttlSecondsAfterFinished", std::to_string(o.ttl_seconds_after_finished),
                   "is negative; -1 = never deleted, 0 or more = seconds");
  if (o.deadline_slack_s < 0)
    return Invalid("deadline slack", std::to_string(o.deadline_slack_s), "is negative");
  if (o.termination_grace_s < 0)
    return Invalid("termination grace", std::to_string(o.termination_grace_s), "is negative");
  return Status::Ok();
}

Result<std::string> RenderKubeJob(const KubeJob& job, const KubeOptions& opts) {
  if (Status s = CheckKubeOptions(opts); !s.ok()) return s;
  const std::string name = KubeObjectName(opts, job.run_id, job.attempt);
  if (job.run_id <= 0 || job.attempt <= 0)
    return Invalid("run", std::to_string(job.run_id) + "-" + std::to_string(job.attempt),
                   "has a run id or attempt that is not positive");
  if (!IsDns1123Label(name))
    return Invalid("name", Quoted(name), "is not a DNS-1123 label of at most 63 characters");
  const Resources& r = job.resources;
  if (r.nodes > 1)
    return Invalid("run.resources.nodes", std::to_string(r.nodes),
                   "is more than 1; the Kubernetes executor runs a run as one pod (nodes 0 or 1): "
                   "a multi-node run needs its pods gang-scheduled and able to find each other "
                   "(JobSet, a training operator), which a plain Job does not give — run it "
                   "with the Slurm executor");
  if (r.nodes < 0 || r.gpus_per_node < 0 || r.cpus_per_task < 0 || r.mem_mb < 0 || r.time_ms < 0)
    return Status::InvalidArgument(
        "run.resources: a negative value (nodes " + std::to_string(r.nodes) + ", gpus_per_node " +
        std::to_string(r.gpus_per_node) + ", cpus_per_task " + std::to_string(r.cpus_per_task) +
        ", mem_mb " + std::to_string(r.mem_mb) + "); each is 0 (not asked for) or more");
  if (job.timeout_ms < 0)
    return Invalid("run.timeout", std::to_string(job.timeout_ms) + " ms", "is negative");
  if (job.argv.empty() || job.argv[0].empty())
    return Status::InvalidArgument("command: empty; a run needs a program to run");
  for (size_t i = 0; i < job.argv.size(); ++i)
    if (!IsUtf8(job.argv[i]))
      return Invalid("command[" + std::to_string(i) + "]", Quoted(SanitizeUtf8(job.argv[i])),
                     "is not UTF-8 text (or holds a NUL); Kubernetes carries text only");
  if (job.run_dir.empty() || job.run_dir.front() != '/' ||
      !IsRelativePath(std::string_view(job.run_dir).substr(1)) || !IsUtf8(job.run_dir))
    return Invalid("run dir", Quoted(job.run_dir),
                   "is not an absolute path without '.', '..' or empty parts");
  if (!job.workdir.empty() && (job.workdir.front() != '/' || !IsUtf8(job.workdir)))
    return Invalid("workdir", Quoted(job.workdir), "is not an absolute path");
  if (!job.node_name.empty() && !IsDns1123Subdomain(job.node_name))
    return Invalid("node", Quoted(job.node_name), "is not a node name (a DNS-1123 subdomain)");

  std::map<std::string, std::string> env = job.env;
  env["TUNECTL_RUN_ID"] = std::to_string(job.run_id);
  env["TUNECTL_ATTEMPT"] = std::to_string(job.attempt);
  env["TUNECTL_RUN_DIR"] = job.run_dir;
  for (const auto& [k, v] : env) {
    if (!IsEnvName(k))
      return Invalid("env", Quoted(SanitizeUtf8(k)),
                     "is not a name every Kubernetes accepts ([-._a-zA-Z][-._a-zA-Z0-9]*)");
    if (!IsUtf8(v))
      return Invalid("env." + k, Quoted(SanitizeUtf8(v)),
                     "is not UTF-8 text (or holds a NUL); Kubernetes carries text only");
  }

  // The generated files: one ConfigMap key each.
  struct File {
    std::string path, key;
    bool text;
  };
  std::vector<File> files;
  std::set<std::string> keys;
  size_t total = 0;
  for (const auto& [path, content] : job.files) {
    if (!IsRelativePath(path) || !IsUtf8(path))
      return Invalid("files", Quoted(SanitizeUtf8(path)),
                     "is not a path inside the run directory (relative, no '.', '..' or empty "
                     "parts, UTF-8)");
    std::string key = KeyOf(path);
    for (int n = 2; keys.count(key); ++n) key = std::to_string(n) + "-" + KeyOf(path);
    keys.insert(key);
    const bool text = IsUtf8(content);
    total += key.size() + (text ? content.size() : (content.size() + 2) / 3 * 4);
    files.push_back({path, key, text});
  }
  if (total > kConfigMapBytes)
    return Invalid("files", std::to_string(total) + " bytes in all",
                   "do not fit in one ConfigMap (at most " + std::to_string(kConfigMapBytes) +
                       " bytes; Kubernetes keeps an object under 1 MiB): generate smaller files or "
                       "put the data in the image or a volume");

  std::map<std::string, std::string> labels = {
      {"tunectl.io/run", std::to_string(job.run_id)},
      {"tunectl.io/attempt", std::to_string(job.attempt)},
      {"tunectl.io/workload", AsLabelValue(job.workload)},
      {"tunectl.io/agent", AsLabelValue(opts.agent)},
  };

  Yaml y;
  auto metadata = [&](int indent) {
    y.Line(indent, "metadata:");
    y.Line(indent + 2, "name: " + Q(name));
    if (!opts.ns.empty()) y.Line(indent + 2, "namespace: " + Q(opts.ns));
    y.Labels(indent + 2, labels);
  };
  if (!files.empty()) {
    y.Line(0, "apiVersion: v1");
    y.Line(0, "kind: ConfigMap");
    metadata(0);
    bool any_text = false, any_binary = false;
    for (const auto& f : files) (f.text ? any_text : any_binary) = true;
    if (any_text) {
      y.Line(0, "data:");
      for (const auto& f : files)
        if (f.text) y.Text(2, Q(f.key), job.files.at(f.path));
    }
    if (any_binary) {
      y.Line(0, "binaryData:");
      for (const auto& f : files)
        if (!f.text) y.Line(2, Q(f.key) + ": " + Q(Base64(job.files.at(f.path))));
    }
    y.Line(0, "---");
  }
  y.Line(0, "apiVersion: batch/v1");
  y.Line(0, "kind: Job");
  metadata(0);
  y.Line(0, "spec:");
  y.Line(2, "backoffLimit: 0");
  const int64_t time_ms = r.time_ms > 0 ? r.time_ms : job.timeout_ms;
  if (time_ms > 0)
    y.Line(2, "activeDeadlineSeconds: " +
                  std::to_string((time_ms + 999) / 1000 + opts.deadline_slack_s));
  if (opts.ttl_seconds_after_finished >= 0)
    y.Line(2, "ttlSecondsAfterFinished: " + std::to_string(opts.ttl_seconds_after_finished));
  y.Line(2, "template:");
  y.Line(4, "metadata:");
  y.Labels(6, labels);
  y.Line(4, "spec:");
  y.Line(6, "restartPolicy: Never");
  y.Line(6, "terminationGracePeriodSeconds: " + std::to_string(opts.termination_grace_s));
  if (!opts.service_account.empty()) y.Line(6, "serviceAccountName: " + Q(opts.service_account));
  if (!opts.node_selector.empty()) {
    y.Line(6, "nodeSelector:");
    for (const auto& [k, v] : opts.node_selector) y.Line(8, Q(k) + ": " + Q(v));
  }
  if (!job.node_name.empty()) {
    y.Line(6, "affinity:");
    y.Line(8, "nodeAffinity:");
    y.Line(10, "requiredDuringSchedulingIgnoredDuringExecution:");
    y.Line(12, "nodeSelectorTerms:");
    y.Line(12, "- matchFields:");
    y.Line(14, "- key: \"metadata.name\"");
    y.Line(16, "operator: \"In\"");
    y.Line(16, "values:");
    y.Line(16, "- " + Q(job.node_name));
  }
  if (!opts.tolerations.empty()) {
    y.Line(6, "tolerations:");
    for (const auto& t : opts.tolerations) {
      bool first = true;
      auto field = [&](const std::string& k, const std::string& v) {
        y.Line(first ? 6 : 8, (first ? "- " : "") + k + ": " + Q(v));
        first = false;
      };
      if (!t.key.empty()) field("key", t.key);
      field("operator", t.op);
      if (t.op == "Equal") field("value", t.value);
      if (!t.effect.empty()) field("effect", t.effect);
    }
  }
  y.Line(6, "containers:");
  y.Line(6, std::string("- name: ") + Q(kContainer));
  y.Line(8, "image: " + Q(opts.image));
  if (!opts.image_pull_policy.empty()) y.Line(8, "imagePullPolicy: " + Q(opts.image_pull_policy));
  y.Line(8, "command:");
  for (const auto& a : job.argv) y.Line(8, "- " + Q(a));
  if (!job.workdir.empty()) y.Line(8, "workingDir: " + Q(job.workdir));
  y.Line(8, "env:");
  for (const auto& [k, v] : env) {
    y.Line(8, "- name: " + Q(k));
    y.Line(10, "value: " + Q(v));
  }
  std::map<std::string, std::string> requests, limits;
  if (r.cpus_per_task > 0) requests["cpu"] = limits["cpu"] = std::to_string(r.cpus_per_task);
  if (r.mem_mb > 0) requests["memory"] = limits["memory"] = std::to_string(r.mem_mb) + "Mi";
  if (r.gpus_per_node > 0) limits[opts.gpu_resource] = std::to_string(r.gpus_per_node);
  if (!limits.empty()) {
    y.Line(8, "resources:");
    if (!requests.empty()) {
      y.Line(10, "requests:");
      for (const auto& [k, v] : requests) y.Line(12, Q(k) + ": " + Q(v));
    }
    y.Line(10, "limits:");
    for (const auto& [k, v] : limits) y.Line(12, Q(k) + ": " + Q(v));
  }
  y.Line(8, "volumeMounts:");
  y.Line(8, "- name: \"run-dir\"");
  y.Line(10, "mountPath: " + Q(job.run_dir));
  for (const auto& f : files) {
    y.Line(8, "- name: \"files\"");
    y.Line(10, "mountPath: " + Q(job.run_dir + "/" + f.path));
    y.Line(10, "subPath: " + Q(f.key));
    y.Line(10, "readOnly: true");
  }
  y.Line(6, "volumes:");
  y.Line(6, "- name: \"run-dir\"");
  y.Line(8, "emptyDir: {}");
  if (!files.empty()) {
    y.Line(6, "- name: \"files\"");
    y.Line(8, "configMap:");
    y.Line(10, "name: " + Q(name));
  }
  return y.str();
}

// ---- kubectl's JSON ------------------------------------------------------------------------

namespace {

std::string Str(const Json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

int64_t Int(const Json& j, const char* key) {
  if (!j.is_object()) return 0;
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

const Json& Obj(const Json& j, const char* key) {
  static const Json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it != j.end() ? *it : kNull;
}

Result<Json> ParseJson(std::string_view text, const std::string& what) {
  DocumentLimits limits;
  limits.max_bytes = 64u << 20;
  if (Status s = CheckDocument(text, what, limits); !s.ok()) return s;
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    std::string head(text.substr(0, 120));
    return Status::InvalidArgument(what + ": not a JSON object: \"" + SanitizeUtf8(head) + "\"");
  }
  return j;
}

std::string Joined(const std::string& reason, const std::string& message) {
  if (message.empty()) return reason;
  if (reason.empty()) return message;
  return reason + ": " + message;
}

KubePodInfo PodOf(const Json& p) {
  KubePodInfo pod;
  const Json& meta = Obj(p, "metadata");
  pod.name = Str(meta, "name");
  pod.created = Str(meta, "creationTimestamp");
  pod.deleting = !Str(meta, "deletionTimestamp").empty();
  pod.node = Str(Obj(p, "spec"), "nodeName");
  const Json& st = Obj(p, "status");
  pod.phase = Str(st, "phase");
  pod.reason = Str(st, "reason");
  pod.message = Str(st, "message");
  if (const Json& conds = Obj(st, "conditions"); conds.is_array()) {
    for (const auto& c : conds) {
      const std::string type = Str(c, "type"), status = Str(c, "status");
      if (type == "PodScheduled" && status == "False")
        pod.unschedulable = Joined(Str(c, "reason"), Str(c, "message"));
      if (type == "DisruptionTarget" && status == "True")
        pod.disruption = Joined(Str(c, "reason"), Str(c, "message"));
    }
  }
  const Json* chosen = nullptr;
  if (const Json& cs = Obj(st, "containerStatuses"); cs.is_array()) {
    for (const auto& c : cs)
      if (Str(c, "name") == kContainer) chosen = &c;
    if (!chosen && !cs.empty()) chosen = &cs[0];
  }
  if (chosen) {
    pod.restarts = static_cast<int>(Int(*chosen, "restartCount"));
    const Json& state = Obj(*chosen, "state");
    KubeContainerState& c = pod.container;
    if (const Json& t = Obj(state, "terminated"); t.is_object()) {
      c.state = "terminated";
      c.reason = Str(t, "reason");
      c.message = Str(t, "message");
      c.exit_code = static_cast<int>(Int(t, "exitCode"));
      c.signal = static_cast<int>(Int(t, "signal"));
      c.started_at = Str(t, "startedAt");
      c.finished_at = Str(t, "finishedAt");
    } else if (const Json& r = Obj(state, "running"); r.is_object()) {
      c.state = "running";
      c.started_at = Str(r, "startedAt");
    } else if (const Json& w = Obj(state, "waiting"); w.is_object()) {
      c.state = "waiting";
      c.reason = Str(w, "reason");
      c.message = Str(w, "message");
    }
  }
  return pod;
}

}  // namespace

Result<std::optional<KubeJobInfo>> ParseKubeJob(std::string_view json) {
  if (json.find_first_not_of(" \t\r\n") == std::string_view::npos)
    return std::optional<KubeJobInfo>();
  auto parsed = ParseJson(json, "kubectl get job");
  if (!parsed.ok()) return parsed.status();
  const Json& j = *parsed;
  if (Str(j, "kind") != "Job")
    return Status::InvalidArgument("kubectl get job: kind \"" + Str(j, "kind") +
                                   "\"; expected a Job");
  KubeJobInfo job;
  const Json& meta = Obj(j, "metadata");
  job.name = Str(meta, "name");
  job.uid = Str(meta, "uid");
  job.deleting = !Str(meta, "deletionTimestamp").empty();
  const Json& spec = Obj(j, "spec");
  job.suspended = Obj(spec, "suspend").is_boolean() && Obj(spec, "suspend").get<bool>();
  const Json& st = Obj(j, "status");
  job.active = static_cast<int>(Int(st, "active"));
  job.ready = static_cast<int>(Int(st, "ready"));
  job.succeeded = static_cast<int>(Int(st, "succeeded"));
  job.failed = static_cast<int>(Int(st, "failed"));
  job.start_time = Str(st, "startTime");
  job.completion_time = Str(st, "completionTime");
  if (const Json& conds = Obj(st, "conditions"); conds.is_array()) {
    for (const auto& c : conds) {
      if (Str(c, "status") != "True") continue;
      const std::string type = Str(c, "type");
      if (type == "Complete") job.complete = true;
      if (type == "Failed") {
        job.failed_condition = true;
        job.failed_reason = Str(c, "reason");
        job.failed_message = Str(c, "message");
      }
      if (type == "Suspended") {
        job.suspended = true;
        job.suspended_message = Str(c, "message");
      }
    }
  }
  return std::optional<KubeJobInfo>(std::move(job));
}

Result<std::vector<KubePodInfo>> ParseKubePods(std::string_view json) {
  auto parsed = ParseJson(json, "kubectl get pods");
  if (!parsed.ok()) return parsed.status();
  const Json& j = *parsed;
  const Json& items = Obj(j, "items");
  if (!items.is_array())
    return Status::InvalidArgument("kubectl get pods: kind \"" + Str(j, "kind") +
                                   "\" without items; expected a List of pods");
  std::vector<KubePodInfo> pods;
  for (const auto& p : items)
    if (Str(p, "kind").empty() || Str(p, "kind") == "Pod") pods.push_back(PodOf(p));
  std::sort(pods.begin(), pods.end(), [](const KubePodInfo& a, const KubePodInfo& b) {
    return std::tie(a.created, a.name) < std::tie(b.created, b.name);
  });
  return pods;
}

KubePhase KubePhaseOf(const KubeJobInfo& job, const KubePodInfo* pod) {
  if (job.complete || job.failed_condition) return KubePhase::kEnded;
  if (!pod) return KubePhase::kPending;
  if (pod->phase == "Succeeded" || pod->phase == "Failed") return KubePhase::kEnded;
  if (pod->container.state == "terminated") return KubePhase::kEnded;
  if (pod->container.state == "running") return KubePhase::kRunning;
  return KubePhase::kPending;
}

std::string KubePendingReason(const KubeJobInfo& job, const KubePodInfo* pod) {
  if (job.suspended) return Joined("Suspended", job.suspended_message);
  if (!pod) return "no pod yet";
  if (!pod->unschedulable.empty()) return pod->unschedulable;
  if (pod->container.state == "waiting" && !pod->container.reason.empty())
    return Joined(pod->container.reason, pod->container.message);
  if (!pod->reason.empty()) return Joined(pod->reason, pod->message);
  return pod->phase.empty() ? "Pending" : pod->phase;
}

std::string KubeStuckReason(const KubePodInfo& pod) {
  static const std::set<std::string> kStuck = {
      "ErrImagePull",      "ImagePullBackOff",           "InvalidImageName",
      "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError",
  };
  if (pod.container.state != "waiting" || !kStuck.count(pod.container.reason)) return "";
  return Joined(pod.container.reason, pod.container.message);
}

KubeEnd ClassifyKubeEnd(const KubeObserved& seen) {
  KubeEnd e;
  auto cluster = [&](std::string reason) {
    e.infra_failure = true;
    e.reason = std::move(reason);
    return e;
  };
  auto own = [&](std::string reason, int code, int signal = 0) {
    e.reason = std::move(reason);
    e.exit_code = code;
    e.signal = signal;
    return e;
  };
  const KubeJobInfo* job = seen.job ? &*seen.job : nullptr;
  const KubePodInfo* pod = seen.pod ? &*seen.pod : nullptr;
  const KubeContainerState* c = pod ? &pod->container : nullptr;
  const bool terminated = c && c->state == "terminated";

  if (seen.cancelled_by_agent) return own("cancelled", terminated ? c->exit_code : 0);
  if ((job && job->complete) || (terminated && c->exit_code == 0 && c->signal == 0 &&
                                 c->reason != "OOMKilled" && !(job && job->failed_condition))) {
    e.succeeded = true;
    return e;
  }
  if (job && job->failed_condition && job->failed_reason == "DeadlineExceeded") {
    if (seen.ran || (c && !c->started_at.empty()))
      return own("timeout: the Job's activeDeadlineSeconds passed (DeadlineExceeded" +
                     (job->failed_message.empty() ? "" : ": " + job->failed_message) + ")",
                 terminated ? c->exit_code : 0, terminated ? c->signal : 0);
    return cluster("not started within the Job's activeDeadlineSeconds (" +
                   (pod ? KubePendingReason(*job, pod) : std::string("no pod was created")) + ")");
  }
  if (pod && !pod->disruption.empty())
    return cluster("the cluster stopped the pod (" +
                   (pod->reason.empty() ? "" : pod->reason + ", ") + "DisruptionTarget " +
                   pod->disruption + ")");
  if (pod) {
    static const std::set<std::string> kNodeReasons = {"Evicted",      "NodeLost",
                                                       "Shutdown",     "Terminated",
                                                       "NodeShutdown", "UnexpectedAdmissionError",
                                                       "NodeAffinity"};
    if (kNodeReasons.count(pod->reason) || pod->reason.rfind("OutOf", 0) == 0)
      return cluster("the cluster stopped the pod (" + Joined(pod->reason, pod->message) + ")");
    if (pod->deleting)
      return cluster(
          "the pod was deleted before it ended (not by this agent: an operator, a drain "
          "or a controller)" +
          (terminated ? " — its container exited " + std::to_string(c->exit_code) : std::string()));
    if (std::string stuck = KubeStuckReason(*pod); !stuck.empty()) {
      const bool pull = c->reason.find("Image") != std::string::npos;
      return cluster(std::string(pull ? "image pull failed: " : "the pod could not start: ") +
                     stuck);
    }
  }
  if (terminated) {
    if (c->reason == "OOMKilled")
      return own("host OOM: the container was OOMKilled at its memory limit (exit " +
                     std::to_string(c->exit_code) + ")",
                 c->exit_code ? c->exit_code : 137, 9);
    if (c->reason == "StartError" || c->reason == "ContainerCannotRun")
      return own("launch_failed: " + Joined(c->reason, c->message), 127);
    if (c->exit_code != 0 || c->signal != 0) return own("", c->exit_code, c->signal);
  }
  if (job && job->failed_condition && (seen.pod_gone || !pod))
    return cluster("the pod was deleted or lost before it ended (Job " +
                   Joined(job->failed_reason, job->failed_message) + ")");
  if (!job)
    return cluster(
        "lost: the Job was deleted (by someone else, or by its TTL) before this agent "
        "saw it end");
  if (job->failed_condition)
    return own("failed: " + Joined(job->failed_reason, job->failed_message), 0);
  return cluster("the Job ended without a known cause (" +
                 (pod ? "pod " + pod->phase + (pod->reason.empty() ? "" : " " + pod->reason)
                      : std::string("no pod")) +
                 ")");
}

bool IsTransientKubectlError(std::string_view out) {
  static const char* kTransient[] = {
      "Unable to connect to the server",
      "connection refused",
      "connection reset by peer",
      "i/o timeout",
      "TLS handshake timeout",
      "context deadline exceeded",
      "the server is currently unable to handle the request",
      "the server was unable to return a response",
      "Internal error occurred",
      "etcdserver:",
      "http2: client connection lost",
      "net/http: request canceled",
      "too many requests",
      "Too Many Requests",
      "ServiceUnavailable",
      "no route to host",
      "unexpected EOF",
      "the object has been modified",
  };
  for (const char* t : kTransient)
    if (out.find(t) != std::string_view::npos) return true;
  return false;
}

}  // namespace tunectl
