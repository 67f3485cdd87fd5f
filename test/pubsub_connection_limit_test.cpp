// SPDX-License-Identifier: MIT
// Publish/subscribe under a connection limit (PublishOptions::max_connections), over real
// loopback connections on every back-end: more subscribers than connections, each getting
// every message once and in order while their data connections are torn down and re-made;
// a subscriber leaving while its connection is torn down; a subscriber whose re-connect is
// refused taken for gone; try_publish() skipping (never dropping) a subscriber whose
// connection is being re-made.
#include "control_message.hpp"
#include "netio/low_latency_socket.hpp"
#include "support/pubsub_test.hpp"
#include "support/sanitizers.hpp"
#include "support/test_context.hpp"

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

using netio::ConnectionPolicy;
using netio::ConnectionStats;

namespace {

PublishOptions limited(std::size_t max_connections, ConnectionPolicy policy) {
  PublishOptions o;
  o.identity.name = "p";
  o.max_connections = max_connections;
  o.connection_policy = policy;
  o.pages = {.page_count = 32, .page_size = 16 * 1024, .per_connection = 4};
  o.flush_timeout = 2ms;
  o.send_timeout = 30s;
  o.low_latency_buffers = 16;
  return o;
}

// One subscriber: high-throughput (taken by a draining thread) or low-latency (on its
// context's loop thread), every message checked; tells whether the application ever heard
// of a lost publisher.
struct Subscriber {
  Subscriber(netio::Context& context, std::string name, Mode m) : mode(m) {
    SubscribeOptions o;
    o.identity.name = std::move(name);
    o.on_subscriptions_lost = [this](const Endpoint&) { ++lost; };
    SubscribeSocket::Handler on_message;
    if (mode == Mode::low_latency) {
      on_message = [this](Tag tag, std::span<const std::byte> data, const netio::Peer& publisher) {
        std::lock_guard lock(mutex);
        checker.check(publisher.name(), tag, data);
      };
    }
    socket = std::make_unique<SubscribeSocket>(context, std::move(on_message), o);
  }
  // High-throughput: takes what is there now; returns how many.
  std::size_t drain() {
    if (mode != Mode::high_throughput) return 0;
    return socket->recv_each(4096, 0ms, [&](Tag tag, std::span<const std::byte> data, const netio::Peer& publisher) {
      std::lock_guard lock(mutex);
      checker.check(publisher.name(), tag, data);
      return true;
    });
  }
  std::uint64_t received() {
    std::lock_guard lock(mutex);
    return checker.received;
  }
  bool complete(Tag tag, std::uint64_t count) {
    std::lock_guard lock(mutex);
    return checker.clean() && checker.complete("p", tag, count);
  }

  Mode mode;
  std::mutex mutex;
  StreamChecker checker;
  std::atomic<int> lost{0};
  std::unique_ptr<SubscribeSocket> socket;
};

// Drains every high-throughput subscriber from a thread of its own while it lives.
class Drainer {
 public:
  explicit Drainer(std::vector<Subscriber*> subscribers) : subscribers_(std::move(subscribers)) {
    thread_ = std::thread([this] {
      while (!stop_) {
        std::size_t taken = 0;
        for (Subscriber* s : subscribers_) taken += s->drain();
        if (taken == 0) std::this_thread::sleep_for(100us);
      }
    });
  }
  ~Drainer() {
    stop_ = true;
    thread_.join();
  }
  Drainer(const Drainer&) = delete;
  Drainer& operator=(const Drainer&) = delete;

 private:
  std::vector<Subscriber*> subscribers_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace

TEST_CASE(
    "pub/sub under a connection limit: 12 subscribers through 4 connections per mode, every message once and "
    "in order",
    "[pubsub][connections]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  const auto policy = GENERATE(ConnectionPolicy::lru, ConnectionPolicy::lru_m);
  INFO(base << " " << netio::to_string(policy));
  constexpr std::size_t connection_cap = 4;
  constexpr std::size_t subscriber_count = 12;  // 6 high-throughput, 6 low-latency
  constexpr Tag everyone_tag = 100;
  netio::Context publishing(netio::test::context_options());
  netio::Context subscribing(netio::test::context_options());
  PublishSocket publisher(publishing, Endpoint::parse(base), limited(connection_cap, policy));
  std::vector<std::unique_ptr<Subscriber>> subscribers;
  std::vector<Subscriber*> high_throughput;
  for (std::size_t s = 0; s < subscriber_count; ++s) {
    const Mode mode = s % 2 == 0 ? Mode::high_throughput : Mode::low_latency;
    subscribers.push_back(std::make_unique<Subscriber>(subscribing, fmt::format("s{}", s), mode));
    subscribers.back()->socket->subscribe(publisher.local_endpoint(), s, mode);  // its own tag
    subscribers.back()->socket->subscribe(publisher.local_endpoint(), everyone_tag, mode);
    if (mode == Mode::high_throughput) high_throughput.push_back(subscribers.back().get());
  }
  REQUIRE(publisher.stats().connections == subscriber_count);
  // Acknowledging 6 subscribers of a mode through 4 connections tore some down already.
  CHECK(publisher.connection_stats(Mode::high_throughput).peak_open <= connection_cap);
  CHECK(publisher.connection_stats(Mode::low_latency).peak_open <= connection_cap);

  // Two threads, each publishing bursts to the tags of half the subscribers in turn (each
  // burst needs a connection that another burst's tear-down made room for), the first one
  // also to everyone now and then.
  constexpr std::uint64_t rounds = netio::test::sanitized ? 10 : 30;  // each round tears down
  constexpr std::uint64_t burst_size = 20;
  std::atomic<std::uint64_t> to_everyone{0};
  std::string failure;
  std::mutex failure_mutex;
  {
    Drainer drainer(high_throughput);
    std::vector<std::thread> producers;
    for (std::size_t half = 0; half < 2; ++half) {
      producers.emplace_back([&, half] {
        try {
          for (std::uint64_t round = 0; round < rounds; ++round) {
            for (std::size_t s = half; s < subscriber_count; s += 2) {
              for (std::uint64_t k = 0; k < burst_size; ++k) {
                const std::uint64_t i = round * burst_size + k;
                publisher.publish(s, pubsub_message(s, i, 64 + (i * 13 + s) % 400));
              }
            }
            if (half == 0 && round % 5 == 0)
              publisher.publish(everyone_tag, pubsub_message(everyone_tag, to_everyone++, 100));
          }
        } catch (const netio::Error& e) {
          std::lock_guard lock(failure_mutex);
          failure = e.what();
        }
      });
    }
    for (auto& t : producers) t.join();
    publisher.flush();
    const std::uint64_t each = rounds * burst_size + to_everyone.load();
    for (std::size_t s = 0; s < subscriber_count; ++s) {
      INFO("subscriber " << s);
      CHECK(eventually([&] { return subscribers[s]->received() >= each; }, 60s));
    }
    std::this_thread::sleep_for(50ms);  // anything extra would show up now
  }
  CHECK(failure == "");
  for (std::size_t s = 0; s < subscriber_count; ++s) {
    INFO("subscriber " << s);
    CHECK(subscribers[s]->received() == rounds * burst_size + to_everyone.load());
    CHECK(subscribers[s]->complete(s, rounds * burst_size));
    CHECK(subscribers[s]->complete(everyone_tag, to_everyone.load()));
    CHECK(subscribers[s]->lost == 0);  // a torn-down data connection is nothing to the application
    CHECK(subscribers[s]->socket->stats().subscriptions_lost == 0);
  }
  for (const Mode mode : {Mode::high_throughput, Mode::low_latency}) {
    INFO(netio::to_string(mode));
    const ConnectionStats c = publisher.connection_stats(mode);
    CHECK(c.peak_open == connection_cap);
    CHECK(c.open <= connection_cap);
    CHECK(c.torn_down >= rounds);  // 6 subscribers in turn through 4 connections
    CHECK(c.reopened >= rounds);
    CHECK(c.failed == 0);
  }
  CHECK(publisher.stats().dropped == 0);
  CHECK(publisher.stats().subscribers_lost == 0);
  CHECK(publisher.stats().connections == subscriber_count);  // every subscriber is still subscribed
}

TEST_CASE(
    "pub/sub under a connection limit: a subscriber that leaves while its connection is torn down is removed, "
    "the others lose nothing",
    "[pubsub][connections]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  const auto mode = GENERATE(Mode::high_throughput, Mode::low_latency);
  INFO(base << " " << netio::to_string(mode));
  netio::Context publishing(netio::test::context_options());
  netio::Context subscribing(netio::test::context_options());
  PublishSocket publisher(publishing, Endpoint::parse(base), limited(1, ConnectionPolicy::lru));
  Subscriber a(subscribing, "a", mode);
  Subscriber leaving(subscribing, "leaving", mode);
  a.socket->subscribe(publisher.local_endpoint(), 1, mode);
  leaving.socket->subscribe(publisher.local_endpoint(), 2, mode);
  std::vector<Subscriber*> drained{&a, &leaving};
  auto drainer = std::make_unique<Drainer>(drained);

  std::uint64_t sent_a = 0;
  std::uint64_t sent_leaving = 0;
  for (int round = 0; round < 5; ++round) {
    for (int k = 0; k < 20; ++k) publisher.publish(2, pubsub_message(2, sent_leaving++, 300));
    for (int k = 0; k < 20; ++k) publisher.publish(1, pubsub_message(1, sent_a++, 300));  // tears "leaving" down
  }
  publisher.flush();
  CHECK(eventually([&] { return leaving.received() == sent_leaving; }));
  const ConnectionStats before = publisher.connection_stats(mode);
  CHECK(before.torn_down >= 9);
  CHECK(before.peak_open == 1);

  // Its connection is torn down now (the last burst went to "a"): it goes.
  drainer.reset();
  leaving.socket.reset();
  // Read stats() without pause while it goes: a snapshot that shows its connection gone
  // must show the rest of its removal (its loss counted, its subscription gone). They used
  // to lag: the loss for as long as the aborts took, the subscription for a route rebuild.
  std::optional<netio::pubsub::PublishStats> torn;
  bool settled = false;
  for (const auto deadline = std::chrono::steady_clock::now() + 10s;
       !settled && std::chrono::steady_clock::now() < deadline;) {
    const auto stats = publisher.stats();
    if (stats.connections == 1 && (stats.subscribers_lost != 1 || stats.subscriptions != 1)) torn = stats;
    settled = stats.connections == 1;
  }
  REQUIRE(settled);
  INFO("seen: connections 1, subscribers_lost " << (torn ? torn->subscribers_lost : 1) << ", subscriptions "
                                                << (torn ? torn->subscriptions : 1));
  CHECK_FALSE(torn.has_value());
  CHECK(publisher.stats().subscribers_lost == 1);
  CHECK(publisher.stats().subscriptions == 1);

  // Its tag has nobody now; "a" is served on, and nobody connects to the departed one again.
  drainer = std::make_unique<Drainer>(std::vector<Subscriber*>{&a});
  const auto unrouted = publisher.stats().unrouted;
  for (int k = 0; k < 50; ++k) {
    publisher.publish(2, pubsub_message(2, sent_leaving, 300));
    publisher.publish(1, pubsub_message(1, sent_a++, 300));
  }
  publisher.flush();
  CHECK(eventually([&] { return a.received() == sent_a; }));
  drainer.reset();
  CHECK(publisher.stats().unrouted == unrouted + 50);
  CHECK(a.complete(1, sent_a));
  CHECK(leaving.complete(2, sent_leaving));  // everything up to its leaving
  const ConnectionStats after = publisher.connection_stats(mode);
  CHECK(after.failed == 0);
  CHECK(after.opened == before.opened);  // "a" kept its connection; nothing was re-made for the departed
  CHECK(after.peak_open == 1);
}

TEST_CASE("pub/sub under a connection limit: a subscriber whose re-connect is refused is gone, the others served on",
          "[pubsub][connections]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  INFO(base.to_string());
  namespace detail = netio::pubsub::detail;
  netio::Context publishing(netio::test::context_options());
  netio::Context subscribing(netio::test::context_options());
  PublishSocket publisher(publishing, base, limited(1, ConnectionPolicy::lru));
  Subscriber steady(subscribing, "steady", Mode::low_latency);
  steady.socket->subscribe(publisher.local_endpoint(), 1, Mode::low_latency);

  // A subscriber made by hand: its control connection stays while its data socket goes.
  std::atomic<std::uint64_t> doomed_received{0};
  auto doomed_data = std::make_unique<netio::LowLatencyReceiveSocket>(
      subscribing, base, [&](std::span<const std::byte>, const netio::Peer&) { ++doomed_received; });
  auto control = std::make_unique<netio::LowLatencySendSocket>(subscribing, publisher.local_endpoint());
  detail::SubscriptionRequest request;
  request.mode = Mode::low_latency;
  request.backpressure = Backpressure::block;
  request.request_id = 1;
  request.tags = {2};
  request.data_endpoint = doomed_data->local_endpoint().to_string();
  control->send(detail::encode(request));
  const auto reply = control->recv_reply(30s);
  REQUIRE(reply);
  REQUIRE(std::get<detail::SubscriptionAnswer>(detail::decode_reply(reply->bytes())).accepted);

  std::uint64_t sent_steady = 0;
  publisher.publish(2, pubsub_message(2, 0, 100));
  for (int k = 0; k < 10; ++k)
    publisher.publish(1, pubsub_message(1, sent_steady++, 100));  // tears the doomed one down
  CHECK(eventually([&] { return doomed_received.load() == 1 && steady.received() == sent_steady; }));
  CHECK(publisher.connection_stats(Mode::low_latency).torn_down >= 1);

  // Its data socket goes; its control connection stays. The next messages for it need a
  // re-connect, which is refused: it is gone, skipped, and publish() does not fail or wait.
  doomed_data.reset();
  std::string failure;
  const auto started = std::chrono::steady_clock::now();
  try {
    for (int k = 0; k < 20; ++k) {
      publisher.publish(2, pubsub_message(2, 1 + k, 100));
      publisher.publish(1, pubsub_message(1, sent_steady++, 100));
    }
  } catch (const netio::Error& e) {
    failure = e.what();
  }
  CHECK(failure == "");
  CHECK(std::chrono::steady_clock::now() - started < 20s);  // not a send_timeout per message
  CHECK(eventually([&] { return steady.received() == sent_steady; }));
  CHECK(steady.complete(1, sent_steady));
  const ConnectionStats c = publisher.connection_stats(Mode::low_latency);
  CHECK(c.failed >= 1);
  CHECK(c.peak_open == 1);
  CHECK(publisher.stats().subscriptions == 2);  // until its control connection goes

  control.reset();  // now it goes for good
  CHECK(eventually([&] { return publisher.stats().connections == 1; }));
  CHECK(publisher.stats().subscriptions == 1);
  for (int k = 0; k < 10; ++k) publisher.publish(1, pubsub_message(1, sent_steady++, 100));
  CHECK(eventually([&] { return steady.received() == sent_steady; }));
  CHECK(steady.complete(1, sent_steady));
  CHECK(steady.lost == 0);
}

TEST_CASE(
    "pub/sub under a connection limit: try_publish skips a subscriber whose connection is being re-made, and "
    "the retry reaches it once",
    "[pubsub][connections]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  INFO(base);
  netio::Context publishing(netio::test::context_options());
  netio::Context subscribing(netio::test::context_options());
  PublishSocket publisher(publishing, Endpoint::parse(base), limited(1, ConnectionPolicy::lru_m));
  Subscriber blocking(subscribing, "blocking", Mode::high_throughput);
  Subscriber dropping(subscribing, "dropping", Mode::high_throughput);
  blocking.socket->subscribe(publisher.local_endpoint(), 5, Mode::high_throughput, Backpressure::block);
  dropping.socket->subscribe(publisher.local_endpoint(), 5, Mode::high_throughput, Backpressure::drop);
  Drainer drainer({&blocking, &dropping});

  // Every message goes to both through one connection: each attempt can reach one of them,
  // the other's connection is being made; a retry with the same progress reaches only it.
  constexpr std::uint64_t message_count = netio::test::sanitized ? 40 : 100;
  std::uint64_t partial = 0;
  std::set<std::string> skipped;
  for (std::uint64_t i = 0; i < message_count; ++i) {
    const auto message = pubsub_message(5, i, 200);
    netio::pubsub::PublishProgress progress;
    int attempts = 0;
    while (!publisher.try_publish(5, message, progress) && ++attempts < 100'000) {
      ++partial;
      for (const auto& s : progress.skipped()) skipped.insert(s.identity.name);
      std::this_thread::sleep_for(50us);
    }
    REQUIRE(progress.complete());
  }
  publisher.flush();
  CHECK(eventually([&] { return blocking.received() == message_count && dropping.received() == message_count; }));
  CHECK(partial >= message_count);  // at least one re-connect per message
  CHECK(skipped == std::set<std::string>{"blocking", "dropping"});
  CHECK(blocking.complete(5, message_count));  // no duplicate, no gap, in order
  CHECK(dropping.complete(5, message_count));  // skipped while re-connecting, never dropped
  CHECK(publisher.stats().dropped == 0);
  CHECK(publisher.stats().deliveries == 2 * message_count);
  const ConnectionStats c = publisher.connection_stats(Mode::high_throughput);
  CHECK(c.peak_open == 1);
  CHECK(c.torn_down >= 2 * message_count - 2);
}
