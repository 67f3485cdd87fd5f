// SPDX-License-Identifier: MIT
#include "netio/context.hpp"

#include "netio/error.hpp"
#include "netio/log.hpp"

#include "closing_senders.hpp"
#include "context_core.hpp"
#include "netio/backend/registry.hpp"
#include "netio/internal/cpu_affinity.hpp"

#include <fmt/format.h>

#include <cstring>
#include <future>

namespace netio {

namespace detail {

ContextCore::ContextCore(ContextOptions options_in)
    : closing(std::make_unique<ClosingSenders>()), options(std::move(options_in)) {}

ContextCore::~ContextCore() = default;

Context share_context(const Context& context) { return Context(Context::Shared{}, context.core_); }

bool context_gone(const Context& context) noexcept { return context.core_->gone.load(std::memory_order_acquire); }

void throw_context_gone(const std::string& socket) {
  throw Error(Errc::closed, fmt::format("{}: its Context was destroyed (destroy every socket before the Context "
                                        "it was made from)",
                                        socket));
}

}  // namespace detail

Context::Context(ContextOptions options) : core_(std::make_shared<detail::ContextCore>(std::move(options))) {
  auto& core = *core_;
  if (core.options.emulation) core.emulation = std::make_unique<NetworkEmulation>(std::move(*core.options.emulation));
  core.loop.set_busy_poll(core.options.busy_poll);
  std::promise<void> started;
  auto started_future = started.get_future();
  core.thread = std::thread([&core, cpu = core.options.cpu, &started] {
    try {
      if (cpu) detail::pin_current_thread(*cpu, "ContextOptions::cpu");
    } catch (...) {
      started.set_exception(std::current_exception());
      return;
    }
    // run() marks the loop running before it waits; post a task that reports it is up.
    core.loop.post([&started] { started.set_value(); });
    core.loop.run();
  });
  try {
    started_future.get();
  } catch (...) {
    core.thread.join();
    throw;
  }
}

Context::~Context() {
  if (!owner_) return;  // a socket's handle: the sockets' last one frees what the context owned
  stop();
  core_->gone.store(true, std::memory_order_release);
}

EventLoop& Context::loop() noexcept { return core_->loop; }

NetworkEmulation* Context::emulation() noexcept { return core_->emulation.get(); }
MetricsRegistry& Context::metrics() noexcept { return core_->metrics; }

Backend& Context::backend(const Endpoint& endpoint) {
  if (Backend* found = find_backend(endpoint.scheme)) return *found;
  return make_backend(endpoint.scheme, fmt::format("endpoint '{}'", endpoint.to_string()));
}

Backend& Context::backend(std::string_view scheme) {
  if (Backend* found = find_backend(scheme)) return *found;
  return make_backend(scheme, fmt::format("scheme '{}'", scheme));
}

Backend* Context::find_backend(std::string_view scheme) {
  std::lock_guard lock(core_->backends_mutex);
  const auto it = core_->backends.find(scheme);
  return it == core_->backends.end() ? nullptr : it->second.get();
}

Backend& Context::make_backend(std::string_view scheme, std::string_view what_for) {
  // Made on the loop thread, which serialises the making: no lock is held across the round
  // trip, so a loop callback asking for a back-end never waits for a thread waiting for it.
  Backend* result = nullptr;
  auto& core = *core_;
  core.loop.run_sync([&] {
    if ((result = find_backend(scheme)) != nullptr) return;  // made by a task queued earlier
    auto made = make_registered_backend(scheme, core.loop, what_for);
    if (core.emulation) made = core.emulation->wrap(std::move(made), core.loop);
    if (core.options.wrap_backend) made = core.options.wrap_backend(scheme, std::move(made), core.loop);
    if (!made)
      throw Error(Errc::backend_error, fmt::format("cannot use {}: wrap_backend returned no back-end", what_for));
    std::lock_guard lock(core.backends_mutex);
    // Once the loop has stopped, run_sync() runs here on the caller's thread: two callers may
    // race, and the first one's back-end stays.
    auto& slot = core.backends[std::string(scheme)];
    if (!slot) slot = std::move(made);
    result = slot.get();
  });
  return *result;
}

void Context::stop() {
  if (!owner_ || !core_->thread.joinable()) return;
  core_->loop.stop();
  core_->thread.join();
  // Send sockets still closing asynchronously end now, while their back-ends exist.
  core_->closing->finish();
}

}  // namespace netio
