// SPDX-License-Identifier: MIT
// The counters behind SocketStats (netio/stats.hpp): relaxed atomics a socket bumps on its hot
// path; stats() reads them from any thread with snapshot().
#pragma once

#include "netio/stats.hpp"

#include <atomic>
#include <cstdint>

namespace netio {

class StatsCounters {
 public:
  void add_message(std::uint64_t payload_bytes) noexcept {
    messages_.fetch_add(1, std::memory_order_relaxed);
    bytes_.fetch_add(payload_bytes, std::memory_order_relaxed);
  }
  /// The same for callers that never count concurrently (they take turns under a lock):
  /// plain loads and stores instead of read-modify-writes on the hot path.
  void add_message_single_writer(std::uint64_t payload_bytes) noexcept {
    messages_.store(messages_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    bytes_.store(bytes_.load(std::memory_order_relaxed) + payload_bytes, std::memory_order_relaxed);
  }
  std::atomic<std::uint64_t>& pages() noexcept { return pages_; }
  std::atomic<std::uint64_t>& flushes_full() noexcept { return flushes_full_; }
  std::atomic<std::uint64_t>& flushes_timer() noexcept { return flushes_timer_; }
  std::atomic<std::uint64_t>& flushes_explicit() noexcept { return flushes_explicit_; }
  std::atomic<std::uint64_t>& backpressure_waits() noexcept { return backpressure_waits_; }
  std::atomic<std::uint64_t>& connections() noexcept { return connections_; }
  std::atomic<std::uint64_t>& disconnects() noexcept { return disconnects_; }
  std::atomic<std::uint64_t>& zero_copy_messages() noexcept { return zero_copy_messages_; }

  SocketStats snapshot() const noexcept {
    auto get = [](const std::atomic<std::uint64_t>& c) { return c.load(std::memory_order_relaxed); };
    return {get(messages_),           get(bytes_),         get(pages_),
            get(flushes_full_),       get(flushes_timer_), get(flushes_explicit_),
            get(backpressure_waits_), get(connections_),   get(disconnects_),
            get(zero_copy_messages_)};
  }

 private:
  std::atomic<std::uint64_t> messages_{0}, bytes_{0}, pages_{0}, flushes_full_{0}, flushes_timer_{0},
      flushes_explicit_{0}, backpressure_waits_{0}, connections_{0}, disconnects_{0}, zero_copy_messages_{0};
};

}  // namespace netio
