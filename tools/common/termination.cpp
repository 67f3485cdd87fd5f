// SPDX-License-Identifier: MIT
#include "termination.hpp"

#include <atomic>
#include <csignal>

namespace netio::tools {
namespace {

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "used in a signal handler");

extern "C" void on_termination_signal(int signal_number) {
  int expected = 0;
  if (!g_signal.compare_exchange_strong(expected, signal_number)) {
    // Second signal: the tool did not stop in time; die the way the user asked.
    std::signal(signal_number, SIG_DFL);
    std::raise(signal_number);
  }
}

}  // namespace

void install_termination_handlers() {
  struct sigaction action {};
  action.sa_handler = &on_termination_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a blocking call in the main thread returns EINTR
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool stop_requested() noexcept { return g_signal.load(std::memory_order_relaxed) != 0; }

int stop_signal() noexcept { return g_signal.load(std::memory_order_relaxed); }

}  // namespace netio::tools
