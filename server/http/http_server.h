// A minimal HTTP/1.1 server for operational endpoints (/metrics, /healthz): GET only, one
// request per connection, answered by `handler` on the server's own thread. Start() binds (port
// 0 picks a free one) and returns; Stop() and the destructor join the thread. Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/status.h"

namespace tunectl {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

using HttpHandler = std::function<HttpResponse(const std::string& path)>;

class HttpServer {
 public:
  // `listen` is HOST:PORT.
  static Result<std::unique_ptr<HttpServer>> Start(const std::string& listen, HttpHandler handler);
  virtual ~HttpServer() = default;
  virtual int port() const = 0;
  virtual void Stop() = 0;
};

}  // namespace tunectl
