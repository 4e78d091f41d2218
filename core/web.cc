#include "core/web.h"

#include <cctype>
#include <set>
#include <vector>

namespace tunectl {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string Trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

bool IsPositiveId(const std::string& s) {
  if (s.empty() || s.size() > 18 || s[0] == '0') return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

const char* kRoutes =
    "/api/workloads[/NAME[/config|/goal|/regression]], /api/baselines[/ID[/runs]], "
    "/api/hypotheses/ID, /api/experiments[/ID[/runs]], /api/runs/ID[/samples], /api/log, "
    "/api/batches[/ID], /api/schedules, /api/agents, /api/whoami";

}  // namespace

std::optional<std::string> PercentDecode(const std::string& s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      const int hi = HexValue(s[i + 1]), lo = HexValue(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      const char decoded = static_cast<char>(hi * 16 + lo);
      if (decoded == '\0') return std::nullopt;
      out += decoded;
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

Result<std::map<std::string, std::string>> ParseForm(const std::string& s) {
  std::map<std::string, std::string> out;
  if (s.empty()) return out;
  for (const auto& pair : Split(s, '&')) {
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    auto name = PercentDecode(pair.substr(0, eq), true);
    auto value = PercentDecode(eq == std::string::npos ? "" : pair.substr(eq + 1), true);
    if (!name || !value)
      return Status::InvalidArgument("query or form field \"" + pair.substr(0, eq) +
                                     "\": not percent-encoded correctly");
    out.emplace(std::move(*name), std::move(*value));
  }
  return out;
}

std::string CookieValue(const std::string& cookie_header, const std::string& name) {
  for (const auto& part : Split(cookie_header, ';')) {
    const std::string p = Trim(part);
    const auto eq = p.find('=');
    if (eq == std::string::npos) continue;
    if (p.substr(0, eq) != name) continue;
    std::string v = p.substr(eq + 1);
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    return v;
  }
  return "";
}

std::string WebToken(const std::string& authorization, const std::string& cookie) {
  const std::string a = Trim(authorization);
  if (a.size() > 7) {
    std::string scheme = a.substr(0, 7);
    for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (scheme == "bearer ") return Trim(a.substr(7));
  }
  return CookieValue(cookie, kWebTokenCookie);
}

std::string TokenCookie(const std::string& token, bool secure) {
  std::string c = std::string(kWebTokenCookie) + "=" + token +
                  "; Path=/; HttpOnly; SameSite=Strict; Max-Age=" + (token.empty() ? "0" : "43200");
  if (secure) c += "; Secure";
  return c;
}

std::string SafeNext(const std::string& next) {
  if (next.empty() || next[0] != '/') return "/";
  if (next.size() > 1 && (next[1] == '/' || next[1] == '\\')) return "/";
  for (char c : next)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return "/";
  return next;
}

Result<ApiCall> ResolveApi(const std::string& path, const std::string& query) {
  const auto not_found = [&] {
    return Status::NotFound("no API at " + path + "; the API has " + kRoutes);
  };
  if (path.rfind("/api/", 0) != 0) return not_found();
  std::vector<std::string> parts = Split(path.substr(5), '/');
  if (!parts.empty() && parts.back().empty() && parts.size() > 1) parts.pop_back();  // trailing /
  for (auto& p : parts) {
    auto d = PercentDecode(p, false);
    if (!d || d->find('/') != std::string::npos)
      return Status::InvalidArgument("path " + path + ": a segment is not percent-encoded right");
    p = *d;
  }
  auto form = ParseForm(query);
  if (!form.ok()) return form.status();

  ApiCall call;
  std::set<std::string> allowed = {"limit", "page_token"};
  bool is_list = true;
  const std::string& top = parts[0];
  const size_t n = parts.size();
  auto id = [&](const std::string& what) -> Status {
    if (!IsPositiveId(parts[1]))
      return Status::InvalidArgument(what + " id \"" + parts[1] +
                                     "\" is not an id; allowed: a positive integer");
    return Status::Ok();
  };
  if (top == "workloads") {
    if (n == 1) {
      call = {"workload", "list", {}};
      allowed.insert("all");
    } else {
      if (parts[1].empty()) return not_found();
      call.args["workload"] = parts[1];
      is_list = false;
      if (n == 2) {
        call.noun = "workload", call.verb = "show";
      } else if (n == 3 && parts[2] == "config") {
        call.noun = "config", call.verb = "show";
      } else if (n == 3 && parts[2] == "goal") {
        call.noun = "goal", call.verb = "show";
      } else if (n == 3 && parts[2] == "regression") {
        call.noun = "regress", call.verb = "show";
        is_list = true;  // takes ?limit=
        allowed = {"limit"};
      } else {
        return not_found();
      }
    }
  } else if (top == "baselines" || top == "experiments") {
    const bool exp = top == "experiments";
    if (n == 1) {
      call = {exp ? "experiment" : "baseline", "list", {}};
      allowed.insert("workload");
      if (exp) allowed.insert("state");
    } else {
      if (auto st = id(exp ? "experiment" : "baseline"); !st.ok()) return st;
      if (n == 2) {
        call = {exp ? "experiment" : "baseline", "show", {{"id", parts[1]}}};
        is_list = false;
      } else if (n == 3 && parts[2] == "runs") {
        call = {"run", "list", {{exp ? "experiment" : "baseline", parts[1]}}};
        call.args["limit"] = "0";  // every run of it, unless ?limit= says otherwise
      } else {
        return not_found();
      }
    }
  } else if (top == "runs" && n == 3 && parts[2] == "samples") {
    if (auto st = id("run"); !st.ok()) return st;
    call = {"run", "samples", {{"id", parts[1]}}};
    allowed = {"metric", "attempt", "max_points"};  // not a list, but it takes these
  } else if ((top == "hypotheses" || top == "runs") && n == 2) {
    if (auto st = id(top == "runs" ? "run" : "hypothesis"); !st.ok()) return st;
    call = {top == "runs" ? "run" : "hypothesis", "show", {{"id", parts[1]}}};
    is_list = false;
  } else if (top == "batches" && n <= 2) {
    if (n == 1) {
      call = {"batch", "list", {}};
    } else {
      if (auto st = id("batch"); !st.ok()) return st;
      call = {"batch", "show", {{"id", parts[1]}}};
      is_list = false;
    }
  } else if (top == "log" && n == 1) {
    call = {"log", "", {}};
    allowed.insert({"workload", "param", "since"});
  } else if (top == "schedules" && n == 1) {
    call = {"schedule", "list", {}};
    allowed.clear();
  } else if (top == "agents" && n == 1) {
    call = {"agent", "list", {}};
    allowed.clear();
  } else if (top == "whoami" && n == 1) {
    call = {"auth", "whoami", {}};
    allowed.clear();
  } else {
    return not_found();
  }
  if (!is_list) allowed.clear();
  for (const auto& [k, v] : *form) {
    if (!allowed.count(k))
      return Status::InvalidArgument(
          "query parameter \"" + k + "\" is not known at " + path +
          (allowed.empty() ? std::string("; it takes none") : "; allowed: " + [&] {
            std::string s;
            for (const auto& a : allowed) s += (s.empty() ? "" : ", ") + a;
            return s;
          }()));
    if (k == "limit" && !(v == "0" || IsPositiveId(v)))
      return Status::InvalidArgument("query parameter \"limit\": \"" + v +
                                     "\" is not a count; allowed: 0 (all) or a positive integer");
    if ((k == "attempt" && !IsPositiveId(v)) ||
        (k == "max_points" && !(v == "0" || IsPositiveId(v))))
      return Status::InvalidArgument(
          "query parameter \"" + k + "\": \"" + v + "\" is not a count; allowed: " +
          (k == "attempt" ? "a positive integer" : "0 (the default) or a positive integer"));
    if (k == "all" && v != "true" && v != "false")
      return Status::InvalidArgument("query parameter \"all\": allowed: true or false");
    call.args[k] = v;
  }
  return call;
}

std::string HtmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

int HttpStatusOfExit(int exit_code, bool unauthenticated) {
  switch (exit_code) {
    case 0: return 200;
    case 2: return 400;
    case 3: return 404;
    case 4: return 503;
    case 5: return unauthenticated ? 401 : 403;
    default: return 500;
  }
}

}  // namespace tunectl
