// The read-only web view on the server's HTTP port (docs/web.md): pages (one HTML shell and
// server/web/assets/app.js, which draws each page from the API), the API (`/api/...`: the JSON of
// the CLI command core/web.h's ResolveApi names, produced by that very command with `-o json`
// over a Client the caller makes — the server's own in-process gRPC channel with the request's
// token, so the token check, the roles and the audit of refusals are TuningService's), the login
// page (POST /login sets the token as an HttpOnly cookie after checking it; POST /logout clears
// it), and the static files: the embedded assets and the chart library (Debian's libjs-dygraphs)
// read from `chart_dir`. A page or API call without a token, or with one the server refuses, is
// answered 401 (a page: with the login form). Thread-safe (the factory must be).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cli/client.h"
#include "server/http/http_server.h"

namespace tunectl {

struct WebOptions {
  bool tls = false;  // served over HTTPS: the cookie is Secure
  // Where dygraph.min.js and dygraph.min.css are (Debian's libjs-dygraphs).
  std::string chart_dir = "/usr/share/javascript/dygraphs";
};

// A client calling TuningService with `token` as its bearer token.
using WebClientFactory = std::function<std::unique_ptr<Client>(const std::string& token)>;

class WebView {
 public:
  WebView(WebClientFactory clients, WebOptions options);
  // The answer when `request` is the web view's (/, the pages, /api/..., /login, /logout,
  // /static/...); nullopt for any other path (the caller's /metrics, /healthz, 404).
  std::optional<HttpResponse> Handle(const HttpRequest& request) const;

 private:
  HttpResponse Api(const HttpRequest& r, const std::string& token) const;
  HttpResponse Page(const HttpRequest& r, const std::string& token) const;
  HttpResponse Login(const HttpRequest& r) const;
  HttpResponse LoginPage(int status, const std::string& next, const std::string& message) const;
  std::optional<HttpResponse> Static(const std::string& path) const;

  WebClientFactory clients_;
  WebOptions options_;
};

}  // namespace tunectl
