// HttpServer (server/http/http_server.h) against real sockets on 127.0.0.1: HTTPS with a
// certificate from EnsureSelfSignedTls, what a failed handshake leaves behind (nothing), the TLS
// material Start() refuses, and the per-connection timeout.
#include "server/http/http_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

#include "sys/tls_cert.h"

namespace tunectl {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr milliseconds kTestDeadline{5000};  // no step of a passing test comes near it

// A private CA and a server certificate for localhost and 127.0.0.1, as PEM text, in a fresh
// directory removed at scope exit.
struct Pki {
  Pki() {
    std::string tmpl = ::testing::TempDir() + "http_server_test-XXXXXX";
    EXPECT_NE(::mkdtemp(tmpl.data()), nullptr) << tmpl;
    dir = tmpl;
    auto files = EnsureSelfSignedTls(dir + "/tls", {"localhost", "127.0.0.1"});
    EXPECT_TRUE(files.ok()) << files.status().message();
    if (!files.ok()) return;
    ca = Read(files->ca_cert);
    tls = {Read(files->server_cert), Read(files->server_key)};
  }
  ~Pki() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  static std::string Read(const std::string& path) {
    auto pem = ReadPemFile(path);
    EXPECT_TRUE(pem.ok()) << pem.status().message();
    return pem.ok() ? *pem : "";
  }
  std::string dir, ca;
  HttpTls tls;
};

// Shuts a socket down when `after` passes before it is destroyed, so that a blocking call on it
// returns: a test that would hang fails instead.
class Watchdog {
 public:
  Watchdog(tcp::socket& s, milliseconds after)
      : thread_([this, fd = s.native_handle(), after] {
          std::unique_lock lock(mu_);
          if (!cv_.wait_for(lock, after, [this] { return done_; })) {
            fired_ = true;
            ::shutdown(fd, SHUT_RDWR);
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  bool fired() const { return fired_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::atomic<bool> fired_{false};
  std::thread thread_;
};

tcp::endpoint Loopback(int port) {
  return {asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)};
}

struct Reply {
  std::string error;  // empty when a response came
  int status = 0;
  std::string content_type, body, protocol;
};

// GET `target` over HTTPS, verifying the server against `ca_pem` and the name localhost; TLS up
// to `max_version` (0: the newest).
Reply TlsGet(int port, const std::string& ca_pem, const std::string& target, int max_version = 0) {
  Reply r;
  asio::io_context ioc;
  ssl::context ctx(ssl::context::tls_client);
  ctx.add_certificate_authority(asio::buffer(ca_pem));
  ctx.set_verify_mode(ssl::verify_peer);
  if (max_version) SSL_CTX_set_max_proto_version(ctx.native_handle(), max_version);
  ssl::stream<tcp::socket> stream(ioc, ctx);
  SSL_set_tlsext_host_name(stream.native_handle(), "localhost");
  stream.set_verify_callback(ssl::host_name_verification("localhost"));
  beast::error_code ec;
  stream.next_layer().connect(Loopback(port), ec);
  if (ec) return {"connect: " + ec.message()};
  Watchdog dog(stream.next_layer(), kTestDeadline);
  stream.handshake(ssl::stream_base::client, ec);
  if (ec) return {"handshake: " + ec.message()};
  r.protocol = SSL_get_version(stream.native_handle());
  http::request<http::empty_body> req(http::verb::get, target, 11);
  req.set(http::field::host, "localhost");
  http::write(stream, req, ec);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  if (!ec) http::read(stream, buffer, res, ec);
  if (ec) return {"exchange: " + ec.message()};
  EXPECT_FALSE(dog.fired());
  r.status = static_cast<int>(res.result_int());
  r.content_type = std::string(res[http::field::content_type]);
  r.body = res.body();
  return r;
}

struct Raw {
  std::string received;  // every byte until the server closed
  milliseconds took{0};  // from connecting until then
};

// Connects over plain TCP, sends `bytes` (maybe none) and reads until the server closes.
Raw RawExchange(int port, const std::string& bytes) {
  Raw r;
  asio::io_context ioc;
  tcp::socket s(ioc);
  const auto start = std::chrono::steady_clock::now();
  s.connect(Loopback(port));
  {
    Watchdog dog(s, kTestDeadline);
    beast::error_code ec;
    if (!bytes.empty()) asio::write(s, asio::buffer(bytes), ec);
    asio::read(s, asio::dynamic_buffer(r.received), ec);  // ends at EOF (or a reset)
    EXPECT_FALSE(dog.fired()) << "the server kept the connection open for " << kTestDeadline.count()
                              << " ms";
  }
  r.took = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start);
  return r;
}

const std::string kGetMetrics = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n";

// Answers /metrics with one line and records the paths it was asked for.
struct Metrics {
  HttpHandler Handler() {
    return [this](const HttpRequest& request) {
      const std::string& path = request.path;
      std::lock_guard lock(mu);
      paths.push_back(path);
      if (path != "/metrics") return HttpResponse{404, "text/plain", "not found\n"};
      return HttpResponse{200, "text/plain; version=0.0.4", "tunectl_up 1\n"};
    };
  }
  std::vector<std::string> Paths() {
    std::lock_guard lock(mu);
    return paths;
  }
  std::mutex mu;
  std::vector<std::string> paths;
};

std::unique_ptr<HttpServer> MustStart(HttpHandler h, const HttpTls& tls,
                                      const HttpOptions& options = {}) {
  auto s = HttpServer::Start("127.0.0.1:0", std::move(h), tls, options);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? std::move(*s) : nullptr;
}

// The message Start() refuses `tls` with ("" and a failure if it starts).
std::string StartError(const HttpTls& tls) {
  auto s = HttpServer::Start("127.0.0.1:0", Metrics().Handler(), tls);
  EXPECT_FALSE(s.ok());
  if (s.ok()) return "";
  EXPECT_EQ(s.status().code(), Status::Code::kInvalidArgument) << s.status().message();
  return s.status().message();
}

TEST(HttpServer, ServesMetricsOverTlsToAClientTrustingTheCa) {
  Pki pki;
  Metrics metrics;
  auto server = MustStart(metrics.Handler(), pki.tls);
  ASSERT_TRUE(server);
  const Reply r = TlsGet(server->port(), pki.ca, "/metrics?format=text");
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4");
  EXPECT_EQ(r.body, "tunectl_up 1\n");
  EXPECT_THAT(metrics.Paths(), ::testing::ElementsAre("/metrics"));
  EXPECT_EQ(TlsGet(server->port(), pki.ca, "/nothing").status, 404);
}

TEST(HttpServer, ServesTls12AndTls13Clients) {
  Pki pki;
  Metrics metrics;
  auto server = MustStart(metrics.Handler(), pki.tls);
  ASSERT_TRUE(server);
  const Reply v12 = TlsGet(server->port(), pki.ca, "/metrics", TLS1_2_VERSION);
  ASSERT_EQ(v12.error, "");
  EXPECT_EQ(v12.protocol, "TLSv1.2");
  EXPECT_EQ(v12.status, 200);
  const Reply v13 = TlsGet(server->port(), pki.ca, "/metrics");
  ASSERT_EQ(v13.error, "");
  EXPECT_EQ(v13.protocol, "TLSv1.3");
}

TEST(HttpServer, PlaintextClientAgainstTlsIsClosedAndServerServesOn) {
  Pki pki;
  Metrics metrics;
  auto server = MustStart(metrics.Handler(), pki.tls);
  ASSERT_TRUE(server);
  for (int i = 0; i < 3; ++i) {
    const Raw raw = RawExchange(server->port(), kGetMetrics);
    EXPECT_THAT(raw.received, Not(HasSubstr("HTTP/1.1"))) << "no HTTP answer in plaintext";
  }
  EXPECT_TRUE(metrics.Paths().empty()) << "the handler never runs for a failed handshake";
  const Reply r = TlsGet(server->port(), pki.ca, "/metrics");
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.body, "tunectl_up 1\n");
}

TEST(HttpServer, ClientTrustingAnotherCaRefusesTheServerWhichServesOn) {
  Pki pki, other;
  Metrics metrics;
  auto server = MustStart(metrics.Handler(), pki.tls);
  ASSERT_TRUE(server);
  EXPECT_THAT(TlsGet(server->port(), other.ca, "/metrics").error,
              AllOf(StartsWith("handshake: "), HasSubstr("certificate verify failed")));
  EXPECT_EQ(TlsGet(server->port(), pki.ca, "/metrics").status, 200);
}

TEST(HttpServer, ServesPlaintextWithoutTls) {
  Metrics metrics;
  auto server = MustStart(metrics.Handler(), {});
  ASSERT_TRUE(server);
  const Raw raw = RawExchange(server->port(), kGetMetrics);
  EXPECT_THAT(raw.received, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(raw.received, HasSubstr("\r\n\r\ntunectl_up 1\n"));
  EXPECT_THAT(RawExchange(server->port(), "PUT /metrics HTTP/1.1\r\nHost: x\r\n\r\n").received,
              StartsWith("HTTP/1.1 405 Method Not Allowed\r\n"));
}

// The handler sees the method, the path without the query, the query, the header fields (names
// lower-cased) and a POST's body; its extra header fields reach the client.
TEST(HttpServer, PassesTheRequestAndSendsExtraHeaders) {
  std::mutex mu;
  HttpRequest seen;
  auto server = MustStart(
      [&](const HttpRequest& r) {
        std::lock_guard lock(mu);
        seen = r;
        return HttpResponse{303, "text/plain", "", {{"Location", "/x"}, {"Set-Cookie", "a=b"}}};
      },
      {});
  ASSERT_TRUE(server);
  const Raw raw = RawExchange(server->port(),
                              "POST /login?next=%2Fx HTTP/1.1\r\nHost: x\r\nCookie: t=1\r\n"
                              "Content-Type: application/x-www-form-urlencoded\r\n"
                              "Content-Length: 9\r\n\r\ntoken=abc");
  EXPECT_THAT(raw.received, StartsWith("HTTP/1.1 303 See Other\r\n"));
  EXPECT_THAT(raw.received, HasSubstr("Location: /x\r\n"));
  EXPECT_THAT(raw.received, HasSubstr("Set-Cookie: a=b\r\n"));
  std::lock_guard lock(mu);
  EXPECT_EQ(seen.method, "POST");
  EXPECT_EQ(seen.path, "/login");
  EXPECT_EQ(seen.query, "next=%2Fx");
  EXPECT_EQ(seen.Header("cookie"), "t=1");
  EXPECT_EQ(seen.Header("nothing"), "");
  EXPECT_EQ(seen.body, "token=abc");
}

// A body over 16 KiB is not read: the connection closes without an answer or a handler call.
TEST(HttpServer, RefusesABodyOverTheLimit) {
  Metrics metrics;
  auto server = MustStart(metrics.Handler(), {});
  ASSERT_TRUE(server);
  const std::string body(17 * 1024, 'x');
  const Raw raw =
      RawExchange(server->port(), "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                      std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_THAT(raw.received, Not(HasSubstr("HTTP/1.1 200")));
  EXPECT_TRUE(metrics.Paths().empty());
}

TEST(HttpServer, RefusesACertWithoutItsKey) {
  Pki pki;
  EXPECT_THAT(StartError({pki.tls.cert_pem, ""}),
              HasSubstr("tls.key_pem is empty while tls.cert_pem is set"));
}

TEST(HttpServer, RefusesAKeyWithoutItsCert) {
  Pki pki;
  EXPECT_THAT(StartError({"", pki.tls.key_pem}),
              HasSubstr("tls.cert_pem is empty while tls.key_pem is set"));
}

TEST(HttpServer, RefusesAKeyThatIsNotTheCertificatesKey) {
  Pki pki, other;
  EXPECT_THAT(StartError({pki.tls.cert_pem, other.tls.key_pem}),
              HasSubstr("tls.key_pem is not the private key of the certificate in tls.cert_pem"));
}

TEST(HttpServer, RefusesPemThatIsNotACertificateOrAKey) {
  Pki pki;
  EXPECT_THAT(StartError({"not PEM", pki.tls.key_pem}),
              HasSubstr("tls.cert_pem holds no PEM certificate"));
  EXPECT_THAT(StartError({pki.tls.key_pem, pki.tls.key_pem}),
              HasSubstr("tls.cert_pem holds no PEM certificate"));
  EXPECT_THAT(StartError({pki.tls.cert_pem, pki.tls.cert_pem}),
              HasSubstr("tls.key_pem holds no PEM private key"));
  std::string broken = pki.tls.cert_pem;
  broken[broken.find('\n') + 10] = '*';  // inside the base64
  EXPECT_THAT(StartError({broken, pki.tls.key_pem}),
              HasSubstr("tls.cert_pem holds no usable PEM certificate ("));
  broken = pki.tls.key_pem;
  broken[broken.find('\n') + 10] = '*';
  EXPECT_THAT(StartError({pki.tls.cert_pem, broken}),
              HasSubstr("tls.key_pem holds no usable unencrypted PEM private key ("));
}

TEST(HttpServer, RefusesAnEncryptedKeyInsteadOfAskingForItsPassphrase) {
  Pki pki;
  BIO* in = BIO_new_mem_buf(pki.tls.key_pem.data(), static_cast<int>(pki.tls.key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(in, nullptr, nullptr, nullptr);
  ASSERT_NE(key, nullptr);
  BIO* out = BIO_new(BIO_s_mem());
  char pass[] = "secret";
  ASSERT_EQ(PEM_write_bio_PKCS8PrivateKey(out, key, EVP_aes_256_cbc(), pass, 6, nullptr, nullptr),
            1);
  char* data = nullptr;
  const std::string encrypted(data, static_cast<size_t>(BIO_get_mem_data(out, &data)));
  BIO_free(out);
  EVP_PKEY_free(key);
  BIO_free(in);
  ASSERT_THAT(encrypted, HasSubstr("ENCRYPTED PRIVATE KEY"));
  EXPECT_THAT(StartError({pki.tls.cert_pem, encrypted}),
              HasSubstr("tls.key_pem is an encrypted private key; give it decrypted"));
}

TEST(HttpServer, RefusesATimeoutThatIsNotPositive) {
  auto s = HttpServer::Start("127.0.0.1:0", Metrics().Handler(), {}, {milliseconds(0)});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("options.io_timeout must be positive"));
}

// A client that connects and sends nothing is closed after io_timeout; the server serves on.
void ExpectSilentClientDropped(const HttpTls& tls, const std::string& ca) {
  Metrics metrics;
  auto server = MustStart(metrics.Handler(), tls, {milliseconds(200)});
  ASSERT_TRUE(server);
  const Raw raw = RawExchange(server->port(), "");
  EXPECT_EQ(raw.received, "");
  EXPECT_GE(raw.took.count(), 150);
  EXPECT_LT(raw.took.count(), 3000);
  if (tls.cert_pem.empty())
    EXPECT_THAT(RawExchange(server->port(), kGetMetrics).received, StartsWith("HTTP/1.1 200"));
  else
    EXPECT_EQ(TlsGet(server->port(), ca, "/metrics").status, 200);
}

TEST(HttpServer, SilentClientIsDisconnectedAfterTheTimeout) {
  ExpectSilentClientDropped({}, "");
}

TEST(HttpServer, SilentClientIsDisconnectedBeforeTheTlsHandshakeAfterTheTimeout) {
  Pki pki;
  ExpectSilentClientDropped(pki.tls, pki.ca);
}

}  // namespace
}  // namespace tunectl
