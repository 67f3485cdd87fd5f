// SPDX-License-Identifier: MIT
// Publish/subscribe under change, over real loopback connections on every back-end: a
// subscriber process killed mid-stream (a real child process) is removed and its pages
// return to the pool while the others are served on; a restarted publisher is subscribed to
// again, with the application told; 1,000 join/leave cycles leave memory and descriptors
// where they started.
#include "support/child_process.hpp"
#include "support/pubsub_test.hpp"
#include "support/sanitizers.hpp"
#include "support/test_context.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>

namespace {

std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t total_pages = 0;
  std::size_t resident_pages = 0;
  statm >> total_pages >> resident_pages;
  return resident_pages * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

std::size_t open_fd_count() {
  const auto entries = std::filesystem::directory_iterator("/proc/self/fd");
  return static_cast<std::size_t>(std::distance(std::filesystem::begin(entries), std::filesystem::end(entries)));
}

// The child subscriber process (support/pubsub_child_subscriber.cpp).
class ChildSubscriber {
 public:
  ChildSubscriber(const Endpoint& publisher, Tag tag)
      : process_(NETIO_PUBSUB_CHILD, {publisher.to_string(), std::to_string(tag)}) {}
  // Reads the child's "subscribed" line (blocking; the child exits on failure, closing it).
  bool wait_subscribed() { return process_.read_line() == "subscribed"; }
  void stop() { process_.stop(); }
  void kill() { process_.kill(); }

 private:
  netio::test::ChildProcess process_;
};

// Publishes numbered 1000-byte messages of tag 1 from a thread of its own until finish();
// keeps what publish() threw. `pace`: a 100 µs pause every 32 messages.
class Producer {
 public:
  Producer(PublishSocket& publisher, bool pace)
      : thread_([this, &publisher, pace] {
          try {
            for (std::uint64_t i = 0; !stop_; ++i) {
              publisher.publish(1, pubsub_message(1, i, 1000));
              published_ = i + 1;
              if (pace && i % 32 == 0) std::this_thread::sleep_for(100us);
            }
            publisher.flush();
          } catch (const netio::Error& e) {
            error_ = e.what();
          }
          done_ = true;
        }) {}
  ~Producer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::uint64_t published() const { return published_.load(); }
  // Stops it, calling `meanwhile` until it is out: its last publish() may be waiting for a
  // reader's room (the producer is faster than the reader, under TSan above all).
  void finish(const std::function<void()>& meanwhile) {
    stop_ = true;
    while (!done_) meanwhile();
    thread_.join();
  }
  const std::string& error() const { return error_; }  // after finish()

 private:
  std::atomic<std::uint64_t> published_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> done_{false};
  std::string error_;
  std::thread thread_;  // last: starts once the members above exist
};

// The subscriber that stays: takes its messages and checks the stream.
struct Survivor {
  SubscribeSocket& socket;
  StreamChecker checker;
  std::uint64_t got = 0;
  void take(std::chrono::milliseconds how_long) {
    const auto until = std::chrono::steady_clock::now() + how_long;
    while (std::chrono::steady_clock::now() < until) {
      if (auto m = socket.recv(20ms)) {
        checker.check(m->publisher().name(), m->tag(), m->data());
        ++got;
      }
    }
  }
};

// A publisher named `name` with 4 pages of 64 KiB per subscriber (16 in all): a subscriber
// that stops reading holds the publisher up soon.
PublishOptions small_pool(std::string name) {
  PublishOptions options;
  options.identity.name = std::move(name);
  options.pages = {.page_count = 16, .page_size = 64 * 1024, .per_connection = 4};
  options.flush_timeout = 5ms;
  return options;
}

}  // namespace

TEST_CASE("pub/sub: a subscriber process killed mid-stream is removed, its pages freed, the others served on",
          "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  netio::Context context(netio::test::context_options());
  PublishOptions options = small_pool("p");
  PublishSocket publisher(context, Endpoint::parse(base), options);
  SubscribeSocket survivor(context);
  survivor.subscribe(publisher.local_endpoint(), 1);

  ChildSubscriber child(publisher.local_endpoint(), 1);
  REQUIRE(child.wait_subscribed());
  REQUIRE(publisher.stats().connections == 2);

  Producer producer(publisher, true);
  Survivor reader{survivor, {}, 0};
  reader.take(300ms);
  child.kill();  // mid-stream, no goodbye
  // The survivor keeps reading meanwhile: a blocking publisher would otherwise wait on its
  // full pages for as long as the dead one's removal takes (seconds under TSan).
  const bool removed = eventually(
      [&] {
        reader.take(20ms);
        return publisher.stats().connections == 1;
      },
      10s);
  reader.take(300ms);
  producer.finish([&] { reader.take(20ms); });
  // The tail (the last page, flushed by the timer) may take a while under TSan: read until
  // everything came, or 10 s (a lost message still fails below).
  eventually(
      [&] {
        reader.take(20ms);
        return reader.got >= producer.published();
      },
      10s);

  CHECK(producer.error() == "");
  CHECK(removed);
  CHECK(publisher.stats().subscribers_lost == 1);
  CHECK(publisher.stats().subscriptions == 1);
  CHECK(producer.published() > 0);
  CHECK(reader.checker.clean());
  CHECK(reader.checker.complete("p", 1, producer.published()));  // the survivor missed nothing
  CHECK(reader.got == producer.published());
  // The dead subscriber's pages went back: only what the survivor's connection holds is in use.
  CHECK(eventually([&] { return publisher.pages().pages_in_use() <= options.pages.per_connection; }));
}

// The subscriber first stops reading, so that publish() waits for its room; then it dies.
// The waiting publish() returns at once, not after send_timeout: on loopback the data
// connection's own end tells the publisher; where that is slow (a dead peer over verbs is
// noticed only after the transport's retries), the control connection's end aborts the data
// connection (PublishSocket, on_control_gone).
TEST_CASE("pub/sub: a publish() waiting on a stalled subscriber returns as soon as that subscriber dies", "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  netio::Context context(netio::test::context_options());
  PublishOptions options = small_pool("p");
  options.send_timeout = 60s;  // what publish() would wait without the control connection's news
  PublishSocket publisher(context, Endpoint::parse(base), options);
  SubscribeSocket survivor(context);
  survivor.subscribe(publisher.local_endpoint(), 1);
  ChildSubscriber child(publisher.local_endpoint(), 1);
  REQUIRE(child.wait_subscribed());
  child.stop();

  Producer producer(publisher, false);
  Survivor reader{survivor, {}, 0};
  // Held up: nothing published for 500 ms while the survivor reads on.
  std::uint64_t before = 0;
  const bool held_up = eventually(
      [&] {
        before = producer.published();
        reader.take(500ms);
        return producer.published() == before;
      },
      20s);
  const auto killed_at = std::chrono::steady_clock::now();
  child.kill();
  const bool resumed = eventually(
      [&] {
        reader.take(20ms);
        return producer.published() > before;
      },
      20s);
  const auto resumed_after = std::chrono::steady_clock::now() - killed_at;
  const bool removed = eventually(
      [&] {
        reader.take(20ms);
        return publisher.stats().connections == 1;
      },
      20s);
  producer.finish([&] { reader.take(20ms); });
  const bool all_read = eventually(
      [&] {
        reader.take(20ms);
        return reader.got >= producer.published();
      },
      20s);

  CHECK(held_up);
  CHECK(resumed);
  CHECK(resumed_after < 10s);  // the control connection's end, not send_timeout (60 s)
  CHECK(removed);
  CHECK(all_read);
  CHECK(producer.error() == "");
  CHECK(publisher.stats().subscribers_lost == 1);
  CHECK(reader.checker.clean());
  CHECK(reader.checker.complete("p", 1, producer.published()));  // the survivor missed nothing
  CHECK(reader.got == producer.published());
}

TEST_CASE("pub/sub: a restarted publisher is subscribed to again, and the application is told", "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  netio::Context context(netio::test::context_options());
  std::atomic<int> lost{0};
  std::atomic<int> resubscribed{0};
  std::mutex mutex;
  StreamChecker ll_checker;
  SubscribeOptions options;
  options.identity.name = "s";
  options.resubscribe_interval = 20ms;
  options.max_resubscribe_interval = 200ms;
  options.on_subscriptions_lost = [&](const Endpoint&) { ++lost; };
  options.on_resubscribed = [&](const Endpoint&) { ++resubscribed; };
  SubscribeSocket::Handler on_message = [&](Tag tag, std::span<const std::byte> data, const netio::Peer& publisher) {
    std::lock_guard lock(mutex);
    ll_checker.check(publisher.name(), tag, data);
  };
  SubscribeSocket subscriber(context, on_message, options);

  PublishOptions first_options;
  first_options.identity.name = "first";
  auto publisher = std::make_unique<PublishSocket>(context, Endpoint::parse(base), first_options);
  const Endpoint at = publisher->local_endpoint();
  subscriber.subscribe(at, 1, Mode::high_throughput);
  subscriber.subscribe(at, 2, Mode::low_latency);
  for (std::uint64_t i = 0; i < 10; ++i) {
    publisher->publish(1, pubsub_message(1, i));
    publisher->publish(2, pubsub_message(2, i));
  }
  publisher.reset();  // the publisher goes away (a flush and a close first)
  StreamChecker ht_checker;
  for (int i = 0; i < 10; ++i) {
    auto m = subscriber.recv(2s);
    REQUIRE(m);
    ht_checker.check(m->publisher().name(), m->tag(), m->data());
  }
  CHECK(ht_checker.complete("first", 1, 10));
  REQUIRE(eventually([&] { return lost.load() == 1; }));
  std::this_thread::sleep_for(100ms);  // a few retries find nobody

  PublishOptions second_options;
  second_options.identity.name = "second";
  PublishSocket restarted(context, at, second_options);  // the same endpoint
  REQUIRE(eventually([&] { return resubscribed.load() == 1; }));
  CHECK(restarted.stats().subscriptions == 2);
  for (std::uint64_t i = 0; i < 10; ++i) {
    restarted.publish(1, pubsub_message(1, i));
    restarted.publish(2, pubsub_message(2, i));
  }
  restarted.flush();
  for (int i = 0; i < 10; ++i) {
    auto m = subscriber.recv(2s);
    REQUIRE(m);
    ht_checker.check(m->publisher().name(), m->tag(), m->data());
  }
  CHECK(ht_checker.complete("second", 1, 10));
  CHECK(eventually([&] {
    std::lock_guard lock(mutex);
    return ll_checker.complete("first", 2, 10) && ll_checker.complete("second", 2, 10);
  }));
  CHECK(lost.load() == 1);
  CHECK(subscriber.stats().subscriptions_lost == 1);
  CHECK(subscriber.stats().resubscribed == 1);
}

TEST_CASE(
    "pub/sub churn: 1,000 subscribe/unsubscribe/connect/disconnect cycles (120 under sanitizers) leave memory and "
    "descriptors as they were",
    "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  netio::Context context(netio::test::context_options());
  PublishOptions options;
  options.identity.name = "p";
  options.pages = {.page_count = 16, .page_size = 64 * 1024, .per_connection = 2};
  PublishSocket publisher(context, Endpoint::parse(base), options);
  std::atomic<std::uint64_t> ll_received{0};
  auto cycle = [&](int i) {
    SubscribeOptions o;
    o.low_latency_max_message_size = 4096;
    SubscribeSocket subscriber(
        context, [&](Tag, std::span<const std::byte>, const netio::Peer&) { ++ll_received; }, o);
    const Tag tag = static_cast<Tag>(i % 7);
    const Mode mode = i % 2 == 0 ? Mode::high_throughput : Mode::low_latency;
    subscriber.subscribe(publisher.local_endpoint(), tag, mode);
    const auto before = ll_received.load();
    publisher.publish(tag, pubsub_message(tag, i, 100));
    bool delivered = false;
    if (mode == Mode::high_throughput) {
      publisher.flush();
      auto m = subscriber.recv(5s);
      delivered = m && netio::test::pubsub_sequence(tag, m->data()) == static_cast<std::uint64_t>(i);
    } else {
      delivered = eventually([&] { return ll_received.load() == before + 1; }, 5s);
    }
    if (i % 3 == 0) subscriber.unsubscribe(publisher.local_endpoint(), tag, mode);  // else: just disconnect
    return delivered;
  };
  int failures = 0;
  const int warm_up = netio::test::sanitized ? 50 : 100;
  for (int i = 0; i < warm_up; ++i) failures += cycle(i) ? 0 : 1;  // pools, caches, allocator arenas
  REQUIRE(eventually([&] { return publisher.stats().connections == 0; }));
  std::this_thread::sleep_for(200ms);
  const auto rss_before = resident_bytes();
  const auto fds_before = open_fd_count();
  const int cycles = netio::test::sanitized ? 120 : 1000;
  for (int i = warm_up; i < warm_up + cycles; ++i) failures += cycle(i) ? 0 : 1;
  CHECK(failures == 0);
  CHECK(eventually([&] { return publisher.stats().connections == 0 && publisher.stats().subscriptions == 0; }));
  CHECK(eventually([&] { return open_fd_count() <= fds_before; }));
  const auto rss_after = resident_bytes();
  INFO("RSS before " << rss_before << ", after " << rss_after << "; fds before " << fds_before << ", after "
                     << open_fd_count());
#if defined(__SANITIZE_ADDRESS__)
  // ASan keeps freed memory in its quarantine (up to 256 MiB), so RSS grows with any churn;
  // the plain build checks it, and LSan checks nothing leaked.
  WARN("RSS not checked under AddressSanitizer (its quarantine holds freed memory)");
#else
  CHECK(rss_after <= rss_before + 4 * 1024 * 1024);  // no growth per cycle (1,000 cycles)
#endif
  CHECK(publisher.pages().pages_in_use() == 0);
}
