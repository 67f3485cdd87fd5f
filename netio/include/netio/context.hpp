// SPDX-License-Identifier: MIT
/// @file
/// A netio context: one event loop, its thread, and the back-ends that run on it.
///
/// Create one per process (or per independent part of it); every socket is made from a
/// context and must be destroyed before it. The destructor stops the loop, closes what is
/// still open and joins the thread; send sockets still closing asynchronously (close(), or
/// destroyed on the loop thread) end their close there, dropping what is unsent.
/// Thread-safety: all methods may be called from any thread.
#pragma once

#include "netio/backend.hpp"
#include "netio/emulation.hpp"
#include "netio/endpoint.hpp"
#include "netio/event_loop.hpp"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace netio {

namespace detail {
class BufferSender;
class ClosingSenders;
}  // namespace detail

struct ContextOptions {
  bool busy_poll = false;         ///< see EventLoop::set_busy_poll
  std::optional<int> cpu;         ///< pin the loop thread to this CPU (the constructor throws if it cannot;
                                  ///< Errc::invalid_option for no such CPU)
  ///< Applied to every back-end the context makes (from the registry, see backend_registry.hpp),
  ///< on the loop thread: returns what the context uses instead of `inner`, e.g. a decorator
  ///< that forwards to it (an emulated network, a test counting calls). Empty: no wrapping.
  ///< May throw netio::Error, which the call that needed the back-end throws.
  std::function<std::unique_ptr<Backend>(std::string_view scheme, std::unique_ptr<Backend> inner, EventLoop& loop)>
      wrap_backend;
  /// An emulated network (netio/emulation.hpp) around every back-end of the context: delays,
  /// rate limits and slow-downs, e.g. parse_emulation_spec("delay=lognormal:mean=50us,sigma=0.8").
  /// Installed with the wrap hook, innermost (wrap_backend, if any, wraps the emulated
  /// back-end). Unset: no emulation, and none can be switched on later (an empty config can:
  /// it shapes nothing until Context::emulation()->set_config()).
  std::optional<EmulationConfig> emulation;
};

class Context {
 public:
  explicit Context(ContextOptions options = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  EventLoop& loop() noexcept { return loop_; }
  /// The back-end for an endpoint's scheme (or a scheme), made on first use from the
  /// registry, on the loop thread, wrapped by ContextOptions::wrap_backend. Holds no lock
  /// while it waits for the loop, so a loop callback may call it while other threads do.
  /// Throws netio::Error when the scheme has no back-end (naming the endpoint and the
  /// registered schemes) or the back-end cannot start (e.g. no libfabric provider).
  Backend& backend(const Endpoint& endpoint);
  Backend& backend(std::string_view scheme);

  /// The emulation of ContextOptions::emulation, to change while running (later buffers use
  /// the new configuration); nullptr when the context was made without one.
  NetworkEmulation* emulation() noexcept { return emulation_.get(); }

  /// Stops the loop and joins its thread; sockets still alive are closed from here on.
  /// Idempotent. Called by the destructor.
  void stop();

 private:
  friend class detail::BufferSender;  ///< closes asynchronously under closing_

  Backend* find_backend(std::string_view scheme);
  Backend& make_backend(std::string_view scheme, std::string_view what_for);

  EventLoop loop_;
  /// Send connections closing after their sockets went, ended by stop(); outlives the back-ends.
  std::unique_ptr<detail::ClosingSenders> closing_;
  ContextOptions options_;
  std::unique_ptr<NetworkEmulation> emulation_;  ///< destroyed after the back-ends, before the loop
  std::mutex backends_mutex_;  ///< guards the map, never held while a back-end is made
  std::map<std::string, std::unique_ptr<Backend>, std::less<>> backends_;
  std::thread thread_;
};

}  // namespace netio
