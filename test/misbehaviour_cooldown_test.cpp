// SPDX-License-Identifier: MIT
// MisbehaviourCooldown (netio/src/misbehaviour_cooldown.hpp): how long a peer process
// disconnected for misbehaving is held off, worked out offence by offence.
#include "misbehaviour_cooldown.hpp"

#include <catch2/catch.hpp>

#include <chrono>

using netio::detail::MisbehaviourCooldown;
using namespace std::chrono_literals;

namespace {
const MisbehaviourCooldown::Clock::time_point t0{std::chrono::hours(1)};
}

TEST_CASE("misbehaviour cooldown: a first offence holds the peer off for the base, then it is free", "[admission]") {
  MisbehaviourCooldown cooldown(1s);
  CHECK_FALSE(cooldown.held("pid7", t0));
  cooldown.offended("pid7", "a wake-up flood", t0);
  const auto hold = cooldown.held("pid7", t0 + 300ms);
  REQUIRE(hold);
  CHECK(hold->remaining == 700ms);
  CHECK(hold->length == 1s);
  CHECK(hold->why == "a wake-up flood");
  CHECK_FALSE(cooldown.held("pid8", t0 + 300ms));  // another process
  CHECK_FALSE(cooldown.held("pid7", t0 + 1s));
}

TEST_CASE("misbehaviour cooldown: repeats double the hold up to 64 times the base, behaving resets it", "[admission]") {
  MisbehaviourCooldown cooldown(100ms);
  auto now = t0;
  const std::chrono::milliseconds expected[] = {100ms, 200ms, 400ms, 800ms, 1600ms, 3200ms, 6400ms, 6400ms};
  for (const auto length : expected) {
    // Offends again right after each hold ends: within as long again, a repeat.
    cooldown.offended("pid7", "junk", now);
    CHECK(cooldown.held("pid7", now)->length == length);
    now += length;
  }
  // Behaves for as long as its last hold after it ended: the next offence is a first one.
  now += 6400ms;
  cooldown.offended("pid7", "junk", now);
  CHECK(cooldown.held("pid7", now)->length == 100ms);
}

TEST_CASE("misbehaviour cooldown: off at zero, at capacity the hold ending first is forgotten", "[admission]") {
  MisbehaviourCooldown off(0s);
  off.offended("pid7", "junk", t0);
  CHECK_FALSE(off.held("pid7", t0));
  MisbehaviourCooldown cooldown(1s, 2);
  cooldown.offended("pid1", "junk", t0);
  cooldown.offended("pid2", "junk", t0 + 100ms);
  cooldown.offended("pid3", "junk", t0 + 200ms);
  CHECK(cooldown.remembered() == 2);
  CHECK_FALSE(cooldown.held("pid1", t0 + 300ms));
  CHECK(cooldown.held("pid2", t0 + 300ms));
  CHECK(cooldown.held("pid3", t0 + 300ms));
}
