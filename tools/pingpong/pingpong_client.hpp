// SPDX-License-Identifier: MIT
// netio_pingpong's client: measures round trips of low-latency messages against a
// netio_pingpong --server. Protocol: common/pingpong_protocol.hpp.
#pragma once

#include "common/deadline.hpp"

#include "netio/context.hpp"
#include "netio/endpoint.hpp"
#include "netio/socket_options.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace netio::tools {

struct PingpongClientOptions {
  Endpoint server;
  std::size_t size = 64;
  std::uint64_t iterations = 10000;
  std::uint64_t warmup = 1000;
  // How long the server may take to appear (netio/socket_options.hpp; 0: without end).
  std::chrono::nanoseconds connect_timeout = netio::default_connect_timeout;
  // No reply for this long: the server or the network lost a message; give up.
  std::chrono::nanoseconds stall_timeout = std::chrono::seconds(10);
  // Pongs on a second connection, from the server back to a receive socket of the client,
  // instead of as replies on the ping connection (the shape netio had before replies).
  bool two_connections = false;
  // Authenticate with this key (--key-file): the pings, and with two connections the
  // receive socket of the pongs.
  std::optional<PreSharedKey> key;
};

struct PingpongClientResult {
  std::vector<double> rtt_us;        // measured round trips (warm-up excluded), in order
  std::optional<std::string> error;  // why the run stopped early (not set for a signal)
  bool interrupted = false;          // Ctrl-C / SIGTERM or --timeout
};

// With two connections, the address the client listens on for the pongs: the loopback
// address when the server is on loopback, else the wildcard address of the server's family.
Endpoint reply_endpoint_for(const Endpoint& server);

// Throws netio::Error when the server cannot be reached or does not answer; failures
// after the first reply are returned in `error` with the samples so far.
PingpongClientResult run_pingpong_client(Context& context, const PingpongClientOptions& options,
                                         const Deadline& deadline);

}  // namespace netio::tools
