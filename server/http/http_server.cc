#include "server/http/http_server.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <cstdint>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace tunectl {

namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One connection: the TLS handshake (TlsStream only), one request, the handler's response, close.
// The handshake and the request share one deadline, the response gets another; when one passes,
// tcp_stream closes the socket and the pending operation fails. Any failure drops the connection:
// the last handler holding `self` returns and the socket closes with it.
template <class Stream>
class Connection : public std::enable_shared_from_this<Connection<Stream>> {
 public:
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

  template <class... StreamArgs>
  Connection(const HttpHandler* h, std::chrono::milliseconds timeout, StreamArgs&&... args)
      : stream_(std::forward<StreamArgs>(args)...), handler_(h), timeout_(timeout) {}

  void Start() {
    beast::get_lowest_layer(stream_).expires_after(timeout_);
    if constexpr (kTls) {
      stream_.async_handshake(ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (!ec) self->Read();
                              });
    } else {
      Read();
    }
  }

 private:
  void Read() {
    parser_.header_limit(kMaxHeaderBytes);
    parser_.body_limit(kMaxBodyBytes);
    http::async_read(stream_, buffer_, parser_,
                     [self = this->shared_from_this()](beast::error_code ec, size_t) {
                       if (!ec) self->Respond();
                     });
  }

  void Respond() {
    const auto& request = parser_.get();
    response_.version(request.version());
    response_.keep_alive(false);
    response_.set(http::field::server, "tunectl-server");
    const auto verb = request.method();
    if (verb != http::verb::get && verb != http::verb::head && verb != http::verb::post) {
      response_.result(http::status::method_not_allowed);
      response_.set(http::field::allow, "GET, HEAD, POST");
      response_.body() = "only GET, HEAD and POST\n";
    } else {
      HttpRequest in;
      in.method = std::string(request.method_string());
      in.path = std::string(request.target());
      if (auto q = in.path.find('?'); q != std::string::npos) {
        in.query = in.path.substr(q + 1);
        in.path.resize(q);
      }
      for (const auto& f : request) {
        std::string name(f.name_string());
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        in.headers.emplace_back(std::move(name), std::string(f.value()));
      }
      in.body = request.body();
      HttpResponse r = (*handler_)(in);
      response_.result(static_cast<unsigned>(r.status));
      response_.set(http::field::content_type, r.content_type);
      for (auto& [name, value] : r.headers) response_.insert(name, value);
      response_.body() = std::move(r.body);
    }
    response_.prepare_payload();
    beast::get_lowest_layer(stream_).expires_after(timeout_);
    http::async_write(
        stream_, response_,
        [self = this->shared_from_this()](beast::error_code, size_t) { self->Close(); });
  }

  void Close() {
    if constexpr (kTls) {
      // close_notify, then the peer's, within what is left of the response's deadline.
      stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) {
        beast::error_code ignored;
        beast::get_lowest_layer(self->stream_)
            .socket()
            .shutdown(tcp::socket::shutdown_both, ignored);
      });
    } else {
      beast::error_code ignored;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    }
  }

  Stream stream_;
  const HttpHandler* handler_;
  std::chrono::milliseconds timeout_;
  static constexpr std::uint32_t kMaxHeaderBytes = 16 * 1024;
  static constexpr std::uint64_t kMaxBodyBytes = 16 * 1024;
  beast::flat_buffer buffer_;
  http::request_parser<http::string_body> parser_;
  http::response<http::string_body> response_;
};

// The first error OpenSSL queued on this thread (its reason only), the queue emptied after.
std::string OpenSslReason() {
  const unsigned long e = ERR_peek_error();
  const char* reason = e ? ERR_reason_error_string(e) : nullptr;
  std::string out = reason ? reason : e ? "error " + std::to_string(e) : "unknown error";
  ERR_clear_error();
  return out;
}

// Whether `e` (an OpenSSL error code) says the key is not the certificate's.
bool IsKeyMismatch(unsigned long e) {
  return ERR_GET_LIB(e) == ERR_LIB_X509 && (ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH ||
                                            ERR_GET_REASON(e) == X509_R_KEY_TYPE_MISMATCH);
}

// A server context: TLS 1.2 at least, no compression, the certificate (chain) and its key.
Status MakeTlsContext(const HttpTls& tls, std::optional<ssl::context>& out) {
  const std::string where = "HTTP endpoint TLS: ";
  const std::string mismatch = where +
                               "tls.key_pem is not the private key of the certificate in "
                               "tls.cert_pem (";
  try {
    out.emplace(ssl::context::tls_server);
  } catch (const std::exception& e) {
    return Status::Internal(where + "cannot make an OpenSSL context: " + e.what());
  }
  ssl::context& ctx = *out;
  beast::error_code ec;
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_compression |
                      ssl::context::no_sslv2 | ssl::context::no_sslv3,
                  ec);
  if (ec || SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION) != 1)
    return Status::Internal(
        where + "cannot set the protocol options: " + (ec ? ec.message() : OpenSslReason()));
  // An encrypted key fails instead of OpenSSL asking for its passphrase on the terminal.
  ctx.set_password_callback(
      [](std::size_t, ssl::context::password_purpose) { return std::string(); }, ec);
  if (ec) return Status::Internal(where + "cannot set a password callback: " + ec.message());
  // What OpenSSL says of a wrong kind of PEM block ("PEM lib", "unsupported") names nothing an
  // operator would look for: the plain cases are named here first.
  if (tls.cert_pem.find("-----BEGIN CERTIFICATE-----") == std::string::npos)
    return Status::InvalidArgument(where +
                                   "tls.cert_pem holds no PEM certificate (no \"-----BEGIN "
                                   "CERTIFICATE-----\" line)");
  if (tls.key_pem.find("ENCRYPTED") != std::string::npos)
    return Status::InvalidArgument(where +
                                   "tls.key_pem is an encrypted private key; give it decrypted "
                                   "(openssl pkey -in KEY -out PLAIN_KEY)");
  if (tls.key_pem.find("PRIVATE KEY-----") == std::string::npos)
    return Status::InvalidArgument(where +
                                   "tls.key_pem holds no PEM private key (no \"-----BEGIN ... "
                                   "PRIVATE KEY-----\" line)");
  ctx.use_certificate_chain(asio::buffer(tls.cert_pem), ec);
  if (ec) {
    ERR_clear_error();
    return Status::InvalidArgument(
        where + "tls.cert_pem holds no usable PEM certificate (OpenSSL: " + ec.message() + ")");
  }
  ctx.use_private_key(asio::buffer(tls.key_pem), ssl::context::pem, ec);
  if (ec) {
    ERR_clear_error();
    if (ec.category() == asio::error::get_ssl_category() &&
        IsKeyMismatch(static_cast<unsigned long>(ec.value())))
      return Status::InvalidArgument(mismatch + ec.message() + ")");
    return Status::InvalidArgument(
        where +
        "tls.key_pem holds no usable unencrypted PEM private key (OpenSSL: " + ec.message() + ")");
  }
  if (SSL_CTX_check_private_key(ctx.native_handle()) != 1)
    return Status::InvalidArgument(mismatch + OpenSslReason() + ")");
  return Status::Ok();
}

class HttpServerImpl : public HttpServer {
 public:
  HttpServerImpl(HttpHandler h, std::chrono::milliseconds timeout)
      : handler_(std::move(h)), timeout_(timeout), acceptor_(ioc_) {}
  ~HttpServerImpl() override { Stop(); }

  Status UseTls(const HttpTls& tls) { return MakeTlsContext(tls, tls_); }

  Status Listen(const std::string& listen) {
    const auto colon = listen.rfind(':');
    if (colon == std::string::npos)
      return Status::InvalidArgument("--http: \"" + listen + "\" is not HOST:PORT");
    try {
      const int port = std::stoi(listen.substr(colon + 1));
      tcp::resolver resolver(ioc_);
      auto ep = resolver.resolve(listen.substr(0, colon), std::to_string(port))->endpoint();
      acceptor_.open(ep.protocol());
      acceptor_.set_option(asio::socket_base::reuse_address(true));
      acceptor_.bind(ep);
      acceptor_.listen();
      port_ = acceptor_.local_endpoint().port();
    } catch (const std::exception& e) {
      return Status::Unavailable("--http: cannot listen on " + listen + ": " + e.what() +
                                 " (address in use or invalid; pass --http HOST:PORT)");
    }
    Accept();
    // Each connection runs on its own strand, so its handler may run beside another's: a slow
    // page does not hold /healthz up.
    for (int i = 0; i < kThreads; ++i) threads_.emplace_back([this] { ioc_.run(); });
    return Status::Ok();
  }
  int port() const override { return port_; }
  void Stop() override {
    ioc_.stop();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    threads_.clear();
  }

 private:
  void Accept() {
    acceptor_.async_accept(asio::make_strand(ioc_), [this](beast::error_code ec, tcp::socket s) {
      if (!ec) {
        if (tls_)
          std::make_shared<Connection<TlsStream>>(&handler_, timeout_, std::move(s), *tls_)
              ->Start();
        else
          std::make_shared<Connection<PlainStream>>(&handler_, timeout_, std::move(s))->Start();
      }
      if (acceptor_.is_open()) Accept();
    });
  }

  // Declared before ioc_: the connections its destructor drops still point at both.
  HttpHandler handler_;
  std::chrono::milliseconds timeout_;
  std::optional<ssl::context> tls_;  // empty: plaintext
  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  static constexpr int kThreads = 4;
  std::vector<std::thread> threads_;
  int port_ = 0;
};

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& listen,
                                                      HttpHandler handler, const HttpTls& tls,
                                                      const HttpOptions& options) {
  if (options.io_timeout <= std::chrono::milliseconds::zero())
    return Status::InvalidArgument("HTTP endpoint: options.io_timeout must be positive, not " +
                                   std::to_string(options.io_timeout.count()) + " ms");
  if (tls.cert_pem.empty() != tls.key_pem.empty())
    return Status::InvalidArgument(std::string("HTTP endpoint TLS: ") +
                                   (tls.cert_pem.empty()
                                        ? "tls.cert_pem is empty while tls.key_pem is set"
                                        : "tls.key_pem is empty while tls.cert_pem is set") +
                                   "; give both (HTTPS) or neither (plaintext)");
  auto s = std::make_unique<HttpServerImpl>(std::move(handler), options.io_timeout);
  if (!tls.cert_pem.empty())
    if (auto st = s->UseTls(tls); !st.ok()) return st;
  if (auto st = s->Listen(listen); !st.ok()) return st;
  return std::unique_ptr<HttpServer>(std::move(s));
}

}  // namespace tunectl
