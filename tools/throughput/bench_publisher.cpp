// SPDX-License-Identifier: MIT
#include "bench_publisher.hpp"

#include "common/bench_message.hpp"
#include "common/termination.hpp"

#include "netio/error.hpp"
#include "netio/pubsub/publish_socket.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <thread>

namespace netio::tools {
namespace {

using Clock = std::chrono::steady_clock;

void publish_to_all(pubsub::PublishSocket& publisher, const std::vector<pubsub::Tag>& tags,
                    std::span<const std::byte> frame) {
  for (const auto tag : tags) publisher.publish(tag, frame);
}

// Waits for the publisher to have sent and completed everything: flush, then wait until
// its pages are back in the pool.
void drain(pubsub::PublishSocket& publisher, const Deadline& deadline) {
  publisher.flush();
  const auto until = Clock::now() + deadline.remaining(std::chrono::seconds(60));
  while (publisher.pages().pages_in_use() > 0 && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
}

void publish_run(pubsub::PublishSocket& socket, const RunKey& key, const BenchPublisherOptions& options,
                 const Deadline& deadline, ThroughputResult& result, bool& interrupted) {
  auto publisher = socket.publisher();  // this thread's handle: no lock on the routes per message
  const auto& tags = options.tags;
  DataMessageBuilder builder(key, options.payload);
  result = ThroughputResult{};
  result.size = key.size;
  result.complete = false;
  const std::uint64_t planned = options.messages_per_size.value_or(0);
  // Each tag's own planned count: round-robin gives the first tags one more.
  for (std::size_t t = 0; t < tags.size(); ++t) {
    const std::uint64_t per_tag = planned == 0 ? 0 : planned / tags.size() + (t < planned % tags.size() ? 1 : 0);
    publisher.publish(tags[t], encode_run_begin(key, per_tag));
  }
  const std::uint64_t mask =
      std::bit_floor(std::clamp<std::uint64_t>((64 * 1024) / std::max<std::uint64_t>(key.size, 1), 1, 4096)) - 1;
  const std::uint64_t limit = options.messages_per_size.value_or(max_sequence + 1);
  const auto start = Clock::now();
  const auto end = options.messages_per_size ? Clock::time_point::max() : start + options.duration_per_size;
  std::vector<std::uint64_t> sequences(tags.size(), 0);
  std::uint64_t sent = 0;
  auto account = [&] {
    result.messages = sent;
    result.bytes = sent * key.size;
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  };
  try {
    std::size_t t = 0;
    for (; sent < limit; ++sent) {
      if ((sent & mask) == 0) {
        if (stop_requested() || deadline.expired()) {
          interrupted = true;
          break;
        }
        if (Clock::now() >= end) break;
        // Publishing on to nobody would count messages no subscriber got.
        if (socket.stats().subscribers == 0) {
          throw Error(Errc::disconnected,
                      fmt::format("{}: every subscriber went away after {} messages of this run; nothing published "
                                  "since reached anybody, so the run ends here",
                                  socket.local_endpoint().to_string(), sent));
        }
      }
      publisher.publish(tags[t], builder.stamp(sequences[t]++));
      if (++t == tags.size()) t = 0;
    }
    for (std::size_t i = 0; i < tags.size(); ++i) publisher.publish(tags[i], encode_run_end(key, sequences[i]));
    drain(socket, deadline);
  } catch (...) {
    account();
    throw;
  }
  account();
  result.complete = !interrupted;
}

}  // namespace

BenchSenderReport run_bench_publisher(Context& context, const BenchPublisherOptions& options, const Deadline& deadline,
                                      const BenchPublisherCallbacks& callbacks) {
  pubsub::PublishOptions publish_options;
  publish_options.identity.name = "netio_throughput";
  publish_options.pages = {.page_count = options.page_count, .page_size = options.page_size, .per_connection = 0};
  publish_options.flush_timeout = options.flush_timeout;
  publish_options.admission = options.admission;
  publish_options.max_connections = options.max_connections;
  publish_options.connection_policy = options.policy;
  pubsub::PublishSocket publisher(context, options.local, publish_options);
  if (callbacks.on_listening) callbacks.on_listening(publisher.local_endpoint());

  // Nothing is published before K subscribers are in: each subscribes to all its tags with
  // one request, so a data connection whose request is acknowledged carries every tag of
  // its subscriber.
  BenchSenderReport report;
  const auto until = Clock::now() + deadline.remaining(options.subscribe_timeout);
  while (!publisher.wait_for_subscribers(options.subscribers, std::chrono::milliseconds(50))) {
    if (stop_requested()) {
      report.interrupted = true;  // nothing published: no results
      return report;
    }
    if (Clock::now() >= until) {
      throw Error(Errc::timeout, fmt::format("{}: {} of {} subscribers came", publisher.local_endpoint().to_string(),
                                             publisher.stats().subscribers, options.subscribers));
    }
  }

  std::uint64_t run = 0;
  for (; run < options.sizes.size() && !report.interrupted; ++run) {
    const RunKey key{run, options.sizes[run]};
    ThroughputResult result;
    try {
      publish_run(publisher, key, options, deadline, result, report.interrupted);
    } catch (const Error& e) {
      report.results.push_back(result);
      report.error = fmt::format("run {} ({} B messages): {}", run, key.size, e.what());
      return report;
    }
    report.results.push_back(result);
    if (callbacks.on_run_done) callbacks.on_run_done(result);
  }
  try {
    publish_to_all(publisher, options.tags, encode_end_of_stream(run));
    drain(publisher, deadline);
  } catch (const Error& e) {
    report.error = fmt::format("publishing the end of the stream: {}", e.what());
  }
  if (options.max_connections != 0) {
    for (const auto mode : {pubsub::Mode::low_latency, pubsub::Mode::high_throughput}) {
      const ConnectionStats c = publisher.connection_stats(mode);
      if (c.opened == 0) continue;
      fmt::print(stderr,
                 "netio_throughput: {} data connections: {} opened ({} re-opened), {} torn down, peak {} open of {}\n",
                 netio::to_string(mode), c.opened, c.reopened, c.torn_down, c.peak_open, options.max_connections);
    }
  }
  return report;
}

}  // namespace netio::tools
