#include "netio/context.hpp"

#include "netio/error.hpp"
#include "netio/log.hpp"

#include "backends/fabric/fabric_backend.hpp"
#include "backends/posix/posix_backend.hpp"
#include "closing_senders.hpp"

#include <pthread.h>
#include <sched.h>

#include <fmt/format.h>

#include <cstring>
#include <future>

namespace netio {
namespace {

void pin_current_thread(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) {
    throw Error(std::make_error_code(std::errc::invalid_argument),
                fmt::format("cannot pin the event-loop thread to CPU {}: no such CPU", cpu));
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (const int rc = ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set); rc != 0) {
    throw system_error(rc, fmt::format("cannot pin the event-loop thread to CPU {}", cpu));
  }
}

}  // namespace

Context::Context(ContextOptions options) {
  loop_.set_busy_poll(options.busy_poll);
  std::promise<void> started;
  auto started_future = started.get_future();
  thread_ = std::thread([this, cpu = options.cpu, &started] {
    try {
      if (cpu) pin_current_thread(*cpu);
    } catch (...) {
      started.set_exception(std::current_exception());
      return;
    }
    // run() marks the loop running before it waits; post a task that reports it is up.
    loop_.post([&started] { started.set_value(); });
    loop_.run();
  });
  try {
    started_future.get();
  } catch (...) {
    thread_.join();
    throw;
  }
}

Context::~Context() { stop(); }

Backend& Context::backend(Transport transport) {
  std::lock_guard lock(backends_mutex_);
  auto& slot = transport == Transport::fabric ? fabric_backend_ : tcp_backend_;
  if (!slot) {
    loop_.run_sync([&] {
      slot = transport == Transport::fabric ? fabric::make_backend(loop_) : posix::make_backend(loop_);
    });
  }
  return *slot;
}

void Context::stop() {
  if (!thread_.joinable()) return;
  loop_.stop();
  thread_.join();
  // Send sockets still closing asynchronously end now, while their back-ends exist.
  detail::finish_closing(loop_);
}

}  // namespace netio
