// SPDX-License-Identifier: MIT
// The publishing side of the pub/sub benchmark (netio_throughput --publish): binds a
// PublishSocket, waits until K subscribers are in (so nothing is published before their
// subscriptions are acknowledged), then publishes one run per message size round-robin over
// the tags, every tag a stream of its own in the format of common/bench_message.hpp (its
// own sequence numbers; the run's control frames and END_OF_STREAM go to every tag).
#pragma once

#include "bench_sender.hpp"  // SocketMode, the report shapes
#include "common/deadline.hpp"
#include "common/throughput_result.hpp"

#include "netio/context.hpp"
#include "netio/endpoint.hpp"
#include "netio/pubsub/subscription.hpp"
#include "netio/socket_options.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace netio::tools {

struct BenchPublisherOptions {
  Endpoint local;
  std::vector<pubsub::Tag> tags;
  std::uint64_t subscribers = 1;  // data connections to wait for before the first message
  std::vector<std::uint64_t> sizes;
  std::optional<std::uint64_t> messages_per_size;  // over all tags
  std::chrono::nanoseconds duration_per_size = std::chrono::seconds(2);
  PayloadMode payload = PayloadMode::fixed_per_run;
  std::uint64_t page_size = 1024 * 1024;
  std::uint64_t page_count = 64;  // the shared pool
  std::chrono::nanoseconds flush_timeout = std::chrono::seconds(2);
  std::chrono::nanoseconds subscribe_timeout = std::chrono::seconds(60);
  AdmissionOptions admission;       // who may subscribe (--allow, --key-file)
  std::size_t max_connections = 0;  // data connections open at once per mode; 0: no limit
  ConnectionPolicy policy = ConnectionPolicy::lru;
};

struct BenchPublisherCallbacks {
  std::function<void(const Endpoint&)> on_listening;  // the bound endpoint (real port)
  std::function<void(const ThroughputResult&)> on_run_done;
};

// Throws netio::Error when the endpoint cannot be bound or the subscribers do not come
// within subscribe_timeout; failures later end the stream, reported in `error`.
BenchSenderReport run_bench_publisher(Context& context, const BenchPublisherOptions& options, const Deadline& deadline,
                                      const BenchPublisherCallbacks& callbacks);

}  // namespace netio::tools
