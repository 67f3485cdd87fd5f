// SPDX-License-Identifier: MIT
// When the libfabric receiver announces credits (credit_policy.hpp): how many credit
// messages an exchange costs, and that a sender out of credits always gets them back,
// whatever the order in which messages, returned buffers and credit messages arrive.
#include "backends/fabric/credit_policy.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <deque>
#include <random>

using netio::fabric::credit_low_watermark;
using netio::fabric::should_announce_credits;

namespace {

// Both ends of one connection, as FabricSendSocket and FabricReceiveSocket count: at most
// one credit message in flight, later returns merged into the next one.
struct Connection {
  explicit Connection(std::uint64_t window_size) : window(window_size), sender_credits(window_size) {}

  std::uint64_t window;
  std::uint64_t sender_credits;
  std::uint64_t sent = 0;
  std::uint64_t in_transit = 0;  // data messages on their way
  std::uint64_t received = 0;
  std::uint64_t held = 0;  // delivered, not yet given back by the application
  std::uint64_t returned = 0;
  std::uint64_t announced = 0;
  std::deque<std::uint64_t> credit_messages;  // running totals on their way back
  std::uint64_t credit_messages_sent = 0;
  std::uint64_t sender_seen = 0;

  bool send() {
    if (sender_credits == 0) return false;
    --sender_credits;
    ++sent;
    ++in_transit;
    return true;
  }
  bool deliver() {
    if (in_transit == 0) return false;
    --in_transit;
    ++received;
    ++held;
    REQUIRE(held + in_transit <= window);  // never more than the posted buffers
    return true;
  }
  bool give_back() {
    if (held == 0) return false;
    --held;
    ++returned;
    announce();
    return true;
  }
  void announce() {
    if (!credit_messages.empty()) return;  // one in flight; its completion tries again
    if (!should_announce_credits(window, announced, returned, received)) return;
    credit_messages.push_back(returned);
    announced = returned;
    ++credit_messages_sent;
  }
  bool credit_arrives() {
    if (credit_messages.empty()) return false;
    const std::uint64_t total = credit_messages.front();
    credit_messages.pop_front();
    sender_credits += total - sender_seen;
    sender_seen = total;
    announce();  // the credit message's send completion
    return true;
  }
};

// One message at a time, answered before the next: how many credit messages per message.
double credit_messages_per_message_in_ping_pong(std::uint64_t window) {
  Connection c(window);
  constexpr int messages = 1200;
  for (int i = 0; i < messages; ++i) {
    REQUIRE(c.send());
    REQUIRE(c.deliver());
    REQUIRE(c.give_back());
    while (c.credit_arrives()) {
    }
  }
  return static_cast<double>(c.credit_messages_sent) / messages;
}

}  // namespace

TEST_CASE("credit policy: the sender may be down to a quarter of its window, at least one buffer",
          "[fabric][credits]") {
  CHECK(credit_low_watermark(1) == 1);
  CHECK(credit_low_watermark(4) == 1);
  CHECK(credit_low_watermark(8) == 2);
  CHECK(credit_low_watermark(16) == 4);
  // Nothing to announce, or the sender has more than the watermark left: hold back.
  CHECK_FALSE(should_announce_credits(4, 0, 0, 3));
  CHECK_FALSE(should_announce_credits(4, 0, 2, 2));
  CHECK(should_announce_credits(4, 0, 2, 3));
  CHECK(should_announce_credits(4, 0, 1, 4));  // out of credits: whatever came back goes
  CHECK(should_announce_credits(1, 0, 1, 1));
}

TEST_CASE("credit policy: a ping-pong pays one credit message per window minus a quarter", "[fabric][credits]") {
  CHECK(credit_messages_per_message_in_ping_pong(1) == Approx(1.0));
  CHECK(credit_messages_per_message_in_ping_pong(4) == Approx(1.0 / 3));
  CHECK(credit_messages_per_message_in_ping_pong(8) == Approx(1.0 / 6));
  CHECK(credit_messages_per_message_in_ping_pong(16) == Approx(1.0 / 12));
}

TEST_CASE("credit policy: a sender out of credits always gets them back, in any order of events", "[fabric][credits]") {
  for (const std::uint64_t window : {1u, 2u, 3u, 4u, 5u, 8u, 16u}) {
    CAPTURE(window);
    std::mt19937 random(static_cast<std::uint32_t>(window));
    Connection c(window);
    constexpr std::uint64_t messages = 5000;
    while (c.received < messages) {
      // Whatever can happen next, in random order; the application sometimes holds buffers.
      bool moved = false;
      for (int attempt = 0; attempt < 16 && !moved; ++attempt) {
        switch (random() % 4) {
          case 0: moved = c.sent < messages && c.send(); break;
          case 1: moved = c.deliver(); break;
          case 2: moved = c.give_back(); break;
          default: moved = c.credit_arrives(); break;
        }
      }
      if (moved) continue;
      // Nothing chosen moved: try everything once; if still nothing can, it is a deadlock.
      moved = (c.sent < messages && c.send()) || c.deliver() || c.give_back() || c.credit_arrives();
      REQUIRE(moved);
    }
    CHECK(c.received == messages);
  }
}
