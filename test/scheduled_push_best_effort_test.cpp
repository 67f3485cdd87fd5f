// SPDX-License-Identifier: MIT
// The scheduled-push pattern in best-effort mode (FLESnet's baseline), end to end on
// loopback over both back-ends: every time-slice is built completely, in order and with
// the right bytes, and the credits bound what a receiver holds.
#include "netio/scheduler/credits.hpp"
#include "support/scheduled_push_system.hpp"

#include <catch2/catch.hpp>

using namespace netio;
using namespace netio::test;

namespace {

void run_complete_system(const std::string& base, std::uint32_t inputs, std::uint32_t computes,
                         ns::TimesliceIndex count, std::uint32_t credits, bool size_by_credits = false) {
  SystemOptions options;
  options.config.input_count = inputs;
  options.config.compute_count = computes;
  options.config.timeslices_per_interval = 4 * computes;
  options.credits = credits;
  options.size_by_credits = size_by_credits;
  System system(base, options);
  for (ns::ComputeIndex c = 0; c < computes; ++c) {
    REQUIRE(system.receiver(c).credits_per_input() == credits);
    REQUIRE(system.receiver(c).receive_buffer_bytes() == system.buffer_bytes());
  }

  const auto push_errors = system.push_all(count);
  REQUIRE(push_errors.empty());
  for (ns::InputIndex i = 0; i < inputs; ++i) CHECK(system.sender(i).wait_finished(30s));
  CHECK(wait_all_delivered(system, computes, count));

  for (ns::ComputeIndex c = 0; c < computes; ++c) {
    check_complete_in_order(system, c, computes, count);
    const auto stats = system.receiver(c).stats();
    CHECK(stats.complete == count / computes);
    CHECK(stats.incomplete == 0);
    CHECK(stats.dropped == 0);
    CHECK(stats.held_bytes == 0);
    // Credits bound what is held: never more than the receive buffer.
    CHECK(stats.peak_held_bytes > 0);
    CHECK(stats.peak_held_bytes <= system.buffer_bytes());
  }
  for (ns::InputIndex i = 0; i < inputs; ++i) {
    const auto stats = system.sender(i).stats();
    CHECK(stats.sent == count);
    CHECK(stats.undeliverable == 0);
    CHECK(stats.credits_returned == count);
    CHECK(stats.incomplete_credits == 0);
    CHECK(stats.computes_lost == 0);
  }
}

}  // namespace

TEST_CASE("Best-effort scheduled push builds every time-slice of a 3x3 system in order", "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  run_complete_system(base, 3, 3, 900, 3);
}

TEST_CASE("Best-effort scheduled push builds every time-slice of a 4x2 system in order", "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  run_complete_system(base, 4, 2, 800, 2);
}

TEST_CASE(
    "With the fewest credits per pair (2, sized by credits_per_input), a receiver never holds more than its "
    "derived buffer",
    "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  run_complete_system(base, 3, 2, 300, ns::min_credits_per_input, true);
}

TEST_CASE("A slow consumer: credits hold the inputs back and its buffer never overflows", "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  SystemOptions options;
  options.config.input_count = 3;
  options.config.compute_count = 3;
  options.config.timeslices_per_interval = 12;
  options.credits = 2;
  options.slow_consumer = std::chrono::microseconds(2000);  // compute node 0 takes 2 ms per time-slice
  const ns::TimesliceIndex count = 3 * 100;
  System system(base, options);
  REQUIRE(system.push_all(count).empty());
  for (ns::InputIndex i = 0; i < 3; ++i) CHECK(system.sender(i).wait_finished(30s));
  for (ns::ComputeIndex c = 0; c < 3; ++c) {
    CHECK(eventually([&] { return system.deliveries(c).count() >= count / 3; }));
    check_complete_in_order(system, c, 3, count);
  }
  // The inputs ran into compute node 0's credits: it held contributions up to its credits'
  // worth (2 per input: at least 3 × 2 × 16 bytes, typically ~3 KiB), never more than its buffer.
  const auto slow = system.receiver(0).stats();
  CHECK(slow.peak_held_bytes <= system.buffer_bytes());
  CHECK(slow.peak_held_bytes >= 3 * 2 * 16);
  // The fast compute nodes are held back too (the inputs send in order), but never overflow.
  for (ns::ComputeIndex c = 1; c < 3; ++c) CHECK(system.receiver(c).stats().peak_held_bytes <= system.buffer_bytes());
}

TEST_CASE("A stream that ends within a round: every time-slice pushed is built, and the inputs finish",
          "[scheduled_push]") {
  // Input i sends each round from place i on (DFS's offsets, the same order in best-effort):
  // in a last round that is not whole, input 1's first place is a time-slice nobody pushed.
  const auto base = GENERATE(loopback_endpoints());
  const auto mode = GENERATE(ns::Mode::best_effort, ns::Mode::dfs);
  CAPTURE(base, ns::to_string(mode));
  SystemOptions options;
  options.mode = mode;
  options.config.input_count = 3;
  options.config.compute_count = 3;
  options.config.timeslices_per_interval = 4 * 3;
  options.config.history_length = 3;
  options.credits = 3;
  const ns::TimesliceIndex count = 3 * 4 * 10 + 1;  // one time-slice into a round
  System system(base, options);
  REQUIRE(system.push_all(count).empty());
  for (ns::InputIndex i = 0; i < 3; ++i) CHECK(system.sender(i).wait_finished(10s));
  REQUIRE(eventually([&] {
    return system.deliveries(0).count() + system.deliveries(1).count() + system.deliveries(2).count() == count;
  }));
  for (ns::ComputeIndex c = 0; c < 3; ++c) {
    for (const auto& d : system.deliveries(c).copy()) {
      CHECK(d.complete);
      CHECK(d.content_ok);
      CHECK(d.t < count);
    }
    CHECK(system.incomplete(c).count() == 0);
  }
  for (ns::InputIndex i = 0; i < 3; ++i) {
    CHECK(system.sender(i).stats().sent == count);
    CHECK(system.sender(i).stats().computes_lost == 0);
  }
}
