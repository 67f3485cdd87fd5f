// SPDX-License-Identifier: MIT
/// @file
/// Per-socket statistics, as a socket's stats() returns them: a snapshot of relaxed atomic
/// counters (cheap to bump on the hot path, cheap to read from any thread), taken counter by
/// counter, not atomically as a whole.
#pragma once

#include <cstdint>

namespace netio {

struct SocketStats {
  std::uint64_t messages = 0;
  std::uint64_t bytes = 0;               ///< payload bytes, without framing
  std::uint64_t pages = 0;               ///< pages (high-throughput) or buffers (low-latency) moved
  std::uint64_t flushes_full = 0;        ///< pages sent because they were full
  std::uint64_t flushes_timer = 0;       ///< pages sent by the flush timer
  std::uint64_t flushes_explicit = 0;    ///< pages sent by flush()
  std::uint64_t backpressure_waits = 0;  ///< send() calls that had to wait for a free buffer
  std::uint64_t connections = 0;         ///< connections accepted or established
  std::uint64_t disconnects = 0;         ///< connections lost or dropped for a protocol error
  std::uint64_t zero_copy_messages = 0;  ///< high-throughput messages sent from the caller's memory
};

}  // namespace netio
