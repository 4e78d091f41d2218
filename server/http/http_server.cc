#include "server/http/http_server.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <thread>

namespace tunectl {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket s, const HttpHandler* h) : socket_(std::move(s)), handler_(h) {}
  void Start() {
    auto self = shared_from_this();
    http::async_read(socket_, buffer_, request_, [self](beast::error_code ec, size_t) {
      if (!ec) self->Respond();
    });
  }

 private:
  void Respond() {
    response_.version(request_.version());
    response_.keep_alive(false);
    response_.set(http::field::server, "tunectl-server");
    if (request_.method() != http::verb::get && request_.method() != http::verb::head) {
      response_.result(http::status::method_not_allowed);
      response_.set(http::field::allow, "GET, HEAD");
      response_.body() = "only GET\n";
    } else {
      std::string path(request_.target());
      if (auto q = path.find('?'); q != std::string::npos) path.resize(q);
      HttpResponse r = (*handler_)(path);
      response_.result(static_cast<unsigned>(r.status));
      response_.set(http::field::content_type, r.content_type);
      response_.body() = std::move(r.body);
    }
    response_.prepare_payload();
    auto self = shared_from_this();
    http::async_write(socket_, response_, [self](beast::error_code, size_t) {
      beast::error_code ignored;
      self->socket_.shutdown(tcp::socket::shutdown_send, ignored);
    });
  }

  tcp::socket socket_;
  const HttpHandler* handler_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
};

class HttpServerImpl : public HttpServer {
 public:
  explicit HttpServerImpl(HttpHandler h) : handler_(std::move(h)), acceptor_(ioc_) {}
  ~HttpServerImpl() override { Stop(); }

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
    thread_ = std::thread([this] { ioc_.run(); });
    return Status::Ok();
  }
  int port() const override { return port_; }
  void Stop() override {
    ioc_.stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Accept() {
    acceptor_.async_accept([this](beast::error_code ec, tcp::socket s) {
      if (!ec) std::make_shared<Connection>(std::move(s), &handler_)->Start();
      if (acceptor_.is_open()) Accept();
    });
  }

  HttpHandler handler_;
  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& listen,
                                                      HttpHandler handler) {
  auto s = std::make_unique<HttpServerImpl>(std::move(handler));
  if (auto st = s->Listen(listen); !st.ok()) return st;
  return std::unique_ptr<HttpServer>(std::move(s));
}

}  // namespace tunectl
