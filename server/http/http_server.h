// A minimal HTTP/1.1 server for operational endpoints (/metrics, /healthz) and the read-only web
// view (server/web/): GET, HEAD and POST (anything else gets 405), one request per connection,
// a request's headers and body each at most 16 KiB (larger: closed without an answer), answered
// by `handler` on one of the server's own threads (several at once: `handler` must be
// thread-safe). Plaintext, or HTTPS when `tls` carries a certificate and its key: then every
// connection starts with a server-side TLS handshake (TLS 1.2 at least, no compression); a
// connection whose handshake fails (a plaintext client, an untrusting client, a TLS 1.1 one) is
// closed and the server serves on. A connection has `HttpOptions::io_timeout` to complete its
// handshake and send its request, and again to take the response; past it, it is closed, so a
// client that connects and says nothing holds nothing for long.
//
// Start() checks the TLS material, binds (port 0 picks a free one) and returns; Stop() and the
// destructor join the thread. Thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace tunectl {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  // More header fields (Set-Cookie, Location, Cache-Control, ...), sent as given.
  std::vector<std::pair<std::string, std::string>> headers = {};
};

struct HttpRequest {
  std::string method;  // "GET", "HEAD" or "POST"
  std::string path;    // the target up to '?', as sent (not percent-decoded)
  std::string query;   // after '?', as sent; "" when none
  // Header fields in the order sent, names lower-cased.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // The value of the first field named `name` (lower case), "" when none.
  std::string Header(const std::string& name) const {
    for (const auto& [n, v] : headers)
      if (n == name) return v;
    return "";
  }
};

using HttpHandler = std::function<HttpResponse(const HttpRequest& request)>;

// PEM contents (not paths). Both empty: plaintext. `cert_pem` is the server certificate,
// optionally followed by its intermediates; `key_pem` its private key, unencrypted.
struct HttpTls {
  std::string cert_pem;
  std::string key_pem;
};

struct HttpOptions {
  // Per connection: for the TLS handshake and the request together, then for the response.
  std::chrono::milliseconds io_timeout = std::chrono::seconds(10);
};

class HttpServer {
 public:
  // `listen` is HOST:PORT.
  // Errors (nothing is bound then):
  //  - InvalidArgument: `listen` is not HOST:PORT; exactly one of `tls.cert_pem` and
  //    `tls.key_pem` is empty; `options.io_timeout` is not positive (each naming the field);
  //  - InvalidArgument: `tls.cert_pem` holds no usable PEM certificate, `tls.key_pem` no usable
  //    PEM private key or an encrypted one (refused, never prompted for), or the key is not the
  //    certificate's; the message names the field and, where it helps, OpenSSL's reason;
  //  - Unavailable: the address is in use or cannot be resolved.
  static Result<std::unique_ptr<HttpServer>> Start(const std::string& listen, HttpHandler handler,
                                                   const HttpTls& tls = {},
                                                   const HttpOptions& options = {});
  virtual ~HttpServer() = default;
  virtual int port() const = 0;
  virtual void Stop() = 0;
};

}  // namespace tunectl
