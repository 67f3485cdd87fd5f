// SPDX-License-Identifier: MIT
// Sockets created, used and destroyed on the event-loop thread (inside callbacks), the
// asynchronous close, and the calls that must not wait there; on every back-end.
#include "netio/backend/event_loop.hpp"
#include "netio/high_throughput_socket.hpp"
#include "netio/low_latency_socket.hpp"
#include "support/loopback_port.hpp"
#include "support/sanitizers.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using netio::Endpoint;
using netio::test::eventually;

namespace {

using Clock = std::chrono::steady_clock;

// A message names its sender and its number in that sender's sequence.
std::vector<std::byte> numbered(std::uint64_t sender, std::uint64_t sequence, std::size_t size = 16) {
  std::vector<std::byte> bytes(std::max<std::size_t>(size, 16));
  std::memcpy(bytes.data(), &sender, 8);
  std::memcpy(bytes.data() + 8, &sequence, 8);
  return bytes;
}

// Checks that every sender's messages arrive complete and in order: a gap, a repeat or a
// message out of order counts as an error. One thread at a time.
struct SequenceChecker {
  std::map<std::uint64_t, std::uint64_t> next;
  std::uint64_t received = 0;
  std::uint64_t errors = 0;

  void check(std::span<const std::byte> message) {
    if (message.size() < 16) {
      ++errors;
      return;
    }
    std::uint64_t sender = 0;
    std::uint64_t sequence = 0;
    std::memcpy(&sender, message.data(), 8);
    std::memcpy(&sequence, message.data() + 8, 8);
    auto& expected = next[sender];
    if (sequence != expected) ++errors;
    expected = sequence + 1;
    ++received;
  }
};

// The longest gap between the ticks of a periodic loop timer: how long the loop froze.
class LoopWatch {
 public:
  explicit LoopWatch(netio::EventLoop& loop) : loop_(loop) {
    id_ = loop_.add_timer(1ms, 1ms, [this] {
      const auto now = Clock::now();
      if (last_) longest_ = std::max(longest_.load(), now - *last_);
      last_ = now;
    });
  }
  ~LoopWatch() {
    loop_.cancel_timer(id_);
    loop_.run_sync([] {});  // a tick in progress ends first
  }
  Clock::duration longest() const { return longest_.load(); }

 private:
  netio::EventLoop& loop_;
  netio::EventLoop::TimerId id_ = 0;
  std::optional<Clock::time_point> last_;  // loop thread only
  std::atomic<Clock::duration> longest_{Clock::duration::zero()};
};

}  // namespace

TEST_CASE("send sockets are created, used and destroyed inside callbacks under traffic, losing nothing",
          "[loop_thread][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context;
  netio::EventLoop& loop = context.loop();
  LoopWatch watch(loop);

  // Loop thread only: the tick, the tasks it posts and the low-latency receiver's handler.
  struct Live {
    std::deque<std::unique_ptr<netio::LowLatencySendSocket>> low_latency;
    std::deque<std::unique_ptr<netio::HighThroughputSendSocket>> high_throughput;
    bool destroy_in_handler = false;
    std::uint64_t next_id = 1;
    std::uint64_t created = 0;
    std::uint64_t destroyed = 0;
    std::map<std::uint64_t, std::uint64_t> sequence;  // per socket id
  } live;
  std::atomic<std::uint64_t> ll_accepted{0};
  std::atomic<std::uint64_t> ht_accepted{0};

  SequenceChecker ll_checker;  // loop thread (the handler)
  std::atomic<std::uint64_t> ll_received{0};
  auto destroy_oldest = [&live] {
    // Alternate the kinds; destroying a socket with messages queued is the point.
    if (live.destroyed % 2 == 0 && !live.low_latency.empty()) {
      live.low_latency.pop_front();
      ++live.destroyed;
    } else if (!live.high_throughput.empty()) {
      live.high_throughput.pop_front();
      ++live.destroyed;
    } else if (!live.low_latency.empty()) {
      live.low_latency.pop_front();
      ++live.destroyed;
    }
  };
  netio::LowLatencyReceiveSocket ll_receiver(context, base,
                                             [&](std::span<const std::byte> message, const netio::Peer&) {
                                               ll_checker.check(message);
                                               ll_received.fetch_add(1, std::memory_order_relaxed);
                                               if (std::exchange(live.destroy_in_handler, false)) destroy_oldest();
                                             });
  netio::HighThroughputReceiveSocket ht_receiver(context, base);

  netio::LowLatencySendOptions ll_options;
  ll_options.buffer_count = 8;
  ll_options.buffer_size = 64;
  netio::HighThroughputSendOptions ht_options;
  ht_options.page_size = 4096;
  ht_options.page_count = 4;
  ht_options.flush_timeout = 1ms;

  // Every tick: a new socket (the kinds alternate), messages from every live socket, and
  // the oldest destroyed (in the tick, in a posted task, or in the receiver's handler).
  // It stops at the target or after 15 s, but not before it has made 100 sockets (a loaded
  // machine under a sanitizer makes fewer in 15 s; 60 s at the most).
  constexpr std::uint64_t target = netio::test::sanitized ? 500 : 1500;
  constexpr std::uint64_t enough = 100;
  constexpr std::size_t keep_live = 6;
  const auto run_for = 15s;
  const auto run_at_most = 60s;
  const auto started = Clock::now();
  std::atomic<bool> done{false};
  auto send_from = [&](auto& socket, std::uint64_t id, std::atomic<std::uint64_t>& accepted) {
    for (int i = 0; i < 4; ++i) {
      auto& seq = live.sequence[id];
      if (!socket.try_send(numbered(id, seq))) break;
      ++seq;
      accepted.fetch_add(1, std::memory_order_relaxed);
    }
  };
  std::map<const void*, std::uint64_t> ids;  // loop thread: socket -> its id
  const auto tick = loop.add_timer(1ms, 1ms, [&] {
    if (done.load()) return;
    const auto ran = Clock::now() - started;
    if (live.created >= target || (ran > run_for && live.created >= enough) || ran > run_at_most) {
      live.low_latency.clear();
      live.high_throughput.clear();
      done.store(true);
      return;
    }
    const std::uint64_t id = live.next_id++;
    if (live.created++ % 2 == 0) {
      live.low_latency.push_back(
          std::make_unique<netio::LowLatencySendSocket>(context, ll_receiver.local_endpoint(), ll_options));
      ids[live.low_latency.back().get()] = id;
    } else {
      live.high_throughput.push_back(
          std::make_unique<netio::HighThroughputSendSocket>(context, ht_receiver.local_endpoint(), ht_options));
      ids[live.high_throughput.back().get()] = id;
    }
    for (auto& socket : live.low_latency) send_from(*socket, ids[socket.get()], ll_accepted);
    for (auto& socket : live.high_throughput) send_from(*socket, ids[socket.get()], ht_accepted);
    if (live.low_latency.size() + live.high_throughput.size() > keep_live) {
      switch (live.created % 3) {
        case 0: destroy_oldest(); break;
        case 1: loop.post(destroy_oldest); break;
        default: live.destroy_in_handler = true; break;
      }
    }
  });

  // The high-throughput receiver is read here, on a user thread.
  SequenceChecker ht_checker;
  const auto drain_ht = [&](std::chrono::nanoseconds timeout) {
    return ht_receiver.recv_each(1000, timeout, [&](std::span<const std::byte> message) {
      ht_checker.check(message);
      return true;
    });
  };
  while (!done.load() && Clock::now() - started < run_at_most + 10s) drain_ht(10ms);
  loop.cancel_timer(tick);
  loop.run_sync([] {});
  REQUIRE(done.load());

  // Everything accepted arrives, although each socket was destroyed with messages queued.
  const auto deadline = Clock::now() + 20s;
  while (ht_checker.received < ht_accepted.load() && Clock::now() < deadline) drain_ht(10ms);
  CHECK(eventually([&] { return ll_received.load() == ll_accepted.load(); }, 20s));
  loop.run_sync([&] {
    CHECK(ll_checker.errors == 0);
    CHECK(ll_checker.received == ll_accepted.load());
  });
  CHECK(ht_checker.errors == 0);
  CHECK(ht_checker.received == ht_accepted.load());
  INFO("sockets created: " << live.created << ", messages " << ll_accepted.load() << " + " << ht_accepted.load());
  CHECK(live.created >= enough);  // even a slow sanitizer build on a loaded machine, in 60 s
  CHECK(ll_accepted.load() > 0);
  CHECK(ht_accepted.load() > 0);
  // A liveness check, not a performance figure: a loop frozen for a send_timeout (10 s) shows.
  CHECK(watch.longest() < 2s);
}

TEST_CASE("an asynchronous close sends everything queued, then reports success", "[loop_thread][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context;
  SequenceChecker ll_checker;  // loop thread
  std::atomic<std::uint64_t> ll_received{0};
  netio::LowLatencyReceiveSocket ll_receiver(context, base,
                                             [&](std::span<const std::byte> message, const netio::Peer&) {
                                               ll_checker.check(message);
                                               ll_received.fetch_add(1);
                                             });
  netio::HighThroughputReceiveSocket ht_receiver(context, base);

  std::promise<std::optional<std::string>> ll_closed;
  std::promise<std::optional<std::string>> ht_closed;
  auto reporter = [](std::promise<std::optional<std::string>>& promise) {
    return [&promise](const netio::Error* error) {
      promise.set_value(error ? std::optional<std::string>(error->what()) : std::nullopt);
    };
  };
  constexpr std::uint64_t ll_count = 2000;
  constexpr std::uint64_t ht_count = 20000;
  std::uint64_t ll_expected = ll_count;

  SECTION("closed on a user thread right after sending") {
    netio::LowLatencySendSocket ll(context, ll_receiver.local_endpoint());
    for (std::uint64_t i = 0; i < ll_count; ++i) ll.send(numbered(1, i));
    ll.close(reporter(ll_closed));
    CHECK_THROWS_MATCHES(ll.send(numbered(1, ll_count)), netio::Error,
                         Catch::Predicate<netio::Error>([](const auto& e) { return e.code() == netio::Errc::closed; }));
    netio::HighThroughputSendOptions ht_options;
    ht_options.flush_timeout = 60s;  // only the close sends the last page
    netio::HighThroughputSendSocket ht(context, ht_receiver.local_endpoint(), ht_options);
    for (std::uint64_t i = 0; i < ht_count; ++i) ht.send(numbered(2, i));
    ht.close(reporter(ht_closed));
    CHECK_THROWS_MATCHES(ht.send(numbered(2, ht_count)), netio::Error,
                         Catch::Predicate<netio::Error>([](const auto& e) { return e.code() == netio::Errc::closed; }));
  }
  SECTION("closed and destroyed on the loop thread, with messages still queued") {
    std::uint64_t ll_sent = 0;
    std::uint64_t ht_sent = 0;
    context.loop().run_sync([&] {
      netio::LowLatencySendOptions ll_options;
      ll_options.buffer_count = 256;
      netio::LowLatencySendSocket ll(context, ll_receiver.local_endpoint(), ll_options);
      while (ll_sent < ll_count && ll.try_send(numbered(1, ll_sent))) ++ll_sent;
      ll.close(reporter(ll_closed));
      netio::HighThroughputSendOptions ht_options;
      ht_options.flush_timeout = 60s;
      netio::HighThroughputSendSocket ht(context, ht_receiver.local_endpoint(), ht_options);
      while (ht_sent < ht_count && ht.try_send(numbered(2, ht_sent))) ++ht_sent;
      ht.close(reporter(ht_closed));
    });                       // both destroyed here, not yet connected
    REQUIRE(ll_sent == 256);  // every buffer was queued
    REQUIRE(ht_sent == ht_count);
    ll_expected = ll_sent;
  }

  auto ll_result = ll_closed.get_future();
  auto ht_result = ht_closed.get_future();
  REQUIRE(ll_result.wait_for(15s) == std::future_status::ready);
  REQUIRE(ht_result.wait_for(15s) == std::future_status::ready);
  const auto ll_error = ll_result.get();
  const auto ht_error = ht_result.get();
  CHECK(ll_error.value_or("none") == "none");  // on_closed was given nullptr
  CHECK(ht_error.value_or("none") == "none");
  SequenceChecker ht_checker;
  const auto deadline = Clock::now() + 15s;
  while (Clock::now() < deadline && ht_checker.received < ht_count) {
    ht_receiver.recv_each(1000, 10ms, [&](std::span<const std::byte> m) {
      ht_checker.check(m);
      return true;
    });
  }
  CHECK(ht_checker.received == ht_count);
  CHECK(ht_checker.errors == 0);
  CHECK(eventually([&] { return ll_received.load() >= ll_expected; }));
  context.loop().run_sync([&] {
    CHECK(ll_checker.errors == 0);
    CHECK(ll_checker.received == ll_expected);
  });
}

TEST_CASE("an asynchronous close reports what was not sent", "[loop_thread][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context;
  std::promise<netio::Errc> closed;
  auto reporter = [&closed](const netio::Error* error) {
    closed.set_value(error ? static_cast<netio::Errc>(error->code().value()) : netio::Errc{});
  };
  netio::Errc expected{};
  const netio::test::LoopbackPort refusing(
      netio::test::LoopbackPort::Kind::refusing);  // outlives the sender's connection attempt

  SECTION("nobody listens: the connection's error") {
    const std::optional<Endpoint> gone = refusing.endpoint(base);
    // On the loop thread, so that the refusal cannot come before the message is queued.
    bool queued = false;
    context.loop().run_sync([&] {
      netio::LowLatencySendSocket sender(context, *gone);
      queued = sender.try_send(numbered(1, 0));
      sender.close(reporter);
    });
    REQUIRE(queued);
    expected = netio::Errc::connection_refused;
  }
  SECTION("the receiver does not take the pages: Errc::timeout after send_timeout") {
    netio::Context receiver_context;  // its own loop, so that this one stays free
    netio::HighThroughputReceiveOptions receive_options;
    receive_options.page_credits = 1;
    netio::HighThroughputReceiveSocket receiver(receiver_context, base, receive_options);
    netio::HighThroughputSendOptions options;
    options.page_size = 1 << 20;
    options.page_count = 32;
    options.send_timeout = 300ms;
    netio::HighThroughputSendSocket sender(context, receiver.local_endpoint(), options);
    REQUIRE(sender.wait_connected(5s));
    const std::vector<std::byte> message(1 << 20);
    while (sender.try_send(message)) {
    }
    context.loop().run_sync([&] { sender.close(reporter); });
    expected = netio::Errc::timeout;
    auto result = closed.get_future();
    REQUIRE(result.wait_for(10s) == std::future_status::ready);
    CHECK(result.get() == expected);
    return;
  }

  auto result = closed.get_future();
  REQUIRE(result.wait_for(10s) == std::future_status::ready);
  const netio::Errc got = result.get();
  // libfabric may report a refused connection as a back-end error; either way not success.
  CHECK(got != netio::Errc{});
  if (base.scheme == "tcp") CHECK(got == expected);
}

TEST_CASE("a low-latency send socket destroyed on a user thread sends what it queued", "[loop_thread][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context;
  std::atomic<std::uint64_t> received{0};
  netio::LowLatencyReceiveSocket receiver(
      context, base, [&](std::span<const std::byte>, const netio::Peer&) { received.fetch_add(1); });
  constexpr std::uint64_t count = 64;
  {
    netio::LowLatencySendOptions options;
    options.buffer_count = count;
    netio::LowLatencySendSocket sender(context, receiver.local_endpoint(), options);
    for (std::uint64_t i = 0; i < count; ++i) REQUIRE(sender.try_send(numbered(1, i)));
  }  // before the connection is up: everything is still queued
  CHECK(eventually([&] { return received.load() == count; }));
}

TEST_CASE("on the loop thread, calls that would wait fail at once", "[loop_thread][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context;
  netio::LowLatencyReceiveSocket ll_receiver(context, base, [](std::span<const std::byte>, const netio::Peer&) {});
  netio::HighThroughputReceiveSocket ht_receiver(context, base);
  const auto would_block = [&base](const char* call) {
    return Catch::Predicate<netio::Error>(
        [call, host = base.host](const netio::Error& e) {
          const std::string what = e.what();
          return e.code() == netio::Errc::would_block && what.find(call) != std::string::npos &&
                 what.find(host) != std::string::npos;
        },
        std::string("Errc::would_block naming the endpoint and ") + call);
  };
  const auto send_advice = Catch::Predicate<netio::Error>([](const netio::Error& e) {
    return std::string(e.what()).find("use try_send() on the event-loop thread") != std::string::npos;
  });

  const auto started = Clock::now();
  context.loop().run_sync([&] {
    netio::LowLatencySendOptions ll_options;
    ll_options.buffer_count = 2;
    netio::LowLatencySendSocket ll(context, ll_receiver.local_endpoint(), ll_options);
    CHECK_THROWS_MATCHES(ll.wait_connected(5s), netio::Error, would_block("wait_connected()"));
    CHECK(ll.try_send(numbered(1, 0)));
    CHECK(ll.try_send(numbered(1, 1)));
    CHECK_FALSE(ll.try_send(numbered(1, 2)));  // both buffers wait for the connection
    CHECK_THROWS_MATCHES(ll.send(numbered(1, 2)), netio::Error, would_block("send()"));
    CHECK_THROWS_MATCHES(ll.send(numbered(1, 2)), netio::Error, send_advice);
    CHECK_THROWS_MATCHES(ll.wait_sent(5s), netio::Error, would_block("wait_sent()"));

    netio::HighThroughputSendOptions ht_options;
    ht_options.page_size = 4096;
    ht_options.page_count = 2;
    netio::HighThroughputSendSocket ht(context, ht_receiver.local_endpoint(), ht_options);
    CHECK_THROWS_MATCHES(ht.wait_connected(5s), netio::Error, would_block("wait_connected()"));
    std::uint64_t sent = 0;
    while (ht.try_send(numbered(2, sent, 1000))) ++sent;
    CHECK(sent > 0);
    CHECK_THROWS_MATCHES(ht.send(numbered(2, sent, 1000)), netio::Error, would_block("send()"));
    CHECK_THROWS_MATCHES(ht.send(numbered(2, sent, 1000)), netio::Error, send_advice);
    CHECK_THROWS_MATCHES(ht.flush_and_wait(5s), netio::Error, would_block("flush_and_wait()"));
    CHECK_FALSE(ht_receiver.recv(5s).has_value());  // takes what is queued, waits for nothing
  });
  CHECK(Clock::now() - started < 3s);  // nothing waited for its 5 s (nor a send_timeout of 10 s)
}

TEST_CASE("receive sockets are destroyed on the loop thread, also inside their own callbacks",
          "[loop_thread][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context;
  netio::EventLoop& loop = context.loop();
  for (int round = 0; round < 20; ++round) {
    // A low-latency receiver destroyed inside its handler, while messages keep arriving.
    std::unique_ptr<netio::LowLatencyReceiveSocket> ll_receiver;
    std::atomic<int> handled{0};
    std::atomic<bool> ll_gone{false};
    loop.run_sync([&] {
      ll_receiver = std::make_unique<netio::LowLatencyReceiveSocket>(
          context, base, [&](std::span<const std::byte>, const netio::Peer&) {
            handled.fetch_add(1);
            ll_receiver.reset();
            ll_gone.store(true);
          });
    });
    // A high-throughput receiver destroyed when its first sender connects.
    std::unique_ptr<netio::HighThroughputReceiveSocket> ht_receiver;
    std::atomic<bool> ht_gone{false};
    netio::HighThroughputReceiveOptions ht_options;
    ht_options.events.on_connected = [&](const netio::Peer&) {
      ht_receiver.reset();
      ht_gone.store(true);
    };
    ht_receiver = std::make_unique<netio::HighThroughputReceiveSocket>(context, base, ht_options);

    netio::LowLatencySendSocket ll(context, ll_receiver->local_endpoint());
    netio::HighThroughputSendSocket ht(context, ht_receiver->local_endpoint());
    // The senders see their receivers go: that error is not what this tests.
    for (int i = 0; i < 20; ++i) {
      try {
        (void)ll.try_send(numbered(1, i));
      } catch (const netio::Error&) {
      }
      try {
        (void)ht.try_send(numbered(2, i));
      } catch (const netio::Error&) {
      }
    }
    try {
      ht.flush();
    } catch (const netio::Error&) {
    }
    REQUIRE(eventually([&] { return ll_gone.load() && ht_gone.load(); }));
    CHECK(handled.load() == 1);  // no handler after the destructor returned
  }
  // And inside a timer, with a connection up.
  std::atomic<int> count{0};
  auto receiver = std::make_unique<netio::LowLatencyReceiveSocket>(
      context, base, [&](std::span<const std::byte>, const netio::Peer&) { count.fetch_add(1); });
  netio::LowLatencySendSocket sender(context, receiver->local_endpoint());
  sender.send(numbered(1, 0));
  REQUIRE(eventually([&] { return count.load() == 1; }));
  std::promise<void> gone;
  loop.add_timer(1ms, 0ns, [&] {
    receiver.reset();
    gone.set_value();
  });
  REQUIRE(gone.get_future().wait_for(5s) == std::future_status::ready);
}

TEST_CASE("a context stops while a send socket destroyed on the loop thread is still closing",
          "[loop_thread][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  // The receiver lives in a context of its own and never reads: pages stay in flight.
  netio::Context receiver_context;
  netio::HighThroughputReceiveOptions receive_options;
  receive_options.page_credits = 1;
  netio::HighThroughputReceiveSocket receiver(receiver_context, base, receive_options);
  netio::Context context;
  netio::HighThroughputSendOptions options;
  options.page_size = 1 << 20;
  options.page_count = 32;
  auto sender = std::make_unique<netio::HighThroughputSendSocket>(context, receiver.local_endpoint(), options);
  REQUIRE(sender->wait_connected(5s));
  const std::vector<std::byte> message(1 << 20);
  int queued = 0;
  context.loop().run_sync([&] {
    while (sender->try_send(message)) ++queued;
    sender.reset();  // starts closing; the receiver does not take the pages
  });
  CHECK(queued > 0);
  context.stop();  // ends the close still in progress, with the back-ends still there
}

// TCP only: there a close that awaits its receiver has sent everything and waits for the
// receiver's close alone (libfabric sends wait for credits instead, and so does its close).
TEST_CASE("a context stops while a close awaits its receiver: the close ends, and what was sent counts as sent",
          "[loop_thread][integration]") {
  netio::Context receiver_context;  // its receiver never reads
  netio::HighThroughputReceiveOptions receive_options;
  receive_options.page_credits = 1;
  netio::HighThroughputReceiveSocket receiver(receiver_context, Endpoint::parse("tcp://127.0.0.1:0"), receive_options);
  netio::Context context;
  netio::HighThroughputSendOptions options;
  options.page_size = 4096;
  options.page_count = 16;
  options.close_awaits_receiver = true;
  auto sender = std::make_unique<netio::HighThroughputSendSocket>(context, receiver.local_endpoint(), options);
  const std::vector<std::byte> message(1000);
  for (int i = 0; i < 20; ++i) sender->send(message);  // 5 pages: 1 taken, the rest in the kernel's buffers
  REQUIRE(sender->flush_and_wait(5s));
  std::promise<std::string> closed;
  auto result = closed.get_future();
  sender->close([&closed](const netio::Error* error) { closed.set_value(error ? error->what() : ""); });
  CHECK(result.wait_for(200ms) == std::future_status::timeout);  // the receiver has not read it all
  context.stop();
  REQUIRE(result.wait_for(5s) == std::future_status::ready);
  CHECK(result.get().empty());
}
