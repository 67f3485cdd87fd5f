// SPDX-License-Identifier: MIT
// netio_connbench's run: one MultiDestinationSendSocket sending to P receivers in the same
// process (their own Context, so their own loop thread) over loopback, with a skewed access
// pattern: a small hot set that takes most accesses, and random others (work stealing:
// a few neighbours most of the time, anybody now and then). Each access is a burst of
// messages to one destination. The pattern is drawn before the clock starts, from a seed,
// so every run of one configuration replays the same sequence and only the connection
// limit and the policy differ.
#pragma once

#include "common/deadline.hpp"

#include "netio/emulation.hpp"
#include "netio/multi_destination_send_socket.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace netio::tools {

struct ConnbenchPattern {
  std::size_t peers = 64;
  std::size_t hot = 6;          // destinations 0 .. hot-1 are the hot set
  double hot_share = 0.9;       // the share of accesses that go to the hot set
  std::size_t accesses = 5000;  // bursts in all
  std::size_t burst = 200;      // messages per access
  std::uint64_t seed = 1;
};

// Thrown by run_connbench() when Ctrl-C or SIGTERM asked the tool to stop
// (stop_requested(), common/termination.hpp).
struct ConnbenchInterrupted {};

// The destinations of every access, drawn from `pattern` (deterministic for a seed).
std::vector<std::uint32_t> draw_accesses(const ConnbenchPattern& pattern);

struct ConnbenchConfig {
  std::string base = "tcp://127.0.0.1:0";  // where the receivers listen (port 0 each)
  SendMode mode = SendMode::low_latency;
  std::size_t size = 256;           // bytes per message (at least 8: the sequence number)
  std::size_t buffers = 16;         // per connection: low-latency buffers or high-throughput pages
  std::size_t buffer_size = 16384;  // bytes per low-latency buffer or high-throughput page
  std::optional<EmulationConfig> emulate;
  std::optional<int> sender_loop_cpu;  // --cpu's loop CPU: the sending context's loop thread
};

struct ConnbenchResult {
  std::size_t max_connections = 0;  // 0: no limit
  ConnectionPolicy policy = ConnectionPolicy::lru;
  std::uint64_t messages = 0;
  double seconds = 0;  // first send until the last message was received
  double msgs_per_s = 0;
  std::uint64_t out_of_order = 0;  // messages lost, duplicated or reordered (must be 0)
  ConnectionStats connections;
};

// Throws netio::Error when something fails, or Errc::timeout once `deadline` passes.
ConnbenchResult run_connbench(const ConnbenchConfig& config, const std::vector<std::uint32_t>& accesses,
                              std::size_t peers, std::size_t burst, std::size_t max_connections,
                              ConnectionPolicy policy, const Deadline& deadline);

}  // namespace netio::tools
