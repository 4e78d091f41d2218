#include "agent/http_get.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/prom_scrape.h"

namespace tunectl {
namespace {

constexpr size_t kMaxAnswer = 64u << 20;

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

using Steady = std::chrono::steady_clock;

int MsLeft(Steady::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// Waits for `events` on fd until the deadline: true when ready.
bool WaitFor(int fd, short events, Steady::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, MsLeft(deadline));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return false;
  }
}

}  // namespace

Result<std::string> PosixHttpGetter::Get(const std::string& url, int timeout_ms) {
  auto u = ParsePromUrl(url);
  if (!u.ok()) return u.status();
  const auto deadline = Steady::now() + std::chrono::milliseconds(timeout_ms);
  const std::string where = "GET " + url + ": ";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(u->port);
  if (int rc = getaddrinfo(u->host.c_str(), port.c_str(), &hints, &res); rc != 0)
    return Status::Unavailable(where + "cannot resolve " + u->host + ": " + gai_strerror(rc));
  Fd sock;
  std::string last_error = "no address";
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    Fd s;
    s.fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (s.fd < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    if (connect(s.fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
      last_error = std::strerror(errno);
      continue;
    }
    if (!WaitFor(s.fd, POLLOUT, deadline)) {
      last_error = "connect timed out";
      continue;
    }
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      last_error = std::strerror(err);
      continue;
    }
    std::swap(sock.fd, s.fd);
    break;
  }
  freeaddrinfo(res);
  if (sock.fd < 0) return Status::Unavailable(where + "cannot connect: " + last_error);
  const std::string request = PromHttpRequest(*u);
  for (size_t sent = 0; sent < request.size();) {
    if (!WaitFor(sock.fd, POLLOUT, deadline))
      return Status::Unavailable(where + "timed out after " + std::to_string(timeout_ms) + " ms");
    const ssize_t n = send(sock.fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EINTR && errno != EAGAIN)
      return Status::Unavailable(where + "send: " + std::strerror(errno));
    if (n > 0) sent += static_cast<size_t>(n);
  }
  std::string answer;
  char buf[65536];
  for (;;) {
    if (!WaitFor(sock.fd, POLLIN, deadline))
      return Status::Unavailable(where + "timed out after " + std::to_string(timeout_ms) + " ms");
    const ssize_t n = recv(sock.fd, buf, sizeof buf, 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Status::Unavailable(where + "recv: " + std::strerror(errno));
    }
    answer.append(buf, static_cast<size_t>(n));
    if (answer.size() > kMaxAnswer)
      return Status::Unavailable(where + "the answer is larger than 64 MiB");
  }
  auto body = HttpResponseBody(answer);
  if (!body.ok()) return Status::Unavailable(where + body.status().message());
  return body;
}

}  // namespace tunectl
