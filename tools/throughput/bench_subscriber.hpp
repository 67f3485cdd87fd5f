// SPDX-License-Identifier: MIT
// The subscribing side of the pub/sub benchmark (netio_recv --subscribe): subscribes to the
// tags on the publisher, feeds each tag's messages to a RunTracker of its own (every tag is
// a stream of its own: per-tag sequence numbers, verification per tag) and ends when every
// tag's stream ended, or at a limit, Ctrl-C, --timeout, or when the publisher went away
// (and what it sent before has been read).
#pragma once

#include "bench_receiver.hpp"  // IntervalReport, ReceiveEnd, BenchReceiverCallbacks

#include "netio/pubsub/subscription.hpp"
#include "netio/socket_options.hpp"

#include <utility>
#include <vector>

namespace netio::tools {

struct BenchSubscriberOptions {
  Endpoint publisher;
  std::vector<pubsub::Tag> tags;
  pubsub::Mode mode = pubsub::Mode::high_throughput;
  bool verify = false;
  std::optional<std::uint64_t> max_messages;         // -n: data messages over all tags
  std::optional<std::chrono::nanoseconds> duration;  // -t: counted from the first message
  std::chrono::nanoseconds interval = std::chrono::seconds(1);
  // How long the streams may stay silent after the publisher went away before the subscriber
  // gives up waiting for their END_OF_STREAM (what it sent before leaving is still read).
  std::chrono::nanoseconds publisher_gone_grace = std::chrono::seconds(1);
  std::optional<int> consumer_cpu;  // --mode ht: the thread calling recv()
  AdmissionOptions admission;       // which publishers may connect back (--allow), the key (--key-file)
  std::chrono::nanoseconds connect_timeout = default_connect_timeout;  // for the publisher to appear
};

struct TagResults {
  pubsub::Tag tag = 0;
  std::vector<ThroughputResult> results;
};

struct BenchSubscriberReport {
  std::vector<TagResults> per_tag;
  // Per run, over all tags: messages and bytes summed, the longest time, verification summed.
  std::vector<ThroughputResult> merged;
  std::uint64_t stray_messages = 0;
  std::uint64_t dropped = 0;  // as the publisher reported (drop back-pressure)
  std::vector<std::string> anomalies;
  ReceiveEnd end = ReceiveEnd::end_of_stream;
};

// Throws netio::Error when the subscription fails (refused, no publisher, timeout).
BenchSubscriberReport run_bench_subscriber(Context& context, const BenchSubscriberOptions& options,
                                           const Deadline& deadline, const BenchReceiverCallbacks& callbacks);

}  // namespace netio::tools
