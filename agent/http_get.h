// HttpGetter: one HTTP GET of a plain http:// URL, the body of a 200 answer or an error value
// naming the URL and what failed. The agent's scrapes of Prometheus exporters go through it;
// tests use a fake that records the URLs. PosixHttpGetter: HTTP/1.0 over a TCP socket, no proxy,
// no TLS, at most 64 MiB of answer, the whole exchange within the timeout. Thread-compatible.
#pragma once

#include <string>

#include "core/status.h"

namespace tunectl {

class HttpGetter {
 public:
  virtual ~HttpGetter() = default;
  virtual Result<std::string> Get(const std::string& url, int timeout_ms) = 0;
};

class PosixHttpGetter : public HttpGetter {
 public:
  Result<std::string> Get(const std::string& url, int timeout_ms) override;
};

}  // namespace tunectl
