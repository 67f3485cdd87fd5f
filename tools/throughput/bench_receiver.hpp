// SPDX-License-Identifier: MIT
// The receiving side of the throughput benchmark: listens, feeds every message to the
// RunTracker (common/run_tracker.hpp) of the connection it came on (one stream per
// connection: several senders at once are counted and verified each on its own) and
// watches for the end: `senders` streams ended (END_OF_STREAM), a limit (-n, -t), Ctrl-C,
// --timeout, or streams whose senders disconnected without ending them. A connection that
// never began a run (a stranger, a port scanner, a peer that connects and leaves) is no
// stream: it neither ends nor fails the run; its messages are only counted, and its control
// messages (an END_OF_STREAM included) are ignored, logged once and counted.
#pragma once

#include "bench_sender.hpp"  // SocketMode

#include "common/deadline.hpp"
#include "common/throughput_result.hpp"
#include "netio/socket_options.hpp"

#include "netio/context.hpp"
#include "netio/endpoint.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace netio::tools {

struct BenchReceiverOptions {
  Endpoint local;
  SocketMode mode = SocketMode::high_throughput;
  bool verify = false;
  std::optional<std::uint64_t> max_messages;                    // -n: data messages over all runs
  std::optional<std::chrono::nanoseconds> duration;             // -t: counted from the first message
  std::chrono::nanoseconds interval = std::chrono::seconds(1);  // 0: no interval reports
  // How long a stream may stay silent after its last sender disconnected before the
  // receiver gives up waiting for END_OF_STREAM.
  std::chrono::nanoseconds sender_gone_grace = std::chrono::seconds(1);
  std::optional<int> consumer_cpu;  // --mode ht: the thread calling recv()
  AdmissionOptions admission;       // --allow, --key-file
  std::size_t senders = 1;          // --senders: the run ends when this many streams have ended
};

// One line of the iperf-like report: what arrived between `from` and `to` (seconds since
// the first message).
struct IntervalReport {
  double from = 0;
  double to = 0;
  std::uint64_t size = 0;  // the size of the run being received at the end of the interval
  std::uint64_t messages = 0;
  std::uint64_t bytes = 0;
};

enum class ReceiveEnd { end_of_stream, message_limit, time_limit, signal, timeout, sender_gone };

// One sender's stream: its connection's peer ("NAME (ADDRESS)") and its runs.
struct StreamResults {
  std::string peer;
  std::vector<ThroughputResult> results;
  bool ended = false;  // it sent END_OF_STREAM
};

struct BenchReceiverReport {
  std::vector<StreamResults> per_stream;  // in the order the streams began
  // Per run, over all streams (merge_concurrent_results): what JSON and the table show.
  std::vector<ThroughputResult> results;
  std::uint64_t stray_messages = 0;  // outside any run, in streams
  // From connections that never began a run (not netio_throughput): ignored, counted.
  std::uint64_t stranger_messages = 0;
  // Control messages from such connections, ignored (RunTracker::ignored_controls).
  std::uint64_t stranger_controls = 0;
  // Streams that began and did not end properly (no END_OF_STREAM, or a run cut inside it)
  // although the run ended on END_OF_STREAM: "NAME (ADDRESS)" of each. Empty when the run
  // ended otherwise (-n, -t, a signal, --timeout and sender_gone say so themselves).
  std::vector<std::string> truncated_streams;
  std::vector<std::string> anomalies;
  ReceiveEnd end = ReceiveEnd::end_of_stream;
};

struct BenchReceiverCallbacks {
  std::function<void(const Endpoint&)> on_listening;  // the bound endpoint (real port)
  std::function<void(const IntervalReport&)> on_interval;
};

// Throws netio::Error when the endpoint cannot be bound.
BenchReceiverReport run_bench_receiver(Context& context, const BenchReceiverOptions& options, const Deadline& deadline,
                                       const BenchReceiverCallbacks& callbacks);

}  // namespace netio::tools
