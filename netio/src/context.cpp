// SPDX-License-Identifier: MIT
#include "netio/context.hpp"

#include "netio/error.hpp"
#include "netio/log.hpp"

#include "netio/backend_registry.hpp"
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
    throw Error(Errc::invalid_option, fmt::format("ContextOptions::cpu {}: no such CPU", cpu));
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (const int rc = ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set); rc != 0) {
    throw system_error(rc, fmt::format("cannot pin the event-loop thread to CPU {}", cpu));
  }
}

}  // namespace

Context::Context(ContextOptions options)
    : closing_(std::make_unique<detail::ClosingSenders>()), options_(std::move(options)) {
  if (options_.emulation) emulation_ = std::make_unique<NetworkEmulation>(std::move(*options_.emulation));
  loop_.set_busy_poll(options_.busy_poll);
  std::promise<void> started;
  auto started_future = started.get_future();
  thread_ = std::thread([this, cpu = options_.cpu, &started] {
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

Backend& Context::backend(const Endpoint& endpoint) {
  if (Backend* found = find_backend(endpoint.scheme)) return *found;
  return make_backend(endpoint.scheme, fmt::format("endpoint '{}'", endpoint.to_string()));
}

Backend& Context::backend(std::string_view scheme) {
  if (Backend* found = find_backend(scheme)) return *found;
  return make_backend(scheme, fmt::format("scheme '{}'", scheme));
}

Backend* Context::find_backend(std::string_view scheme) {
  std::lock_guard lock(backends_mutex_);
  const auto it = backends_.find(scheme);
  return it == backends_.end() ? nullptr : it->second.get();
}

Backend& Context::make_backend(std::string_view scheme, std::string_view what_for) {
  // Made on the loop thread, which serialises the making: no lock is held across the round
  // trip, so a loop callback asking for a back-end never waits for a thread waiting for it.
  Backend* result = nullptr;
  loop_.run_sync([&] {
    if ((result = find_backend(scheme)) != nullptr) return;  // made by a task queued earlier
    auto made = make_registered_backend(scheme, loop_, what_for);
    if (emulation_) made = emulation_->wrap(std::move(made), loop_);
    if (options_.wrap_backend) made = options_.wrap_backend(scheme, std::move(made), loop_);
    if (!made) throw Error(Errc::backend_error, fmt::format("cannot use {}: wrap_backend returned no back-end", what_for));
    std::lock_guard lock(backends_mutex_);
    // Once the loop has stopped, run_sync() runs here on the caller's thread: two callers may
    // race, and the first one's back-end stays.
    auto& slot = backends_[std::string(scheme)];
    if (!slot) slot = std::move(made);
    result = slot.get();
  });
  return *result;
}

void Context::stop() {
  if (!thread_.joinable()) return;
  loop_.stop();
  thread_.join();
  // Send sockets still closing asynchronously end now, while their back-ends exist.
  closing_->finish();
}

}  // namespace netio
