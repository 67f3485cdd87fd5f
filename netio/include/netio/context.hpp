// SPDX-License-Identifier: MIT
/// @file
/// A netio context: one event loop, its thread, and the back-ends that run on it.
///
/// Create one per process (or per independent part of it); every socket is made from a
/// context and should be destroyed before it. The destructor stops the loop, closes what is
/// still open and joins the thread; send sockets still closing asynchronously (close(), or
/// destroyed on the loop thread) end their close there, dropping what is unsent.
///
/// A socket that outlives its context (members declared in the wrong order, say) is safe,
/// not useful: every call on it that would do something throws netio::Error with
/// Errc::closed naming the socket's endpoint (the noexcept observers, e.g. remote() and
/// stats(), still answer), and its destructor returns at once, dropping what is unsent.
/// The loop and back-ends the socket used stay allocated, stopped, until the last such
/// socket is gone.
/// Thread-safety: all methods may be called from any thread.
#pragma once

#include "netio/emulation.hpp"
#include "netio/endpoint.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace netio {

class Backend;          // netio/backend/backend.hpp: what a back-end implements
class EventLoop;        // netio/backend/event_loop.hpp
class MetricsRegistry;  // netio/metrics.hpp
class Context;

namespace detail {
class BufferSender;
class ClosingSenders;

/// A handle on `context`'s loop and back-ends for a socket to hold (declared first among
/// its members, so that it goes last): it keeps them allocated while the socket lives, and
/// its destruction stops nothing.
Context share_context(const Context& context);
/// Whether the Context the handle `context` shares was destroyed.
bool context_gone(const Context& context) noexcept;
/// Throws Errc::closed for a call on `socket` (e.g. "the send socket to tcp://…") whose
/// Context was destroyed; `socket` is only made when it throws.
template <typename Describe>
void throw_if_context_gone(const Context& context, Describe socket);
[[noreturn]] void throw_context_gone(const std::string& socket);
}  // namespace detail

struct ContextOptions {
  bool busy_poll = false;  ///< see EventLoop::set_busy_poll
  std::optional<int> cpu;  ///< pin the loop thread to this CPU (the constructor throws if it cannot;
                           ///< Errc::invalid_option for no such CPU)
  ///< Applied to every back-end the context makes (from the registry, see netio/backend/registry.hpp),
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

namespace detail {
struct ContextCore;  // what a Context owns (netio/src/context_core.hpp)
}  // namespace detail

class Context {
 public:
  explicit Context(ContextOptions options = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  /// The context's event loop (netio/backend/event_loop.hpp): to post work or set timers on
  /// its thread.
  EventLoop& loop() noexcept;
  /// The back-end for an endpoint's scheme (or a scheme), made on first use from the
  /// registry, on the loop thread, wrapped by ContextOptions::wrap_backend. Holds no lock
  /// while it waits for the loop, so a loop callback may call it while other threads do.
  /// Throws netio::Error when the scheme has no back-end (naming the endpoint and the
  /// registered schemes) or the back-end cannot start (e.g. no libfabric provider).
  Backend& backend(const Endpoint& endpoint);
  Backend& backend(std::string_view scheme);

  /// The emulation of ContextOptions::emulation, to change while running (later buffers use
  /// the new configuration); nullptr when the context was made without one.
  NetworkEmulation* emulation() noexcept;

  /// The metrics of every socket made from this context (netio/metrics.hpp), each added for
  /// the socket's life; add collectors of your own to it. Serve it with netio::MetricsServer
  /// (netio/metrics/metrics_server.hpp).
  MetricsRegistry& metrics() noexcept;

  /// Stops the loop and joins its thread; sockets still alive are closed from here on.
  /// Idempotent. Called by the destructor (of the Context the user made, not of a
  /// detail::share_context handle).
  void stop();

 private:
  friend class detail::BufferSender;  ///< closes asynchronously under core_->closing
  friend Context detail::share_context(const Context& context);
  friend bool detail::context_gone(const Context& context) noexcept;

  struct Shared {};
  Context(Shared, std::shared_ptr<detail::ContextCore> core) noexcept : core_(std::move(core)), owner_(false) {}

  Backend* find_backend(std::string_view scheme);
  Backend& make_backend(std::string_view scheme, std::string_view what_for);

  std::shared_ptr<detail::ContextCore> core_;
  bool owner_ = true;  ///< the user's Context (stops the loop when destroyed), not a socket's handle
};

namespace detail {
template <typename Describe>
void throw_if_context_gone(const Context& context, Describe socket) {
  if (context_gone(context)) [[unlikely]]
    throw_context_gone(socket());
}
}  // namespace detail

}  // namespace netio
