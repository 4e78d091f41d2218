#include "server/web/web.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "core/web.h"

namespace tunectl {

// server/web/assets/*, embedded at build time (cmake/EmbedFiles.cmake): (file name, contents).
extern const std::vector<std::pair<std::string, std::string>> kWebAssets;

namespace {

const std::string* Asset(const std::string& name) {
  for (const auto& [n, body] : kWebAssets)
    if (n == name) return &body;
  return nullptr;
}

// Every web response: no framing by other sites, scripts and styles from this server only (the
// chart library sets inline styles through the DOM, which 'unsafe-inline' for styles allows).
void SecurityHeaders(HttpResponse& r, bool no_store) {
  r.headers.emplace_back("Content-Security-Policy",
                         "default-src 'self'; img-src 'self' data:; style-src 'self' "
                         "'unsafe-inline'; frame-ancestors 'none'; form-action 'self'; "
                         "base-uri 'none'");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.headers.emplace_back("Referrer-Policy", "no-referrer");
  if (no_store) r.headers.emplace_back("Cache-Control", "no-store");
}

HttpResponse JsonError(int status, const std::string& message) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = nlohmann::ordered_json({{"apiVersion", "tunectl/v1"},
                                   {"kind", "Error"},
                                   {"status", status},
                                   {"message", message}})
               .dump(2) +
           "\n";
  SecurityHeaders(r, true);
  return r;
}

// "error: X\n..." (what a command wrote to stderr) → "X ...".
std::string ErrorText(const std::string& err) {
  std::string s = err;
  if (s.rfind("error: ", 0) == 0) s = s.substr(7);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

bool IsPagePath(const std::string& p) {
  if (p == "/" || p == "/log" || p == "/batches" || p == "/schedules" || p == "/agents")
    return true;
  for (const char* prefix : {"/workloads/", "/experiments/", "/runs/", "/batches/"}) {
    const std::string pre(prefix);
    if (p.size() > pre.size() && p.rfind(pre, 0) == 0 &&
        p.find('/', pre.size()) == std::string::npos)
      return true;
  }
  return false;
}

// The command line options the API's arguments stand for (the CLI's flags of the same names).
Result<CliOptions> OptionsOf(const ApiCall& call) {
  CliOptions o;
  o.output = "json";
  o.server = "this server";
  for (const auto& [k, v] : call.args) {
    if (k == "workload") {
      o.workload = v;
    } else if (k == "id" || k == "experiment" || k == "baseline") {
      int64_t n = 0;
      try {
        n = std::stoll(v);
      } catch (const std::exception&) {
        return Status::InvalidArgument(k + ": \"" + v + "\" is not an id");
      }
      (k == "id" ? o.id : k == "experiment" ? o.experiment : o.baseline) = n;
    } else if (k == "limit" || k == "attempt" || k == "max_points") {
      int n = 0;
      try {
        n = std::stoi(v);
      } catch (const std::exception&) {
        return Status::InvalidArgument(k + ": \"" + v + "\" is not a count");
      }
      (k == "limit" ? o.limit : k == "attempt" ? o.attempt : o.max_points) = n;
      o.limit_given = o.limit_given || k == "limit";
    } else if (k == "metric") {
      o.metric = v;
    } else if (k == "page_token") {
      o.page_token = v;
    } else if (k == "param") {
      o.param = v;
    } else if (k == "state") {
      o.state = v;
    } else if (k == "since") {
      o.since = v;
    } else if (k == "all") {
      o.all = v == "true";
    }
  }
  return o;
}

}  // namespace

WebView::WebView(WebClientFactory clients, WebOptions options)
    : clients_(std::move(clients)), options_(std::move(options)) {}

std::optional<HttpResponse> WebView::Handle(const HttpRequest& r) const {
  const std::string& p = r.path;
  if (p.rfind("/static/", 0) == 0) {
    if (r.method == "POST") return JsonError(405, "static files are read with GET");
    auto s = Static(p.substr(8));
    if (s) return s;
    HttpResponse nf{404, "text/plain; charset=utf-8", "no such file\n"};
    SecurityHeaders(nf, false);
    return nf;
  }
  if (p == "/login" || p == "/logout") {
    if (r.method == "POST") return Login(r);
    auto q = ParseForm(r.query);
    return LoginPage(200, q.ok() && q->count("next") ? (*q)["next"] : "/", "");
  }
  const bool api = p.rfind("/api/", 0) == 0;
  if (!api && !IsPagePath(p)) return std::nullopt;
  if (r.method == "POST") return JsonError(405, "the web view is read-only: GET only");
  const std::string token = WebToken(r.Header("authorization"), r.Header("cookie"));
  return api ? Api(r, token) : Page(r, token);
}

HttpResponse WebView::Api(const HttpRequest& r, const std::string& token) const {
  if (token.empty())
    return JsonError(401,
                     "no token: sign in at /login, or send \"Authorization: Bearer TOKEN\" "
                     "(a viewer token is enough: tunectl token create NAME --role viewer)");
  auto call = ResolveApi(r.path, r.query);
  if (!call.ok())
    return JsonError(call.status().code() == Status::Code::kNotFound ? 404 : 400,
                     call.status().message());
  auto o = OptionsOf(*call);
  if (!o.ok()) return JsonError(400, o.status().message());
  const Command* cmd = nullptr;
  for (const auto& c : Commands())
    if (call->noun == c.noun && call->verb == c.verb) cmd = &c;
  if (!cmd) return JsonError(500, "no command " + call->noun + " " + call->verb);
  auto client = clients_(token);
  std::ostringstream out, err;
  const int rc = Execute(*cmd, *client, *o, out, err);
  if (rc != 0) {
    const std::string msg = ErrorText(err.str());
    // 401 only for a token the server does not know (or none); 403 for a role that may not.
    const bool unauthenticated = msg.find("needs a token") != std::string::npos;
    return JsonError(HttpStatusOfExit(rc, unauthenticated), msg);
  }
  HttpResponse resp;
  resp.content_type = "application/json";
  resp.body = out.str();
  SecurityHeaders(resp, true);
  return resp;
}

HttpResponse WebView::Page(const HttpRequest& r, const std::string& token) const {
  std::string next = r.path + (r.query.empty() ? "" : "?" + r.query);
  if (token.empty()) return LoginPage(401, next, "Sign in to see this page.");
  auto who = clients_(token)->WhoAmI();
  if (!who.ok()) {
    if (who.status().code() == Status::Code::kUnauthenticated ||
        who.status().code() == Status::Code::kPermissionDenied)
      return LoginPage(401, next, "The server refused the token: " + who.status().message());
    HttpResponse e{503, "text/plain; charset=utf-8",
                   "the server cannot tell who you are: " + who.status().message() + "\n"};
    SecurityHeaders(e, true);
    return e;
  }
  const std::string* shell = Asset("page.html");
  HttpResponse resp{200, "text/html; charset=utf-8", shell ? *shell : "missing page.html\n"};
  SecurityHeaders(resp, true);
  return resp;
}

HttpResponse WebView::Login(const HttpRequest& r) const {
  if (r.path == "/logout") {
    HttpResponse out{303, "text/plain; charset=utf-8", "signed out\n"};
    out.headers.emplace_back("Location", "/login");
    out.headers.emplace_back("Set-Cookie", TokenCookie("", options_.tls));
    SecurityHeaders(out, true);
    return out;
  }
  auto form = ParseForm(r.body);
  if (!form.ok()) return LoginPage(400, "/", form.status().message());
  const std::string next = SafeNext(form->count("next") ? (*form)["next"] : "/");
  std::string token = form->count("token") ? (*form)["token"] : "";
  while (!token.empty() && (token.back() == ' ' || token.back() == '\n' || token.back() == '\r'))
    token.pop_back();
  while (!token.empty() && token.front() == ' ') token.erase(0, 1);
  if (token.empty()) return LoginPage(401, next, "Paste a token.");
  if (token.find_first_of(";,\" \t\r\n") != std::string::npos)
    return LoginPage(401, next, "That is not a token (tunectl token create NAME --role viewer).");
  auto who = clients_(token)->WhoAmI();
  if (!who.ok())
    return LoginPage(401, next, "The server refused the token: " + who.status().message());
  HttpResponse out{303, "text/plain; charset=utf-8", "signed in as " + who->actor() + "\n"};
  out.headers.emplace_back("Location", next);
  out.headers.emplace_back("Set-Cookie", TokenCookie(token, options_.tls));
  SecurityHeaders(out, true);
  return out;
}

HttpResponse WebView::LoginPage(int status, const std::string& next,
                                const std::string& message) const {
  const std::string* tpl = Asset("login.html");
  std::string body = tpl ? *tpl : "missing login.html\n";
  auto replace = [&](const std::string& key, const std::string& value) {
    for (size_t at = body.find(key); at != std::string::npos;
         at = body.find(key, at + value.size()))
      body.replace(at, key.size(), value);
  };
  replace("{{NEXT}}", HtmlEscape(SafeNext(next)));
  replace("{{MESSAGE}}", HtmlEscape(message));
  HttpResponse r{status, "text/html; charset=utf-8", body};
  SecurityHeaders(r, true);
  return r;
}

std::optional<HttpResponse> WebView::Static(const std::string& name) const {
  auto type_of = [](const std::string& n) {
    if (n.ends_with(".js")) return "text/javascript; charset=utf-8";
    if (n.ends_with(".css")) return "text/css; charset=utf-8";
    return "application/octet-stream";
  };
  HttpResponse r;
  if (name == "dygraph.min.js" || name == "dygraph.min.css") {
    std::ifstream in(options_.chart_dir + "/" + name, std::ios::binary);
    if (!in) {
      r = {404, "text/plain; charset=utf-8",
           "the chart library is not installed: " + options_.chart_dir + "/" + name +
               " (apt-get install libjs-dygraphs)\n"};
      SecurityHeaders(r, false);
      return r;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    r = {200, type_of(name), ss.str()};
  } else if (name != "page.html" && name != "login.html" && Asset(name)) {
    r = {200, type_of(name), *Asset(name)};
  } else {
    return std::nullopt;
  }
  SecurityHeaders(r, false);
  r.headers.emplace_back("Cache-Control", "no-cache");
  return r;
}

}  // namespace tunectl
