#include "netio/context.hpp"

#include "netio/error.hpp"
#include "netio/log.hpp"

#include "backends/fabric/fabric_backend.hpp"
#include "backends/posix/posix_backend.hpp"

#include <pthread.h>
#include <sched.h>

#include <cstring>
#include <future>

namespace netio {
namespace {

void pin_current_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (const int rc = ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set); rc != 0) {
    log(LogLevel::warn, "context: cannot pin the event-loop thread to CPU {}: {}", cpu, std::strerror(rc));
  }
}

}  // namespace

Context::Context(ContextOptions options) {
  loop_.set_busy_poll(options.busy_poll);
  std::promise<void> started;
  auto started_future = started.get_future();
  thread_ = std::thread([this, cpu = options.cpu, &started] {
    if (cpu) pin_current_thread(*cpu);
    // run() marks the loop running before it waits; post a task that reports it is up.
    loop_.post([&started] { started.set_value(); });
    loop_.run();
  });
  started_future.wait();
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
}

}  // namespace netio
