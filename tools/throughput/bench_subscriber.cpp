// SPDX-License-Identifier: MIT
#include "bench_subscriber.hpp"
#include "gone_watch.hpp"

#include "common/cpu_affinity.hpp"
#include "common/run_tracker.hpp"
#include "common/termination.hpp"

#include "netio/pubsub/subscribe_socket.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <thread>

namespace netio::tools {
namespace {

using Clock = std::chrono::steady_clock;

// One RunTracker per tag, made before the first message and never changed after: the
// consumer (recv() thread or loop-thread callback) looks them up without a lock.
class TagTrackers {
 public:
  TagTrackers(const std::vector<pubsub::Tag>& tags, bool verify) {
    for (const auto tag : tags) trackers_.emplace(tag, std::make_unique<RunTracker>(verify));
  }
  // False when the tag is none of ours (a publisher bug): counted as stray.
  bool feed(pubsub::Tag tag, std::span<const std::byte> data) {
    const auto it = trackers_.find(tag);
    if (it == trackers_.end()) {
      foreign_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    it->second->on_message(data);
    return true;
  }
  bool all_ended() const {
    return std::all_of(trackers_.begin(), trackers_.end(), [](const auto& t) { return t.second->end_of_stream(); });
  }
  std::uint64_t live_messages() const {
    return sum([](const RunTracker& t) { return t.live_messages(); });
  }
  std::uint64_t live_bytes() const {
    return sum([](const RunTracker& t) { return t.live_bytes(); });
  }
  std::uint64_t live_size() const { return trackers_.begin()->second->live_size(); }
  std::optional<Clock::time_point> first_message_at() const {
    std::optional<Clock::time_point> first;
    for (const auto& [tag, t] : trackers_) {
      if (const auto at = t->first_message_at(); at && (!first || *at < *first)) first = at;
    }
    return first;
  }
  std::map<pubsub::Tag, std::unique_ptr<RunTracker>>& all() { return trackers_; }
  std::uint64_t foreign() const { return foreign_.load(std::memory_order_relaxed); }

 private:
  template <typename Get>
  std::uint64_t sum(Get get) const {
    std::uint64_t total = 0;
    for (const auto& [tag, t] : trackers_) total += get(*t);
    return total;
  }
  std::map<pubsub::Tag, std::unique_ptr<RunTracker>> trackers_;
  std::atomic<std::uint64_t> foreign_{0};
};

}  // namespace

BenchSubscriberReport run_bench_subscriber(Context& context, const BenchSubscriberOptions& options,
                                           const Deadline& deadline, const BenchReceiverCallbacks& callbacks) {
  TagTrackers trackers(options.tags, options.verify);
  std::atomic<bool> publisher_gone{false};
  pubsub::SubscribeOptions subscribe_options;
  subscribe_options.identity.name = "netio_recv";
  subscribe_options.admission = options.admission;
  subscribe_options.connect_timeout = options.connect_timeout;
  subscribe_options.on_subscriptions_lost = [&](const Endpoint&) { publisher_gone = true; };
  // The loop thread is the consumer in low-latency mode (a message per callback).
  auto on_message = [&](pubsub::Tag tag, std::span<const std::byte> data, const Peer&) { trackers.feed(tag, data); };
  auto subscriber_socket = std::make_unique<pubsub::SubscribeSocket>(context, on_message, subscribe_options);
  pubsub::SubscribeSocket& subscriber = *subscriber_socket;
  subscriber.subscribe(options.publisher, options.tags, options.mode);  // one request and acknowledgement
  if (callbacks.on_listening) callbacks.on_listening(options.publisher);

  std::atomic<bool> stop_consumer{false};
  std::thread consumer;
  if (options.mode == pubsub::Mode::high_throughput) {
    consumer = std::thread([&] {
      if (options.consumer_cpu) pin_current_thread(*options.consumer_cpu);
      while (!stop_consumer.load(std::memory_order_relaxed)) {
        subscriber.recv_each(4096, std::chrono::milliseconds(50),
                             [&](pubsub::Tag tag, std::span<const std::byte> data, const Peer&) {
                               trackers.feed(tag, data);
                               return true;
                             });
      }
    });
  }

  BenchSubscriberReport report;
  auto last_report = Clock::now();
  std::uint64_t last_messages = 0, last_bytes = 0;
  std::optional<Clock::time_point> gone_at;  // when the loop first saw the publisher gone
  GoneWatch gone_watch;
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const auto now = Clock::now();
    const auto first = trackers.first_message_at();
    if (trackers.all_ended()) {
      report.end = ReceiveEnd::end_of_stream;
      break;
    }
    if (options.max_messages && trackers.live_messages() >= *options.max_messages) {
      report.end = ReceiveEnd::message_limit;
      break;
    }
    if (options.duration && first && now - *first >= *options.duration) {
      report.end = ReceiveEnd::time_limit;
      break;
    }
    if (stop_requested()) {
      report.end = ReceiveEnd::signal;
      break;
    }
    if (deadline.expired()) {
      report.end = ReceiveEnd::timeout;
      break;
    }
    if (publisher_gone) {
      if (!gone_at) gone_at = now;
      if (gone_watch.quiet(trackers.live_messages(), *gone_at, now, options.publisher_gone_grace)) {
        report.end = ReceiveEnd::sender_gone;
        break;
      }
    }
    if (first && callbacks.on_interval && options.interval > std::chrono::nanoseconds::zero() &&
        now - last_report >= options.interval) {
      const auto messages = trackers.live_messages();
      const auto bytes = trackers.live_bytes();
      auto since = [&](Clock::time_point t) { return std::chrono::duration<double>(t - *first).count(); };
      callbacks.on_interval({since(std::max(last_report, *first)), since(now), trackers.live_size(),
                             messages - last_messages, bytes - last_bytes});
      last_report = now;
      last_messages = messages;
      last_bytes = bytes;
    }
  }
  stop_consumer = true;
  if (consumer.joinable()) consumer.join();
  report.dropped = subscriber.stats().dropped;
  // No callback feeds a tracker once the socket is gone (low-latency mode's loop thread).
  subscriber_socket.reset();
  report.stray_messages = trackers.foreign();
  for (auto& [tag, tracker] : trackers.all()) {
    std::vector<ThroughputResult> results = tracker->finish();
    report.stray_messages += tracker->stray_messages();
    for (const auto& a : tracker->anomalies()) report.anomalies.push_back("tag " + std::to_string(tag) + ": " + a);
    report.per_tag.push_back({tag, std::move(results)});
  }
  std::vector<std::vector<ThroughputResult>> streams;
  for (const auto& tag : report.per_tag) streams.push_back(tag.results);
  report.merged = merge_concurrent_results(streams);
  return report;
}

}  // namespace netio::tools
