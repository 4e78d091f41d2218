#include "server/store/listener.h"

#include <chrono>
#include <pqxx/pqxx>

namespace tunectl {
namespace {

class Receiver : public pqxx::notification_receiver {
 public:
  Receiver(pqxx::connection_base& c, std::function<void()>* wake)
      : pqxx::notification_receiver(c, "tunectl_dispatch"), wake_(wake) {}
  void operator()(const std::string&, int) override { (*wake_)(); }

 private:
  std::function<void()>* wake_;
};

}  // namespace

DispatchListener::DispatchListener(std::string dsn, std::function<void()> on_wake,
                                   std::function<void(const std::string&)> on_error)
    : dsn_(std::move(dsn)),
      on_wake_(std::move(on_wake)),
      on_error_(std::move(on_error)),
      thread_([this] { Loop(); }) {}

DispatchListener::~DispatchListener() {
  stop_ = true;
  thread_.join();
}

void DispatchListener::Loop() {
  int backoff_ms = 250;
  std::string last_error;
  while (!stop_) {
    try {
      pqxx::connection c(dsn_);
      Receiver r(c, &on_wake_);
      c.get_notifs();  // issues the LISTEN
      if (!last_error.empty()) on_error_("dispatch notifications: listening again");
      last_error.clear();
      backoff_ms = 250;
      on_wake_();  // whatever was queued while not listening
      while (!stop_) c.await_notification(1, 0);
    } catch (const std::exception& e) {
      const std::string what = e.what();
      if (what != last_error)
        on_error_("dispatch notifications: " + what +
                  "; the dispatcher polls every second until they are back");
      last_error = what;
    }
    for (int waited = 0; waited < backoff_ms && !stop_; waited += 50)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    backoff_ms = std::min(backoff_ms * 2, 5000);
  }
}

}  // namespace tunectl
