// SPDX-License-Identifier: MIT
// User callbacks that throw. The policy (docs/design/layers.md, "Errors"): whatever a
// callback throws (a std::exception or anything else) is caught where netio called it and
// logged with the socket's endpoint; the message counts as delivered, the connection stays
// up, the event loop keeps running, and bookkeeping after the callback (forgetting a
// connection that went away) still happens.
#include "netio/backend/event_loop.hpp"
#include "netio/context.hpp"
#include "netio/error.hpp"
#include "netio/low_latency_socket.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <stdexcept>
#include <vector>

using namespace std::chrono_literals;
using netio::Endpoint;
using netio::test::eventually;

namespace {
std::vector<std::byte> bytes_of(std::uint32_t n) {
  std::vector<std::byte> b(4);
  for (int i = 0; i < 4; ++i) b[static_cast<std::size_t>(i)] = static_cast<std::byte>(n >> (8 * i));
  return b;
}
}  // namespace

TEST_CASE("a message handler that throws loses no later message and keeps the connection", "[faults][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  std::atomic<int> calls{0};
  std::atomic<std::uint32_t> next{0};
  std::atomic<bool> in_order{true};
  netio::LowLatencyReceiveSocket receiver(
      context, base, [&](std::span<const std::byte> message, const netio::Peer& peer) {
        std::uint32_t n = 0;
        for (int i = 0; i < 4; ++i)
          n |= std::to_integer<std::uint32_t>(message[static_cast<std::size_t>(i)]) << (8 * i);
        if (n != next.load()) in_order = false;
        next = n + 1;
        ++calls;
        if (n % 3 == 1) throw std::runtime_error("a handler failing on purpose");
        if (n % 3 == 2) throw 42;  // not even a std::exception
        peer.try_reply(message);
      });
  netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
  constexpr std::uint32_t count = 300;
  for (std::uint32_t i = 0; i < count; ++i) sender.send(bytes_of(i));
  REQUIRE(eventually([&] { return calls.load() == static_cast<int>(count); }));
  CHECK(in_order);
  // The replies the handlers made before throwing stopped them (as many as the sender's
  // reply window took), then one more round trip: the connection still works both ways.
  int replies = 0;
  while (sender.recv_reply(500ms)) ++replies;
  CHECK(replies > 0);
  CHECK(receiver.stats().disconnects == 0);
  sender.send(bytes_of(count));  // count % 3 == 0: answered
  CHECK(eventually([&] { return calls.load() == static_cast<int>(count) + 1; }));
  const auto reply = sender.recv_reply(5s);
  REQUIRE(reply);
  const auto expected = bytes_of(count);
  CHECK(std::equal(reply->bytes().begin(), reply->bytes().end(), expected.begin(), expected.end()));
}

TEST_CASE("connection events that throw leave the receiver serving and forgetting peers", "[faults][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  std::atomic<int> connected{0}, disconnected{0}, messages{0};
  netio::LowLatencyReceiveOptions options;
  options.events.on_connected = [&](const netio::Peer&) {
    ++connected;
    throw std::runtime_error("on_connected failing on purpose");
  };
  options.events.on_disconnected = [&](const netio::Peer&, const netio::Error&) {
    ++disconnected;
    throw 7;
  };
  netio::LowLatencyReceiveSocket receiver(
      context, base, [&](std::span<const std::byte>, const netio::Peer&) { ++messages; }, options);
  for (int round = 1; round <= 3; ++round) {
    {
      netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
      sender.send(bytes_of(1));
      sender.send(bytes_of(2));
      REQUIRE(eventually([&] { return messages.load() == 2 * round; }));
    }
    REQUIRE(eventually([&] { return disconnected.load() == round; }));
    CHECK(connected.load() == round);
  }
  const auto stats = receiver.stats();
  CHECK(stats.connections == 3);
  CHECK(stats.disconnects == 3);
}

TEST_CASE("a reply handler that throws keeps taking replies", "[faults][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  netio::LowLatencyReceiveSocket receiver(
      context, base, [](std::span<const std::byte> message, const netio::Peer& peer) { peer.try_reply(message); });
  std::atomic<int> replies{0};
  netio::LowLatencySendOptions options;
  options.replies.on_reply = [&](std::span<const std::byte>) {
    if (++replies % 2 == 0) throw std::runtime_error("a reply handler failing on purpose");
    throw 3;
  };
  netio::LowLatencySendSocket sender(context, receiver.local_endpoint(), options);
  for (std::uint32_t i = 0; i < 50; ++i) {
    sender.send(bytes_of(i));
    // One at a time: the receiver's reply window never fills, so every reply is sent.
    REQUIRE(eventually([&] { return replies.load() == static_cast<int>(i) + 1; }));
  }
  CHECK(receiver.stats().disconnects == 0);
}

TEST_CASE("posted tasks and timers that throw anything leave the loop running", "[faults][event_loop]") {
  netio::Context context(netio::test::context_options());
  std::atomic<int> ran{0};
  context.loop().post([] { throw std::runtime_error("a task failing on purpose"); });
  context.loop().post([] { throw 1; });
  context.loop().add_timer(1ms, 0ms, [] { throw "a timer failing on purpose"; });
  context.loop().add_timer(2ms, 0ms, [&] { ++ran; });
  context.loop().post([&] { ++ran; });
  CHECK(eventually([&] { return ran.load() == 2; }));
  context.loop().run_sync([&] { ++ran; });
  CHECK(ran.load() == 3);
}
