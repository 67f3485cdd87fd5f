// SPDX-License-Identifier: MIT
// Offset-based round-robin order, the time-slice layout, and the best-effort credits.
#include "netio/error.hpp"
#include "netio/scheduler/credits.hpp"
#include "netio/scheduler/timeslice_layout.hpp"

#include <catch2/catch.hpp>

#include <set>
#include <vector>

using namespace netio::scheduler;

namespace {

SchedulerConfig config(std::uint32_t inputs, std::uint32_t computes, std::uint64_t per_interval) {
  SchedulerConfig c;
  c.input_count = inputs;
  c.compute_count = computes;
  c.timeslices_per_interval = per_interval;
  return c;
}

std::vector<TimesliceIndex> first_sends(const TimesliceLayout& layout, InputIndex i, std::uint64_t count) {
  std::vector<TimesliceIndex> order;
  for (std::uint64_t s = 0; s < count; ++s) order.push_back(layout.timeslice_at(i, s));
  return order;
}

}  // namespace

TEST_CASE("scheduler layout: time-slice t belongs to compute t mod M, intervals hold whole rounds", "[scheduler]") {
  const TimesliceLayout layout(config(3, 4, 8));  // R = 8 / 4 = 2 rounds, n = 8
  CHECK(layout.rounds_per_interval() == 2);
  CHECK(layout.timeslices_per_interval() == 8);
  CHECK(layout.compute_of(0) == 0);
  CHECK(layout.compute_of(7) == 3);
  CHECK(layout.compute_of(9) == 1);
  CHECK(layout.interval_of(7) == 0);
  CHECK(layout.interval_of(8) == 1);
  CHECK(layout.first_timeslice(2) == 16);
}

TEST_CASE("scheduler layout: the last round's places a stream of `end` does not fill", "[scheduler]") {
  const TimesliceLayout layout(config(3, 4, 8));  // rounds of 4: 0..3, 4..7
  // 6 time-slices (0..5): 6 and 7 are the second round's unfilled places, 8 on is no round of it
  CHECK_FALSE(layout.beyond_the_end(5, 6));
  CHECK(layout.beyond_the_end(6, 6));
  CHECK(layout.beyond_the_end(7, 6));
  CHECK_FALSE(layout.beyond_the_end(8, 6));
  // a stream of whole rounds leaves no such place
  CHECK_FALSE(layout.beyond_the_end(8, 8));
  CHECK_FALSE(layout.beyond_the_end(9, 8));
  CHECK_FALSE(layout.beyond_the_end(0, 0));
}

TEST_CASE("scheduler layout: input i starts every round with compute (i + offset) mod M", "[scheduler]") {
  const TimesliceLayout layout(config(3, 4, 8));
  // round 0 is time-slices 0..3, round 1 is 4..7
  CHECK(first_sends(layout, 0, 8) == std::vector<TimesliceIndex>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(first_sends(layout, 1, 8) == std::vector<TimesliceIndex>{1, 2, 3, 0, 5, 6, 7, 4});
  CHECK(first_sends(layout, 2, 8) == std::vector<TimesliceIndex>{2, 3, 0, 1, 6, 7, 4, 5});
  // at every place of a round the three inputs target three different compute nodes
  for (std::uint64_t s = 0; s < 8; ++s) {
    std::set<ComputeIndex> targets;
    for (InputIndex i = 0; i < 3; ++i) targets.insert(layout.compute_of(layout.timeslice_at(i, s)));
    CHECK(targets.size() == 3);
  }
  // the inverse
  CHECK(layout.sequence_of(1, 0) == 3);
  CHECK(layout.sequence_of(2, 7) == 5);
  CHECK(layout.sequence_of(0, 6) == 6);

  SchedulerConfig shifted = config(3, 4, 8);
  shifted.round_offset = 1;
  const TimesliceLayout offset(shifted);
  CHECK(offset.first_compute(0) == 1);
  CHECK(offset.first_compute(3 - 1) == 3);
  CHECK(first_sends(offset, 0, 4) == std::vector<TimesliceIndex>{1, 2, 3, 0});
  CHECK(first_sends(offset, 2, 4) == std::vector<TimesliceIndex>{3, 0, 1, 2});
}

TEST_CASE("scheduler credits: sized by the receiver's buffer share per input", "[scheduler]") {
  // 1 MiB shared by 4 inputs: 256 KiB each, 4 contributions of 64 KiB
  CHECK(credits_per_input(1024 * 1024, 4, 64 * 1024) == 4);
  // 1000 / 3 = 333 bytes each: 333 / 100 = 3
  CHECK(credits_per_input(1000, 3, 100) == 3);
  try {
    credits_per_input(1000, 3, 400);  // 333 bytes hold no 400-byte contribution
    FAIL("no error");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::invalid_option);
    CHECK_THAT(e.what(), Catch::Contains("1000 bytes shared by 3 inputs holds no contribution of 400 bytes"));
  }
  CHECK_THROWS_AS(credits_per_input(1000, 0, 100), netio::Error);
  CHECK_THROWS_AS(credits_per_input(1000, 1, 0), netio::Error);
}

TEST_CASE("scheduler credits: a buffer sized by credits per pair gives those credits back", "[scheduler]") {
  CHECK(min_credits_per_input == 2);
  CHECK(default_credits_per_input == 16);
  // The paper's 16 credits at 48 inputs of 16 KiB contributions: 16 × 48 × 16 KiB = 12 MiB
  CHECK(buffer_for_credits(default_credits_per_input, 48, 16 * 1024) == 12u * 1024 * 1024);
  // at 4 inputs the tool's old default, 1 MiB
  CHECK(buffer_for_credits(16, 4, 16 * 1024) == 1024u * 1024);
  CHECK(buffer_for_credits(2, 3, 1000) == 6000);
  for (const std::uint32_t credits : {1u, 2u, 16u, 1000u}) {
    for (const std::uint32_t inputs : {1u, 7u, 48u}) {
      CHECK(credits_per_input(buffer_for_credits(credits, inputs, 4096), inputs, 4096) == credits);
    }
  }
  CHECK_THROWS_AS(buffer_for_credits(0, 4, 100), netio::Error);
  CHECK_THROWS_AS(buffer_for_credits(2, 0, 100), netio::Error);
  CHECK_THROWS_AS(buffer_for_credits(2, 4, 0), netio::Error);
  try {
    buffer_for_credits(UINT32_MAX, UINT32_MAX, 1u << 20);  // beyond 64 bits
    FAIL("no error");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::invalid_option);
    CHECK_THAT(e.what(), Catch::Contains("beyond 64 bits"));
  }
}

TEST_CASE("scheduler credits: the refusal of too few credits says how many, why, and what instead", "[scheduler]") {
  const auto one = too_few_credits_message(1, "a 1 MiB buffer", "a 2 MiB buffer");
  CHECK_THAT(one, Catch::StartsWith("a 1 MiB buffer gives 1 credit per input–compute pair"));
  CHECK_THAT(one, Catch::Contains("at least 2 are needed"));
  CHECK_THAT(one, Catch::Contains("one contribution is in flight while the next waits for its credit"));
  CHECK_THAT(one, Catch::Contains("every send waits a full round trip"));
  CHECK_THAT(one, Catch::EndsWith("; give a 2 MiB buffer"));
  const auto none = too_few_credits_message(0, "x", "y");
  CHECK_THAT(none, Catch::StartsWith("x gives 0 credits per input–compute pair"));
  CHECK_THAT(none, Catch::Contains("no contribution fits"));
}

TEST_CASE("scheduler credits: an input spends one credit per contribution and gets it back", "[scheduler]") {
  InputCredits credits(2, 2);
  CHECK(credits.try_take(0));
  CHECK(credits.try_take(0));
  CHECK_FALSE(credits.try_take(0));  // compute 0's two credits are out
  CHECK(credits.available(0) == 0);
  CHECK(credits.available(1) == 2);  // compute 1's are untouched
  credits.give_back(0);
  CHECK(credits.available(0) == 1);
  CHECK_THROWS_AS(credits.give_back(0, 2), netio::Error);  // only one is out
  CHECK(credits.available(0) == 1);
  CHECK_THROWS_AS(credits.try_take(2), netio::Error);  // no compute node 2
  CHECK_THROWS_AS(InputCredits(2, 0), netio::Error);
}

TEST_CASE("scheduler credits: a complete, freed time-slice returns one credit to every input", "[scheduler]") {
  TimesliceCompletion completion(config(3, 2, 2), 1);  // compute node 1 builds the odd time-slices
  CHECK_FALSE(completion.on_contribution(2, 3));
  CHECK_FALSE(completion.on_contribution(0, 3));
  CHECK_FALSE(completion.is_complete(3));
  CHECK(completion.on_contribution(1, 3));  // the third of three
  CHECK(completion.is_complete(3));
  CHECK_THROWS_AS(completion.on_contribution(1, 3), netio::Error);  // a duplicate
  CHECK_THROWS_AS(completion.on_contribution(0, 4), netio::Error);  // 4 belongs to compute node 0
  CHECK_THROWS_AS(completion.on_contribution(3, 5), netio::Error);  // no input 3
  CHECK(completion.release(3) == std::vector<InputIndex>{0, 1, 2});
  CHECK_FALSE(completion.is_complete(3));
  // an incomplete time-slice given up (a fault) returns the credits of those who contributed
  CHECK_FALSE(completion.on_contribution(1, 5));
  CHECK(completion.open_timeslices() == 1);
  CHECK(completion.release(5) == std::vector<InputIndex>{1});
  CHECK(completion.open_timeslices() == 0);
  CHECK_THROWS_AS(completion.release(5), netio::Error);
  CHECK_THROWS_AS(TimesliceCompletion(config(3, 2, 2), 2), netio::Error);
}
