// SPDX-License-Identifier: MIT
// The sending side of the throughput benchmark: connects to netio_recv and sends one run
// per message size in the format of common/bench_message.hpp, ending with END_OF_STREAM.
#pragma once

#include "common/bench_message.hpp"
#include "common/deadline.hpp"
#include "common/throughput_result.hpp"

#include "netio/context.hpp"
#include "netio/endpoint.hpp"
#include "netio/high_throughput_socket.hpp"
#include "netio/socket_options.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace netio::tools {

enum class SocketMode { high_throughput, low_latency };

// --sweep: 8 B to 512 KiB in powers of four, then 1 MiB (the default page size).
std::vector<std::uint64_t> sweep_sizes();

struct BenchSenderOptions {
  Endpoint remote;
  SocketMode mode = SocketMode::high_throughput;
  std::vector<std::uint64_t> sizes;
  // Per size: a count, or else a duration.
  std::optional<std::uint64_t> messages_per_size;
  std::chrono::nanoseconds duration_per_size = std::chrono::seconds(2);
  PayloadMode payload = PayloadMode::fixed_per_run;
  // High-throughput only.
  std::uint64_t page_size = 1024 * 1024;
  std::uint64_t page_count = netio::HighThroughputSendOptions{}.page_count;
  std::optional<std::uint64_t> zero_copy_threshold;  // unset: the socket's default
  std::chrono::nanoseconds flush_timeout = std::chrono::seconds(2);
  // How long the receiver may take to appear (netio/socket_options.hpp; 0: without end).
  std::chrono::nanoseconds connect_timeout = netio::default_connect_timeout;
  std::optional<PreSharedKey> key;  // --key-file
};

struct BenchSenderReport {
  std::vector<ThroughputResult> results;  // complete runs, and the one cut short if any
  std::optional<std::string> error;       // why the stream stopped early (not set on Ctrl-C)
  bool interrupted = false;               // Ctrl-C / SIGTERM or --timeout
};

// Runs every size in turn on the calling thread. `on_run_done` is called after each run
// (for progress output). Connection failures before the first run throw netio::Error;
// failures later end the stream and are reported in `error` with the results so far.
BenchSenderReport run_bench_sender(Context& context, const BenchSenderOptions& options, const Deadline& deadline,
                                   const std::function<void(const ThroughputResult&)>& on_run_done);

}  // namespace netio::tools
