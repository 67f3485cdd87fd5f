// SPDX-License-Identifier: MIT
#include "bench_sender.hpp"

#include "common/termination.hpp"

#include "netio/error.hpp"
#include "netio/high_throughput_socket.hpp"
#include "netio/low_latency_socket.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

namespace netio::tools {
namespace {

using Clock = std::chrono::steady_clock;

// A wait that timed out ends the run: Errc::timeout saying what was waited for.
void require(bool done, const char* what) {
  if (!done) throw Error(Errc::timeout, fmt::format("{} timed out", what));
}

// Adapters giving both socket kinds the same three calls, so that the hot loop below is
// compiled once per kind (no virtual call per message).
class HighThroughputStream {
 public:
  HighThroughputStream(Context& context, const BenchSenderOptions& options)
      : socket_(context, options.remote, high_throughput_options(options)) {}

  void wait_connected(std::chrono::nanoseconds timeout) { require(socket_.wait_connected(timeout), "connecting"); }
  void send(std::span<const std::byte> message) { socket_.send(message); }
  // The run's last page is sent and completed: the run's time includes it.
  void end_run(std::chrono::nanoseconds timeout) { require(socket_.flush_and_wait(timeout), "flushing"); }
  void end_stream(std::chrono::nanoseconds timeout) { require(socket_.flush_and_wait(timeout), "flushing"); }

 private:
  static HighThroughputSendOptions high_throughput_options(const BenchSenderOptions& options) {
    HighThroughputSendOptions o;
    o.page_size = options.page_size;
    o.page_count = options.page_count;
    o.zero_copy_threshold = options.zero_copy_threshold;
    o.flush_timeout = options.flush_timeout;
    o.key = options.key;
    o.connect_timeout = options.connect_timeout;
    return o;
  }
  HighThroughputSendSocket socket_;
};

// Default options: the send buffers grow to the message size on first use, so a run of
// large messages does not pin buffer_count × size bytes up front.
class LowLatencyStream {
 public:
  LowLatencyStream(Context& context, const BenchSenderOptions& options)
      : context_(context), socket_(context, options.remote, low_latency_options(options)) {}

  void wait_connected(std::chrono::nanoseconds timeout) { require(socket_.wait_connected(timeout), "connecting"); }
  void send(std::span<const std::byte> message) { socket_.send(message); }
  // A run ends when every message was handed to the network.
  void end_run(std::chrono::nanoseconds timeout) { require(socket_.wait_sent(timeout), "sending"); }
  void end_stream(std::chrono::nanoseconds timeout) { require(socket_.wait_sent(timeout), "sending"); }

 private:
  static LowLatencySendOptions low_latency_options(const BenchSenderOptions& options) {
    LowLatencySendOptions o;
    o.key = options.key;
    o.connect_timeout = options.connect_timeout;
    return o;
  }
  Context& context_;
  LowLatencySendSocket socket_;
};

// How many messages to send between looks at the clock and the stop flags: about 64 KiB
// worth, a power of two so the test is a mask. Reading the clock per 8-byte message would
// cost as much as sending it.
std::uint64_t clock_check_mask(std::uint64_t size) {
  const std::uint64_t messages = std::clamp<std::uint64_t>((64 * 1024) / std::max<std::uint64_t>(size, 1), 1, 4096);
  return std::bit_floor(messages) - 1;
}

// Sends one run. `result` is kept up to date even when a send throws, so that a run cut
// by a failure is still reported with what it sent.
template <typename Stream>
void send_run(Stream& stream, const RunKey& key, const BenchSenderOptions& options, const Deadline& deadline,
              ThroughputResult& result, bool& interrupted) {
  DataMessageBuilder builder(key, options.payload);
  result = ThroughputResult{};
  result.size = key.size;
  result.complete = false;
  stream.send(encode_run_begin(key, options.messages_per_size.value_or(0)));

  const std::uint64_t mask = clock_check_mask(key.size);
  const std::uint64_t limit = options.messages_per_size.value_or(max_sequence + 1);
  const auto start = Clock::now();
  const auto end = options.messages_per_size ? Clock::time_point::max() : start + options.duration_per_size;
  auto account = [&](std::uint64_t sent) {
    result.messages = sent;
    result.bytes = sent * key.size;
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  };

  std::uint64_t sequence = 0;
  try {
    for (; sequence < limit; ++sequence) {
      if ((sequence & mask) == 0) {
        if (stop_requested() || deadline.expired()) {
          interrupted = true;
          break;
        }
        if (Clock::now() >= end) break;
      }
      stream.send(builder.stamp(sequence));
    }
    stream.send(encode_run_end(key, sequence));
    stream.end_run(deadline.remaining(std::chrono::seconds(60)));
  } catch (...) {
    account(sequence);
    throw;
  }
  account(sequence);
  result.complete = !interrupted;
}

template <typename Stream>
BenchSenderReport send_stream(Stream& stream, const BenchSenderOptions& options, const Deadline& deadline,
                              const std::function<void(const ThroughputResult&)>& on_run_done) {
  stream.wait_connected(deadline.remaining(connect_wait(options.connect_timeout)));
  BenchSenderReport report;
  std::uint64_t run = 0;
  for (; run < options.sizes.size() && !report.interrupted; ++run) {
    const RunKey key{run, options.sizes[run]};
    ThroughputResult result;
    try {
      send_run(stream, key, options, deadline, result, report.interrupted);
    } catch (const netio::Error& e) {
      report.results.push_back(result);
      report.error = fmt::format("run {} ({} B messages): {}", run, key.size, e.what());
      return report;
    }
    report.results.push_back(result);
    if (on_run_done) on_run_done(result);
  }
  try {
    stream.send(encode_end_of_stream(run));
    stream.end_stream(deadline.remaining(std::chrono::seconds(60)));
  } catch (const netio::Error& e) {
    report.error = fmt::format("sending the end of the stream: {}", e.what());
  }
  return report;
}

}  // namespace

std::vector<std::uint64_t> sweep_sizes() {
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t size = 8; size <= 512 * 1024; size *= 4) sizes.push_back(size);
  sizes.push_back(1024 * 1024);
  return sizes;
}

BenchSenderReport run_bench_sender(Context& context, const BenchSenderOptions& options, const Deadline& deadline,
                                   const std::function<void(const ThroughputResult&)>& on_run_done) {
  if (options.mode == SocketMode::high_throughput) {
    HighThroughputStream stream(context, options);
    return send_stream(stream, options, deadline, on_run_done);
  }
  LowLatencyStream stream(context, options);
  return send_stream(stream, options, deadline, on_run_done);
}

}  // namespace netio::tools
