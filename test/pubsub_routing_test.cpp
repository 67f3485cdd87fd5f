// SPDX-License-Identifier: MIT
// Publish/subscribe over real loopback connections on every back-end: each subscriber gets
// exactly its tags, in order and intact; several publishers into one subscriber; one
// publisher to 16 subscribers; no slow joiner; subscribers joining and leaving mid-stream.
#include "support/pubsub_test.hpp"
#include "support/test_context.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

// Low-latency deliveries, collected on the loop thread and checked on the test thread.
struct LowLatencyInbox {
  std::mutex mutex;
  StreamChecker checker;
  std::set<Tag> tags_seen;
  std::atomic<std::uint64_t> count{0};

  SubscribeSocket::Handler handler() {
    return [this](Tag tag, std::span<const std::byte> data, const netio::Peer& publisher) {
      std::lock_guard lock(mutex);
      checker.check(publisher.name(), tag, data);
      tags_seen.insert(tag);
      ++count;
    };
  }
  static SubscribeOptions options(std::string name = "ll-subscriber") {
    SubscribeOptions o;
    o.identity.name = std::move(name);
    return o;
  }
};

// Takes `expected` high-throughput messages (or gives up after `timeout`) into a checker.
std::uint64_t drain(SubscribeSocket& subscriber, StreamChecker& checker, std::set<Tag>& tags, std::uint64_t expected,
                    std::chrono::milliseconds timeout = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::uint64_t got = 0;
  while (got < expected && std::chrono::steady_clock::now() < deadline) {
    auto m = subscriber.recv(100ms);
    if (!m) continue;
    checker.check(m->publisher().name(), m->tag(), m->data());
    tags.insert(m->tag());
    ++got;
  }
  return got;
}

// publish() through the socket or through a Publisher handle (one thread at a time); the
// rest goes to the socket.
class Publishing {
 public:
  Publishing(PublishSocket& socket, bool through_handle) : socket_(socket) {
    if (through_handle) handle_.emplace(socket.publisher());
  }
  void publish(Tag tag, std::span<const std::byte> data) {
    if (handle_) {
      handle_->publish(tag, data);
    } else {
      socket_.publish(tag, data);
    }
  }
  void flush() { socket_.flush(); }
  Endpoint local_endpoint() const { return socket_.local_endpoint(); }
  netio::pubsub::PublishStats stats() const { return socket_.stats(); }

 private:
  PublishSocket& socket_;
  std::optional<PublishSocket::Publisher> handle_;
};

netio::pubsub::PublishOptions named(std::string name) {
  netio::pubsub::PublishOptions o;
  o.identity.name = std::move(name);
  return o;
}

}  // namespace

TEST_CASE("pub/sub: each subscriber gets exactly its tags, in order and intact, in both modes", "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  netio::Context context(netio::test::context_options());
  PublishSocket publisher(context, Endpoint::parse(base), named("daq"));
  const Endpoint at = publisher.local_endpoint();

  SubscribeSocket storage(context);  // high-throughput: tags 1 and 2
  storage.subscribe(at, 1);
  storage.subscribe(at, 2);
  LowLatencyInbox monitor_inbox;  // low-latency: tags 2 and 3
  SubscribeSocket monitor(context, monitor_inbox.handler(), monitor_inbox.options());
  monitor.subscribe(at, 2, Mode::low_latency);
  monitor.subscribe(at, 3, Mode::low_latency);
  LowLatencyInbox both_inbox;
  SubscribeSocket both(context, both_inbox.handler(), both_inbox.options());  // one tag in each mode
  both.subscribe(at, 4);
  REQUIRE(publisher.stats().subscriptions == 5);

  constexpr std::uint64_t rounds = 400;
  for (std::uint64_t i = 0; i < rounds; ++i) {
    for (Tag tag = 1; tag <= 5; ++tag) publisher.publish(tag, pubsub_message(tag, i, 16 + (i * 37 + tag) % 3000));
  }
  publisher.flush();

  StreamChecker storage_checker;
  std::set<Tag> storage_tags;
  CHECK(drain(storage, storage_checker, storage_tags, 2 * rounds) == 2 * rounds);
  CHECK(storage_checker.clean());
  CHECK(storage_checker.complete("daq", 1, rounds));
  CHECK(storage_checker.complete("daq", 2, rounds));
  CHECK(storage_tags == std::set<Tag>{1, 2});
  CHECK_FALSE(storage.try_recv());  // nothing else

  REQUIRE(eventually([&] { return monitor_inbox.count.load() >= 2 * rounds; }));
  std::this_thread::sleep_for(50ms);  // anything extra would show up now
  {
    std::lock_guard lock(monitor_inbox.mutex);
    CHECK(monitor_inbox.count == 2 * rounds);
    CHECK(monitor_inbox.checker.clean());
    CHECK(monitor_inbox.checker.complete("daq", 2, rounds));
    CHECK(monitor_inbox.checker.complete("daq", 3, rounds));
    CHECK(monitor_inbox.tags_seen == std::set<Tag>{2, 3});
  }

  StreamChecker both_checker;
  std::set<Tag> both_tags;
  CHECK(drain(both, both_checker, both_tags, rounds) == rounds);
  CHECK(both_checker.complete("daq", 4, rounds));

  const auto stats = publisher.stats();
  CHECK(stats.unrouted == rounds);  // tag 5: nobody
  CHECK(stats.deliveries == 5 * rounds);
  CHECK(stats.connections == 3);  // one per (subscriber, mode), however many tags
  CHECK(stats.dropped == 0);
}

TEST_CASE("pub/sub: several publishers into one subscriber, the publisher named on each message", "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  netio::Context context(netio::test::context_options());
  constexpr int publishers = 3;
  std::vector<std::unique_ptr<PublishSocket>> sockets;
  for (int p = 0; p < publishers; ++p) {
    sockets.push_back(
        std::make_unique<PublishSocket>(context, Endpoint::parse(base), named("pub-" + std::to_string(p))));
  }
  SubscribeSocket subscriber(context);
  for (int p = 0; p < publishers; ++p) {
    subscriber.subscribe(sockets[p]->local_endpoint(), 7);  // the same tag everywhere
    subscriber.subscribe(sockets[p]->local_endpoint(), 100 + p);
  }
  constexpr std::uint64_t count = 2000;
  std::vector<std::thread> threads;
  for (int p = 0; p < publishers; ++p) {
    threads.emplace_back([&, p] {
      for (std::uint64_t i = 0; i < count; ++i) {
        sockets[p]->publish(7, pubsub_message(7, i, 100));
        sockets[p]->publish(100 + p, pubsub_message(100 + p, i, 40));
      }
      sockets[p]->flush();
    });
  }
  StreamChecker checker;
  std::set<Tag> tags;
  const auto got = drain(subscriber, checker, tags, 2 * publishers * count);
  for (auto& t : threads) t.join();
  CHECK(got == 2 * publishers * count);
  CHECK(checker.clean());
  for (int p = 0; p < publishers; ++p) {
    const std::string name = "pub-" + std::to_string(p);
    CHECK(checker.complete(name, 7, count));
    CHECK(checker.complete(name, 100 + p, count));
  }
}

TEST_CASE("pub/sub: one publisher to 16 subscribers on a bounded page pool", "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  netio::Context context(netio::test::context_options());
  netio::pubsub::PublishOptions options = named("fan-out");
  options.pages = {.page_count = 32, .page_size = 64 * 1024, .per_connection = 4};
  PublishSocket publisher(context, Endpoint::parse(base), options);
  constexpr int subscribers = 16;
  constexpr Tag tags = 4;
  std::vector<std::unique_ptr<SubscribeSocket>> subs;
  for (int s = 0; s < subscribers; ++s) {
    SubscribeOptions o;
    o.identity.name = "sub-" + std::to_string(s);
    subs.push_back(std::make_unique<SubscribeSocket>(context, o));
    subs.back()->subscribe(publisher.local_endpoint(), s % tags);
  }
  constexpr std::uint64_t count = 1500;
  std::thread producer([&] {
    for (std::uint64_t i = 0; i < count; ++i) {
      for (Tag tag = 0; tag < tags; ++tag) publisher.publish(tag, pubsub_message(tag, i, 512));
    }
    publisher.flush();
  });
  std::vector<StreamChecker> checkers(subscribers);
  std::vector<std::set<Tag>> seen(subscribers);
  std::vector<std::uint64_t> got(subscribers, 0);
  std::vector<std::thread> consumers;
  for (int s = 0; s < subscribers; ++s) {
    consumers.emplace_back([&, s] { got[s] = drain(*subs[s], checkers[s], seen[s], count); });
  }
  producer.join();
  for (auto& t : consumers) t.join();
  for (int s = 0; s < subscribers; ++s) {
    INFO("subscriber " << s);
    CHECK(got[s] == count);
    CHECK(checkers[s].clean());
    CHECK(checkers[s].complete("fan-out", s % tags, count));
    CHECK(seen[s] == std::set<Tag>{static_cast<Tag>(s % tags)});
  }
  CHECK(publisher.pages().peak_pages_in_use() <= 32);  // the pool bounds memory for all 16
  CHECK(publisher.stats().connections == subscribers);
}

TEST_CASE("pub/sub: no slow joiner: everything published right after the acknowledgement arrives", "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  // Through the socket, or through one Publisher taken before any subscriber came: it has
  // to notice each new subscription.
  const bool through_handle = GENERATE(false, true);
  INFO((through_handle ? "through a Publisher" : "through the socket"));
  netio::Context context(netio::test::context_options());
  PublishSocket socket(context, Endpoint::parse(base), named("p"));
  Publishing publisher(socket, through_handle);
  constexpr std::uint64_t count = 200;
  for (int joiner = 0; joiner < 10; ++joiner) {
    INFO("joiner " << joiner);
    const Tag tag = 50 + joiner;
    // High throughput: the first message goes out the moment subscribe() returns.
    {
      SubscribeSocket subscriber(context);
      subscriber.subscribe(publisher.local_endpoint(), tag);
      for (std::uint64_t i = 0; i < count; ++i) publisher.publish(tag, pubsub_message(tag, i, 24));
      publisher.flush();
      StreamChecker checker;
      std::set<Tag> tags;
      CHECK(drain(subscriber, checker, tags, count) == count);
      CHECK(checker.complete("p", tag, count));
    }
    // Low latency: the same.
    LowLatencyInbox inbox;
    SubscribeSocket subscriber(context, inbox.handler(), inbox.options());
    subscriber.subscribe(publisher.local_endpoint(), tag, Mode::low_latency);
    for (std::uint64_t i = 0; i < count; ++i) publisher.publish(tag, pubsub_message(tag, i, 24));
    CHECK(eventually([&] { return inbox.count.load() >= count; }));
    std::lock_guard lock(inbox.mutex);
    CHECK(inbox.checker.complete("p", tag, count));
  }
}

TEST_CASE("pub/sub: subscribers join and leave during a stream without disturbing the others", "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  const bool through_handle = GENERATE(false, true);  // the producer publishes through a Publisher
  INFO((through_handle ? "through a Publisher" : "through the socket"));
  netio::Context context(netio::test::context_options());
  netio::pubsub::PublishOptions options = named("stream");
  options.flush_timeout = 5ms;
  PublishSocket socket(context, Endpoint::parse(base), options);
  Publishing publisher(socket, through_handle);
  const Tag tag = 9;
  SubscribeSocket steady(context);
  steady.subscribe(publisher.local_endpoint(), tag);

  std::atomic<std::uint64_t> published{0};
  // publish() calls begun: one in progress when a subscription is acknowledged may have
  // taken the routes before the new one (it was not published after the acknowledgement).
  std::atomic<std::uint64_t> begun{0};
  std::atomic<bool> stop{false};
  std::thread producer([&] {
    for (std::uint64_t i = 0; !stop; ++i) {
      begun.store(i + 1);
      publisher.publish(tag, pubsub_message(tag, i, 200));
      published.store(i + 1);
      if (i % 16 == 0) std::this_thread::sleep_for(200us);
    }
    publisher.flush();
  });
  StreamChecker steady_checker;
  std::set<Tag> steady_tags;
  std::atomic<bool> steady_done{false};
  std::uint64_t steady_got = 0;
  std::thread steady_consumer([&] {
    while (!steady_done) {
      steady_got += drain(steady, steady_checker, steady_tags, 1'000'000'000, 50ms);
    }
    // The rest, until all is in or nothing came for a while (slow under sanitizers).
    while (steady_got < published.load()) {
      const auto got = drain(steady, steady_checker, steady_tags, published.load() - steady_got, 2s);
      if (got == 0) break;
      steady_got += got;
    }
  });

  struct Visit {
    std::uint64_t after_ack = 0;     // every message begun from here on must arrive ...
    std::uint64_t before_leave = 0;  // ... up to here at least
    StreamChecker checker;
  };
  std::vector<Visit> visits(12);
  for (auto& visit : visits) {
    SubscribeSocket joiner(context);
    const Mode mode = Mode::high_throughput;
    joiner.subscribe(publisher.local_endpoint(), tag, mode);
    visit.after_ack = begun.load();
    std::set<Tag> tags;
    drain(joiner, visit.checker, tags, 1'000'000'000, 60ms);
    visit.before_leave = published.load();
    joiner.unsubscribe(publisher.local_endpoint(), tag, mode);
    // What was on its way: at least everything published before the unsubscribe (a loaded
    // machine, a sanitizer, may take a while to deliver it).
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    auto received_up_to = [&] {
      const auto it = visit.checker.streams.find({"stream", tag});
      return it == visit.checker.streams.end() ? 0 : it->second.next;
    };
    while (received_up_to() < visit.before_leave && std::chrono::steady_clock::now() < deadline) {
      drain(joiner, visit.checker, tags, 1, 100ms);
    }
  }
  stop = true;
  producer.join();
  steady_done = true;
  steady_consumer.join();

  CHECK(steady_checker.clean());
  CHECK(steady_checker.complete("stream", tag, published.load()));
  CHECK(steady_got == published.load());
  for (std::size_t v = 0; v < visits.size(); ++v) {
    INFO("visit " << v);
    const auto& c = visits[v].checker;
    CHECK(c.clean());
    const auto it = c.streams.find({"stream", tag});
    REQUIRE(it != c.streams.end());
    CHECK(it->second.gaps == 0);
    CHECK(*it->second.first <= visits[v].after_ack);
    CHECK(it->second.next >= visits[v].before_leave);
  }
  CHECK(publisher.stats().connections == 1);  // only the steady subscriber is left
}

TEST_CASE("pub/sub: four threads, each with its own Publisher, keep their order for every subscriber", "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  netio::Context context(netio::test::context_options());
  PublishSocket socket(context, Endpoint::parse(base), named("threads"));
  SubscribeSocket storage(context);  // high-throughput, every tag
  LowLatencyInbox inbox;
  SubscribeSocket monitor(context, inbox.handler(), inbox.options());  // low-latency, every tag
  constexpr Tag threads = 4;
  constexpr std::uint64_t count = 2000;
  for (Tag tag = 1; tag <= threads; ++tag) {
    storage.subscribe(socket.local_endpoint(), tag);
    monitor.subscribe(socket.local_endpoint(), tag, Mode::low_latency);
  }
  // Read while the threads publish: a subscriber holds a bounded number of unread pages, and
  // on a slow machine (TSan) the flush timer sends many partly filled ones, so publish()
  // would wait for a reader that only starts afterwards.
  StreamChecker checker;
  std::set<Tag> tags;
  std::uint64_t drained = 0;
  std::thread reader([&] { drained = drain(storage, checker, tags, threads * count, 60s); });
  // Thread t publishes tag t, in sequence: each tag's stream checks one Publisher's order.
  std::vector<std::thread> producers;
  for (Tag tag = 1; tag <= threads; ++tag) {
    producers.emplace_back([&socket, tag] {
      auto publisher = socket.publisher();
      for (std::uint64_t i = 0; i < count; ++i) publisher.publish(tag, netio::test::pubsub_message(tag, i, 40));
    });
  }
  for (auto& p : producers) p.join();
  socket.flush();
  reader.join();
  CHECK(drained == threads * count);
  CHECK(eventually([&] { return inbox.count.load() >= threads * count; }));
  std::lock_guard lock(inbox.mutex);
  for (Tag tag = 1; tag <= threads; ++tag) {
    INFO("tag " << tag);
    CHECK(checker.complete("threads", tag, count));
    CHECK(inbox.checker.complete("threads", tag, count));
  }
  CHECK(checker.clean());
  CHECK(inbox.checker.clean());
  CHECK(socket.stats().published == threads * count);
  CHECK(socket.stats().deliveries == 2 * threads * count);
}

TEST_CASE("pub/sub: a Publisher that outlives its PublishSocket throws Errc::closed", "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  netio::Context context(netio::test::context_options());
  auto socket = std::make_unique<PublishSocket>(context, Endpoint::parse(base), named("gone"));
  SubscribeSocket subscriber(context);
  subscriber.subscribe(socket->local_endpoint(), 7);
  auto publisher = socket->publisher();
  publisher.publish(7, netio::test::pubsub_message(7, 0, 32));
  publisher.publish(8, netio::test::pubsub_message(8, 0, 32));  // nobody's tag
  // A live Publisher's counts are in the socket's stats.
  CHECK(socket->stats().published == 2);
  CHECK(socket->stats().deliveries == 1);
  CHECK(socket->stats().unrouted == 1);
  socket.reset();
  try {
    publisher.publish(7, netio::test::pubsub_message(7, 1, 32));
    FAIL("publish() after the socket was destroyed did not throw");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::closed);
    CHECK_THAT(e.what(), Catch::Contains("destroyed"));
  }
  auto m = subscriber.recv(5s);  // what was published before is delivered
  REQUIRE(m);
  CHECK(netio::test::pubsub_sequence(7, m->data()) == std::optional<std::uint64_t>{0});
}
