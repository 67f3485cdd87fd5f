// SPDX-License-Identifier: MIT
// Start order (netio/socket_options.hpp), on every back-end: a send socket made before its
// receiver, and a subscriber before its publisher, connect once the peer appears and lose
// nothing sent after that point; a peer that never comes fails the connection at
// connect_timeout with Errc::timeout naming it; a socket destroyed while it retries goes at
// once.
#include "support/loopback_port.hpp"
#include "support/pubsub_test.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include "netio/high_throughput_socket.hpp"
#include "netio/low_latency_socket.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using netio::test::LoopbackPort;
using netio::test::pattern;
using Clock = std::chrono::steady_clock;

namespace {

// The message numbered `i`: its number, then a pattern of it.
std::vector<std::byte> numbered_message(std::uint64_t i) {
  auto bytes = pattern(64, i);
  std::memcpy(bytes.data(), &i, sizeof i);
  return bytes;
}

std::uint64_t number_of(std::span<const std::byte> bytes) {
  std::uint64_t i = 0;
  if (bytes.size() != 64) return ~std::uint64_t{0};
  std::memcpy(&i, bytes.data(), sizeof i);
  const auto expected = numbered_message(i);
  return std::equal(bytes.begin(), bytes.end(), expected.begin()) ? i : ~std::uint64_t{0};
}

}  // namespace

TEST_CASE("a send socket made before its receiver delivers everything once the receiver appears",
          "[connect_retry][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  const bool high_throughput = GENERATE(false, true);
  CAPTURE(base.scheme, high_throughput);
  netio::Context context(netio::test::context_options());
  LoopbackPort later(LoopbackPort::Kind::refusing);  // the receiver's port, nobody there yet
  const Endpoint remote = later.endpoint(base);
  constexpr std::uint64_t count = 40;  // fits the buffers: send() does not wait

  std::unique_ptr<netio::LowLatencySendSocket> low_latency;
  std::unique_ptr<netio::HighThroughputSendSocket> pages;
  if (high_throughput) {
    netio::HighThroughputSendOptions options;
    options.connect_timeout = 20s;
    options.page_size = 64 * 1024;
    pages = std::make_unique<netio::HighThroughputSendSocket>(context, remote, options);
  } else {
    netio::LowLatencySendOptions options;
    options.connect_timeout = 20s;
    low_latency = std::make_unique<netio::LowLatencySendSocket>(context, remote, options);
  }
  for (std::uint64_t i = 0; i < count; ++i) {
    if (pages)
      pages->send(numbered_message(i));
    else
      low_latency->send(numbered_message(i));
  }
  if (pages) pages->flush();
  std::this_thread::sleep_for(300ms);  // several attempts refused
  const bool failed = pages ? pages->failure().has_value() : low_latency->failure().has_value();
  const bool connected = pages ? pages->connected() : low_latency->connected();
  CHECK_FALSE(failed);  // still trying
  CHECK_FALSE(connected);

  later.release();
  std::mutex mutex;
  std::vector<std::uint64_t> seen;
  auto take = [&](std::span<const std::byte> message) {
    std::lock_guard lock(mutex);
    seen.push_back(number_of(message));
  };
  std::unique_ptr<netio::LowLatencyReceiveSocket> ll_receiver;
  std::unique_ptr<netio::HighThroughputReceiveSocket> ht_receiver;
  if (high_throughput) {
    ht_receiver = std::make_unique<netio::HighThroughputReceiveSocket>(context, remote);
  } else {
    ll_receiver = std::make_unique<netio::LowLatencyReceiveSocket>(
        context, remote, [&](std::span<const std::byte> message, const netio::Peer&) { take(message); });
  }
  const bool up = pages ? pages->wait_connected(15s) : low_latency->wait_connected(15s);
  REQUIRE(up);
  if (ht_receiver) {
    for (std::uint64_t i = 0; i < count; ++i) {
      auto message = ht_receiver->recv(10s);
      REQUIRE(message);
      take(message->bytes());
    }
  }
  REQUIRE(eventually([&] {
    std::lock_guard lock(mutex);
    return seen.size() == count;
  }));
  std::lock_guard lock(mutex);
  for (std::uint64_t i = 0; i < count; ++i) REQUIRE(seen[i] == i);
}

TEST_CASE("a receiver that never comes fails the connection at connect_timeout, naming it and the attempts",
          "[connect_retry][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  const LoopbackPort refusing(LoopbackPort::Kind::refusing);
  const Endpoint remote = refusing.endpoint(base);
  netio::LowLatencySendOptions options;
  options.connect_timeout = 400ms;
  options.identity.name = "early-sender";
  const auto started = Clock::now();
  netio::LowLatencySendSocket sender(context, remote, options);
  sender.send(numbered_message(1));  // queued meanwhile
  try {
    (void)sender.wait_connected(20s);
    FAIL("connected to nobody");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::timeout);
    CHECK_THAT(e.what(), Catch::Contains(remote.to_string()));
    CHECK_THAT(e.what(), Catch::Contains("early-sender"));
    CHECK_THAT(e.what(), Catch::Contains("attempt"));
    CHECK_THAT(e.what(), Catch::Contains("400 ms"));
  }
  CHECK(Clock::now() - started >= 400ms);  // it did wait, trying again
  REQUIRE(sender.failure());
  CHECK(sender.failure()->code() == netio::Errc::timeout);
  CHECK_THROWS_AS(sender.send(numbered_message(2)), netio::Error);
}

TEST_CASE("a send socket destroyed or closed while it retries ends at once", "[connect_retry][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  const LoopbackPort refusing(LoopbackPort::Kind::refusing);
  const Endpoint remote = refusing.endpoint(base);
  const bool destroy = GENERATE(true, false);
  CAPTURE(base.scheme, destroy);
  netio::HighThroughputSendOptions options;
  options.connect_timeout = netio::connect_forever;
  options.send_timeout = 30s;  // what a close would otherwise wait for the queued pages
  auto sender = std::make_unique<netio::HighThroughputSendSocket>(context, remote, options);
  sender->send(numbered_message(1));
  sender->flush();
  std::this_thread::sleep_for(200ms);
  REQUIRE_FALSE(sender->failure());  // still trying
  const auto started = Clock::now();
  if (destroy) {
    sender.reset();
  } else {
    std::promise<std::optional<netio::Errc>> closed;
    sender->close([&closed](const netio::Error* error) {
      closed.set_value(error ? std::optional(static_cast<netio::Errc>(error->code().value())) : std::nullopt);
    });
    auto result = closed.get_future();
    REQUIRE(result.wait_for(10s) == std::future_status::ready);
    CHECK(result.get() == netio::Errc::closed);  // what was queued is dropped, and said so
  }
  CHECK(Clock::now() - started < 2s);  // not send_timeout's 30 s
}

TEST_CASE("a subscriber started 2 s before its publisher gets every record published after the acknowledgement",
          "[connect_retry][pubsub][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  CAPTURE(base.scheme);
  netio::Context context(netio::test::context_options());
  LoopbackPort later(LoopbackPort::Kind::refusing);  // the publisher's port, nobody there yet
  const Endpoint at = later.endpoint(base);
  SubscribeOptions options;
  options.connect_timeout = 20s;
  SubscribeSocket subscriber(context, options);
  constexpr Tag tag = 5;
  std::promise<std::string> acknowledged;
  const auto started = Clock::now();
  std::thread subscribing([&] {
    try {
      subscriber.subscribe(at, tag);  // blocks until the publisher, started later, acknowledges
      acknowledged.set_value("");
    } catch (const netio::Error& e) {
      acknowledged.set_value(e.what());
    }
  });
  std::this_thread::sleep_for(2s);
  later.release();
  PublishSocket publisher(context, at);
  auto ack = acknowledged.get_future();
  const bool answered = ack.wait_for(20s) == std::future_status::ready;
  subscribing.join();
  REQUIRE(answered);
  REQUIRE(ack.get().empty());
  CHECK(Clock::now() - started >= 2s);

  constexpr std::uint64_t count = 200;
  for (std::uint64_t i = 0; i < count; ++i) publisher.publish(tag, pubsub_message(tag, i));
  publisher.flush();
  for (std::uint64_t i = 0; i < count; ++i) {
    auto publication = subscriber.recv(10s);
    REQUIRE(publication);
    CHECK(publication->tag() == tag);
    REQUIRE(netio::test::pubsub_sequence(tag, publication->data()) == i);
  }
}

TEST_CASE("a send that finds every buffer queued for a receiver not there yet says so",
          "[connect_retry][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  const LoopbackPort refusing(LoopbackPort::Kind::refusing);
  netio::LowLatencySendOptions options;
  options.buffer_count = 2;
  options.send_timeout = 200ms;
  options.connect_timeout = netio::connect_forever;
  netio::LowLatencySendSocket sender(context, refusing.endpoint(base), options);
  sender.send(numbered_message(1));  // the pool bounds what waits: two messages
  sender.send(numbered_message(2));
  try {
    sender.send(numbered_message(3));
    FAIL("a third message was queued");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::timeout);
    CHECK_THAT(e.what(), Catch::Contains("not connected yet"));
  }
  CHECK_FALSE(sender.failure());  // back-pressure, not a failure: it still tries
}
