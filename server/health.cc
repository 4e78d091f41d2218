#include "server/health.h"

#include <condition_variable>
#include <mutex>

namespace tunectl {

using Steady = std::chrono::steady_clock;

struct HealthProbe::State {
  State(std::unique_ptr<ConnectionPool> p, const Clock* clock, HealthOptions o)
      : pool(std::move(p)), store(pool.get(), clock), opts(o) {}
  std::unique_ptr<ConnectionPool> pool;
  Store store;
  const HealthOptions opts;
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  bool ok_once = false;
  std::string error;  // of the last ping; "" when it answered
  std::optional<Steady::time_point> in_flight_since;
  std::optional<StoreSnapshot> snapshot;

  std::string Unhealthy(Steady::time_point now) const {  // "" = healthy; under mu
    if (in_flight_since && now - *in_flight_since >= std::chrono::milliseconds(opts.stall_ms))
      return "the database has not answered for " +
             std::to_string(
                 std::chrono::duration_cast<std::chrono::seconds>(now - *in_flight_since).count()) +
             " s";
    if (!error.empty()) return error;
    if (!ok_once) return "no answer from the database yet";
    return "";
  }
};

Result<std::unique_ptr<HealthProbe>> HealthProbe::Start(const std::string& dsn, const Clock* clock,
                                                        ConnectionPool* gate, HealthOptions opts) {
  auto pool = ConnectionPool::Open(dsn, 1);
  if (!pool.ok()) return pool.status();
  (*pool)->wait_ms = opts.stall_ms;
  return std::unique_ptr<HealthProbe>(
      new HealthProbe(std::make_shared<State>(std::move(*pool), clock, opts), gate));
}

HealthProbe::HealthProbe(std::shared_ptr<State> s, ConnectionPool* gate)
    : s_(std::move(s)), gate_(gate), probe_(ProbeLoop, s_), watch_([this] { WatchLoop(); }) {}

HealthProbe::~HealthProbe() {
  bool idle;
  {
    std::unique_lock<std::mutex> l(s_->mu);
    s_->stop = true;
    s_->cv.notify_all();
    // A ping stuck in a frozen database cannot be interrupted: leave it behind (it owns its
    // state) rather than hang the server's shutdown.
    idle = s_->cv.wait_for(l, std::chrono::seconds(2), [&] { return !s_->in_flight_since; });
  }
  watch_.join();
  if (idle)
    probe_.join();
  else
    probe_.detach();
  if (gate_) gate_->MarkUp();
}

HealthProbe::View HealthProbe::Get() const {
  std::lock_guard<std::mutex> g(s_->mu);
  View v;
  v.error = s_->Unhealthy(Steady::now());
  v.healthy = v.error.empty();
  if (v.healthy) v.snapshot = s_->snapshot;
  return v;
}

void HealthProbe::ProbeLoop(std::shared_ptr<State> s) {
  std::unique_lock<std::mutex> l(s->mu);
  while (!s->stop) {
    s->in_flight_since = Steady::now();
    l.unlock();
    Status st = s->store.Ping();  // may block while the database is frozen: only this thread
    std::optional<StoreSnapshot> snap;
    if (st.ok()) {
      auto r = s->store.Snapshot();
      if (r.ok()) snap = std::move(*r);
    }
    l.lock();
    s->in_flight_since.reset();
    if (st.ok()) {
      s->error.clear();
      s->ok_once = true;
      if (snap) s->snapshot = std::move(snap);
    } else {
      s->error = st.message();
    }
    s->cv.notify_all();  // the watchdog and a destructor react to an answer at once
    s->cv.wait_for(l, std::chrono::milliseconds(s->opts.interval_ms), [&] { return s->stop; });
  }
}

void HealthProbe::WatchLoop() {
  std::unique_lock<std::mutex> l(s_->mu);
  bool down = false;
  while (!s_->stop) {
    const std::string why = s_->Unhealthy(Steady::now());
    if (gate_ && !why.empty() && s_->ok_once) {
      gate_->MarkDown(why);  // refreshed, so the age in the message stays true
      down = true;
    } else if (gate_ && why.empty() && down) {
      gate_->MarkUp();
      down = false;
    }
    s_->cv.wait_for(l, std::chrono::milliseconds(250), [&] { return s_->stop; });
  }
}

}  // namespace tunectl
