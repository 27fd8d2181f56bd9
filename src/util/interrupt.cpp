#include "util/interrupt.h"

#include <csignal>
#include <string>

namespace lazyagent {
namespace {

volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_signal(int sig) { g_signal = sig; }

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: let blocking calls see EINTR
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

int interrupted_signal() { return g_signal; }

Status check_interrupted() {
  const int sig = g_signal;
  if (sig == 0) return ok_status();
  if (sig == kCancelledByClient) return Error{ErrorKind::kInterrupted, "cancelled by the client"};
  return Error{ErrorKind::kInterrupted, "interrupted by signal " + std::to_string(sig)};
}

void set_interrupted_for_test(int sig) { g_signal = sig; }

void request_cancel() {
  if (g_signal == 0) g_signal = kCancelledByClient;
}

void clear_cancel() {
  if (g_signal == kCancelledByClient) g_signal = 0;
}

}  // namespace lazyagent
