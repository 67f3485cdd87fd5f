// A netio context: one event loop, its thread, and the back-ends that run on it.
//
// Create one per process (or per independent part of it); every socket is made from a
// context and must be destroyed before it. The destructor stops the loop, closes what is
// still open and joins the thread; send sockets still closing asynchronously (close(), or
// destroyed on the loop thread) end their close there, dropping what is unsent.
// Thread-safety: all methods may be called from any thread.
#pragma once

#include "netio/backend.hpp"
#include "netio/endpoint.hpp"
#include "netio/event_loop.hpp"

#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace netio {

struct ContextOptions {
  bool busy_poll = false;         // see EventLoop::set_busy_poll
  std::optional<int> cpu;         // pin the loop thread to this CPU (the constructor throws if it cannot)
};

class Context {
 public:
  explicit Context(ContextOptions options = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  EventLoop& loop() noexcept { return loop_; }
  // The back-end for a transport, created on first use (on the loop thread).
  // Throws netio::Error when the back-end cannot be started (e.g. no libfabric provider).
  Backend& backend(Transport transport);

  // Stops the loop and joins its thread; sockets still alive are closed from here on.
  // Idempotent. Called by the destructor.
  void stop();

 private:
  EventLoop loop_;
  std::mutex backends_mutex_;
  std::unique_ptr<Backend> tcp_backend_;
  std::unique_ptr<Backend> fabric_backend_;
  std::thread thread_;
};

}  // namespace netio
