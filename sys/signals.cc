#include "sys/signals.h"

#include <pthread.h>
#include <signal.h>

namespace tunectl {
namespace {

sigset_t TermSet() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  return s;
}

}  // namespace

TerminationSignals::TerminationSignals() {
  sigset_t s = TermSet();
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

void TerminationSignals::OnSignal(std::function<void(int)> on_signal) {
  waiter_ = std::thread([fn = std::move(on_signal)] {
    sigset_t s = TermSet();
    int sig = 0;
    sigwait(&s, &sig);
    fn(sig);
  });
}

TerminationSignals::~TerminationSignals() {
  if (!waiter_.joinable()) return;
  pthread_kill(waiter_.native_handle(), SIGTERM);  // wakes the waiter if no signal came
  waiter_.join();
}

}  // namespace tunectl
