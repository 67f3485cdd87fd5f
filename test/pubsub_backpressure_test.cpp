// SPDX-License-Identifier: MIT
// Back-pressure per subscription, over real loopback connections on every back-end: a
// stalled subscriber under `block` holds the publisher and loses nothing; under `drop` it
// costs the others nothing and its drops are counted on both sides; try_publish() retries
// reach only the subscribers that missed the message, never twice.
#include "netio/metrics.hpp"
#include "support/pubsub_test.hpp"
#include "support/test_context.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <set>
#include <string>
#include <thread>

namespace {

// A small pool, so that a stalled subscriber fills its share quickly.
PublishOptions small_pool(std::string name) {
  PublishOptions o;
  o.identity.name = std::move(name);
  o.pages = {.page_count = 16, .page_size = 16 * 1024, .per_connection = 4};
  o.flush_timeout = 2ms;
  o.send_timeout = 60s;
  o.drop_report_interval = 10ms;
  return o;
}

SubscribeOptions stalling(std::string name) {
  SubscribeOptions o;
  o.identity.name = std::move(name);
  o.page_credits = 2;  // the receiver stops reading soon when nobody takes messages
  return o;
}

std::uint64_t drain_all(SubscribeSocket& s, StreamChecker& checker, std::chrono::milliseconds quiet) {
  std::uint64_t got = 0;
  while (auto m = s.recv(quiet)) {
    checker.check(m->publisher().name(), m->tag(), m->data());
    ++got;
  }
  return got;
}

}  // namespace

TEST_CASE("pub/sub back-pressure: a stalled subscriber under block holds the publisher and loses nothing", "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  netio::Context context(netio::test::context_options());
  PublishSocket publisher(context, Endpoint::parse(base), small_pool("p"));
  SubscribeSocket stalled(context, stalling("stalled"));
  stalled.subscribe(publisher.local_endpoint(), 1, Mode::high_throughput, Backpressure::block);

  constexpr std::uint64_t count = 20'000;  // 20 MB: far more than the pool, the credits and the kernel buffers
  std::atomic<std::uint64_t> published{0};
  std::thread producer([&] {
    for (std::uint64_t i = 0; i < count; ++i) {
      publisher.publish(1, pubsub_message(1, i, 1000));
      published.store(i + 1);
    }
    publisher.flush();
  });
  // The publisher stops: its count stays put while nobody reads.
  std::uint64_t before = 0;
  bool held = false;
  for (int i = 0; i < 100 && !held; ++i) {
    before = published.load();
    std::this_thread::sleep_for(100ms);
    held = published.load() == before && before < count;
  }
  CHECK(held);
  CHECK(publisher.pages().pages_in_use() <= 4);  // its share of the pool, no more

  StreamChecker checker;
  std::uint64_t got = 0;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (got < count && std::chrono::steady_clock::now() < deadline) {
    if (auto m = stalled.recv(100ms)) {
      checker.check(m->publisher().name(), m->tag(), m->data());
      ++got;
    }
  }
  producer.join();
  CHECK(got == count);
  CHECK(checker.complete("p", 1, count));
  CHECK(publisher.stats().dropped == 0);
}

TEST_CASE(
    "pub/sub back-pressure: under drop a stalled subscriber costs the others nothing, drops are counted on both sides",
    "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  netio::Context context(netio::test::context_options());
  PublishSocket publisher(context, Endpoint::parse(base), small_pool("p"));
  SubscribeSocket stalled(context, stalling("stalled"));
  stalled.subscribe(publisher.local_endpoint(), 1, Mode::high_throughput, Backpressure::drop);
  SubscribeSocket healthy(context);
  healthy.subscribe(publisher.local_endpoint(), 1, Mode::high_throughput, Backpressure::block);

  constexpr std::uint64_t count = 20'000;
  StreamChecker healthy_checker;
  std::uint64_t healthy_got = 0;
  std::thread consumer([&] {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (healthy_got < count && std::chrono::steady_clock::now() < deadline) {
      if (auto m = healthy.recv(100ms)) {
        healthy_checker.check(m->publisher().name(), m->tag(), m->data());
        ++healthy_got;
      }
    }
  });
  std::string failure;
  try {
    for (std::uint64_t i = 0; i < count; ++i) publisher.publish(1, pubsub_message(1, i, 1000));
    publisher.flush();
  } catch (const netio::Error& e) {
    failure = e.what();
  }
  consumer.join();
  CHECK(failure == "");
  CHECK(healthy_got == count);
  CHECK(healthy_checker.complete("p", 1, count));

  const auto dropped = publisher.stats().dropped;
  CHECK(dropped > 0);
  // The stalled one gets what it could hold, in order; the rest was dropped and reported.
  StreamChecker stalled_checker;
  const auto stalled_got = drain_all(stalled, stalled_checker, 500ms);
  CHECK(stalled_checker.clean());
  CHECK(stalled_got + dropped == count);
  CHECK(eventually([&] { return stalled.stats().dropped == dropped; }));
  // And by tag, as metrics: where the publisher dropped, and as the subscriber was told.
  auto tag_one = [&](const char* name) {
    double sum = 0;
    for (const auto& m : context.metrics().collect()) {
      const std::pair<std::string, std::string> tag("tag", "1");
      if (m.name == name && std::find(m.labels.begin(), m.labels.end(), tag) != m.labels.end()) sum += m.value;
    }
    return sum;
  };
  CHECK(tag_one("netio_publish_tag_dropped_total") == double(dropped));
  CHECK(eventually([&] { return tag_one("netio_subscribe_tag_dropped_total") == double(dropped); }));
}

TEST_CASE("pub/sub: try_publish retries reach only the subscribers that missed the message, never twice", "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  const bool through_handle = GENERATE(false, true);  // the socket's try_publish() or a Publisher's
  INFO((through_handle ? "through a Publisher" : "through the socket"));
  netio::Context context(netio::test::context_options());
  PublishSocket publisher(context, Endpoint::parse(base), small_pool("p"));
  SubscribeSocket slow(context, stalling("slow"));
  slow.subscribe(publisher.local_endpoint(), 3, Mode::high_throughput, Backpressure::block);
  SubscribeSocket fast(context, stalling("fast"));
  fast.subscribe(publisher.local_endpoint(), 3, Mode::high_throughput, Backpressure::block);

  constexpr std::uint64_t count = 5'000;
  std::atomic<bool> slow_reading{false};
  StreamChecker fast_checker, slow_checker;
  std::uint64_t fast_got = 0, slow_got = 0;
  std::atomic<bool> done{false};
  // Once everything is published, what is still on its way may take a while on a loaded
  // machine: the consumers give up after 5 s without a message, not after one short wait.
  std::thread fast_consumer([&] {
    while (fast_got < count) {
      if (auto m = fast.recv(done ? 5s : 50ms)) {
        fast_checker.check(m->publisher().name(), m->tag(), m->data());
        ++fast_got;
      } else if (done) {
        break;
      }
    }
  });
  std::thread slow_consumer([&] {
    while (!slow_reading) std::this_thread::sleep_for(1ms);
    while (slow_got < count) {
      if (auto m = slow.recv(done ? 5s : 50ms)) {
        slow_checker.check(m->publisher().name(), m->tag(), m->data());
        ++slow_got;
        if (slow_got % 500 == 0) std::this_thread::sleep_for(20ms);  // stall again now and then
      } else if (done) {
        break;
      }
    }
  });

  std::uint64_t partial = 0;      // attempts that reached some but not all
  std::set<std::string> skipped;  // who was named as skipped
  std::uint64_t unnamed_peers = 0;
  auto handle = publisher.publisher();
  const auto try_publish = [&](Tag tag, std::span<const std::byte> data, netio::pubsub::PublishProgress& progress) {
    return through_handle ? handle.try_publish(tag, data, progress) : publisher.try_publish(tag, data, progress);
  };
  for (std::uint64_t i = 0; i < count; ++i) {
    const auto message = pubsub_message(3, i, 1000);
    netio::pubsub::PublishProgress progress;
    while (!try_publish(3, message, progress)) {
      ++partial;
      for (const auto& s : progress.skipped()) {
        skipped.insert(s.identity.name);
        if (!s.peer || s.peer.identity().name != s.identity.name) ++unnamed_peers;  // each named by its Peer
      }
      if (partial == 50) slow_reading = true;  // let it catch up after a while
      std::this_thread::sleep_for(100us);
    }
    CHECK(progress.complete());
  }
  slow_reading = true;
  publisher.flush();
  done = true;
  fast_consumer.join();
  slow_consumer.join();

  CHECK(partial >= 50);
  CHECK(skipped.count("slow") == 1);
  CHECK(unnamed_peers == 0);
  CHECK(fast_got == count);
  CHECK(slow_got == count);
  CHECK(fast_checker.complete("p", 3, count));  // no duplicate, no gap, in order
  CHECK(slow_checker.complete("p", 3, count));
  CHECK(publisher.stats().deliveries == 2 * count);
  CHECK(publisher.stats().published == count);
}
