// SPDX-License-Identifier: MIT
// What a Context owns, shared with the sockets made from it (see detail::share_context), so
// that a socket outliving its Context refers to a stopped loop, not to freed memory.
// Internal: the public Context shows none of it.
#pragma once

#include "netio/backend/backend.hpp"
#include "netio/backend/event_loop.hpp"
#include "netio/context.hpp"
#include "netio/emulation.hpp"
#include "netio/metrics.hpp"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace netio::detail {

class ClosingSenders;

struct ContextCore {
  explicit ContextCore(ContextOptions options);
  ~ContextCore();
  ContextCore(const ContextCore&) = delete;
  ContextCore& operator=(const ContextCore&) = delete;

  EventLoop loop;
  /// Send connections closing after their sockets went, ended by stop(); outlives the back-ends.
  std::unique_ptr<ClosingSenders> closing;
  ContextOptions options;
  std::unique_ptr<NetworkEmulation> emulation;  ///< destroyed after the back-ends, before the loop
  std::mutex backends_mutex;                    ///< guards the map, never held while a back-end is made
  std::map<std::string, std::unique_ptr<Backend>, std::less<>> backends;
  std::thread thread;
  /// Set once the user's Context was destroyed: the sockets' calls throw Errc::closed.
  std::atomic<bool> gone{false};
  MetricsRegistry metrics;  ///< the sockets' collectors (netio/metrics.hpp)
};

}  // namespace netio::detail
