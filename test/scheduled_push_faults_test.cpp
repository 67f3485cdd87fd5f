// SPDX-License-Identifier: MIT
// Faults in the scheduled-push pattern, on loopback over every back-end and in both modes: a
// compute node that goes away, or stops making progress, has its time-slices built by the
// others (the inputs retain each contribution until its credit comes back, and resend what
// the lost node never built, with a higher delivery number), also one it held half of when
// it went; an input that goes away or falls silent leaves
// incomplete time-slices, which the compute nodes report and free, in order, crediting the
// inputs that did contribute, so that the others finish.
#include "netio/low_latency_socket.hpp"
#include "netio/scheduled_push/wire.hpp"
#include "support/scheduled_push_system.hpp"

#include <atomic>
#include <mutex>

#include <catch2/catch.hpp>

using namespace netio;
using namespace netio::test;

TEST_CASE("A compute node that goes away: its time-slices are built by the others", "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  const auto mode = GENERATE(ns::Mode::best_effort, ns::Mode::dfs);
  INFO(ns::to_string(mode));
  const auto options = three_by_three(mode);
  const ns::TimesliceIndex count = 3 * 300;
  System system(base, options);
  // A third of the time-slices, then compute node 2 goes away, then the rest.
  REQUIRE(system.push_range(0, count / 3, false).empty());
  CHECK(eventually([&] { return system.deliveries(2).count() >= 20; }));
  system.receiver_slot(2).reset();
  REQUIRE(system.push_range(count / 3, count, true).empty());
  for (ns::InputIndex i = 0; i < 3; ++i) {
    CHECK(system.sender(i).wait_finished(30s));
    const auto stats = system.sender(i).stats();
    INFO("input " << i);
    CHECK(stats.computes_lost == 1);
    CHECK(stats.undeliverable == 0);
    CHECK(stats.unbuilt == 0);
    CHECK(stats.reassigned > 0);
    CHECK(system.undeliverable(i).empty());
    CHECK(stats.retained == 0);
    CHECK(stats.peak_retained <= 2 * 3 * options.credits);  // own and reassigned, each bounded by the credits
  }
  // Every time-slice was built, node 2's before it went there, the rest by nodes 0 and 1.
  CHECK(eventually([&] {
    return system.deliveries(0).count() + system.deliveries(1).count() + system.deliveries(2).count() >= count;
  }));
  (void)check_each_built_once_per_attempt(system, 3, count);
  for (ns::ComputeIndex c = 0; c < 2; ++c) CHECK(system.incomplete(c).count() == 0);
}

TEST_CASE("A compute node lost while a time-slice is half delivered: the others build it complete, once",
          "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  const auto mode = GENERATE(ns::Mode::best_effort, ns::Mode::dfs);
  const auto assignment = GENERATE(ns::Assignment::fixed, ns::Assignment::load);
  INFO(ns::to_string(mode) << (assignment == ns::Assignment::load ? ", by load" : ", fixed"));
  auto options = three_by_three(mode);
  options.config.assignment = assignment;
  const ns::TimesliceIndex count = 3 * 60;
  const ns::TimesliceIndex together = 3 * 10;     // every input sends these, then
  const ns::TimesliceIndex ahead = together + 6;  // inputs 0 and 1 send two rounds more
  System system(base, options);
  REQUIRE(system.push_range(0, together, false).empty());
  CHECK(eventually([&] { return system.deliveries(2).count() >= together / 3; }));
  std::vector<std::thread> ahead_threads;
  for (ns::InputIndex i : {0u, 1u}) {
    ahead_threads.emplace_back([&, i] {
      for (ns::TimesliceIndex t = together; t < ahead; ++t) system.sender(i).push(t, contribution(i, t));
    });
  }
  for (auto& t : ahead_threads) t.join();
  // Node 2 holds inputs 0's and 1's contributions to its two time-slices of those rounds
  // (under the fixed assignment 32 and 35), and input 2 has sent it neither: it goes now.
  CHECK(eventually([&] { return system.sender(0).stats().sent + system.sender(1).stats().sent >= 2 * ahead; }));
  std::this_thread::sleep_for(50ms);  // on their way on loopback: arrived
  system.receiver_slot(2).reset();
  std::vector<std::string> errors(3);
  std::vector<std::thread> threads;
  for (ns::InputIndex i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      try {
        for (ns::TimesliceIndex t = i == 2 ? together : ahead; t < count; ++t)
          system.sender(i).push(t, contribution(i, t));
        system.sender(i).finish();
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) CHECK(e.empty());
  for (ns::InputIndex i = 0; i < 3; ++i) {
    INFO("input " << i);
    CHECK(system.sender(i).wait_finished(30s));
    const auto stats = system.sender(i).stats();
    CHECK(stats.computes_lost == 1);
    CHECK(stats.lost_computes == std::vector<ns::ComputeIndex>{2});
    CHECK(stats.undeliverable + stats.unbuilt == 0);
  }
  CHECK(eventually([&] {
    return system.deliveries(0).count() + system.deliveries(1).count() + system.deliveries(2).count() >= count;
  }));
  (void)check_each_built_once_per_attempt(system, 3, count);
  for (ns::ComputeIndex c = 0; c < 2; ++c) CHECK(system.incomplete(c).count() == 0);
  if (assignment == ns::Assignment::load) {
    // The coordinator heard of the loss and gives the lost node no share any more.
    const auto dde = system.dde_slot(0)->stats();
    CHECK(dde.computes_reported_lost == std::vector<ns::ComputeIndex>{2});
    REQUIRE(dde.assigned_shares.size() == 3);
    CHECK(dde.assigned_shares[2] == 0);
    CHECK(dde.assigned_interval >= 10);
  }
}

TEST_CASE("A compute node that stops consuming but keeps its connection is lost after the progress timeout",
          "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  const auto mode = GENERATE(ns::Mode::best_effort, ns::Mode::dfs);
  INFO(ns::to_string(mode));
  auto options = three_by_three(mode);
  options.progress_timeout = 300ms;
  // Node 2's consumer keeps every time-slice from its tenth on and never releases it: its
  // credits run out and it returns none, its connections stay open.
  std::mutex kept_mutex;
  std::vector<sp::Timeslice> kept;
  std::atomic<int> node2_seen{0};
  options.keep = [&](ns::ComputeIndex c, sp::Timeslice slice) {
    if (c != 2 || ++node2_seen <= 10) return;  // released at once
    std::lock_guard lock(kept_mutex);
    kept.push_back(std::move(slice));
  };
  const ns::TimesliceIndex count = 3 * 100;
  System system(base, options);
  REQUIRE(system.push_all(count).empty());
  for (ns::InputIndex i = 0; i < 3; ++i) {
    INFO("input " << i);
    CHECK(system.sender(i).wait_finished(30s));
    const auto stats = system.sender(i).stats();
    CHECK(stats.computes_lost == 1);
    CHECK(stats.reassigned > 0);
    CHECK(stats.undeliverable + stats.unbuilt == 0);
    // Back-pressure: while node 2 held every credit the queue filled and push() waited.
    CHECK(stats.pushes_blocked > 0);
    CHECK(stats.push_blocked_ns > 0);
    CHECK(stats.push_timeouts == 0);
  }
  CHECK(eventually([&] {
    return system.deliveries(0).count() + system.deliveries(1).count() + system.deliveries(2).count() >= count;
  }));
  (void)check_each_built_once_per_attempt(system, 3, count);
  for (ns::ComputeIndex c = 0; c < 2; ++c) CHECK(system.incomplete(c).count() == 0);
}

TEST_CASE("An input that goes away leaves incomplete time-slices, reported and freed in order", "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  const auto mode = GENERATE(ns::Mode::best_effort, ns::Mode::dfs);
  INFO(ns::to_string(mode));
  auto options = three_by_three(mode);
  options.incomplete_timeout = 0s;  // only its disconnection gives up on its time-slices
  const ns::TimesliceIndex count = 3 * 200;
  const ns::TimesliceIndex leaves_at = 3 * 50;
  System system(base, options);

  // Inputs 0 and 2 push everything; input 1 pushes a quarter, then its node goes away.
  std::vector<std::string> errors(3);
  std::vector<std::thread> threads;
  for (ns::InputIndex i : {0u, 2u}) {
    threads.emplace_back([&, i] {
      try {
        for (ns::TimesliceIndex t = 0; t < count; ++t) system.sender(i).push(t, contribution(i, t));
        system.sender(i).finish();
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  try {
    for (ns::TimesliceIndex t = 0; t < leaves_at; ++t) system.sender(1).push(t, contribution(1, t));
  } catch (const std::exception& e) {
    errors[1] = e.what();
  }
  // Let some of what it pushed go out, then it vanishes (its connections close).
  CHECK(eventually([&] { return system.sender(1).stats().sent >= 30; }));
  system.sender_slot(1).reset();
  for (auto& t : threads) t.join();
  for (const auto& e : errors) CHECK(e.empty());

  for (ns::InputIndex i : {0u, 2u}) CHECK(system.sender(i).wait_finished(30s));
  std::size_t incomplete = 0;
  for (ns::ComputeIndex c = 0; c < 3; ++c) {
    const bool all = eventually([&] { return system.deliveries(c).count() >= count / 3; });
    CHECK(all);
    incomplete += check_in_order(system, c, 3, count);
    const auto stats = system.receiver(c).stats();
    CHECK(stats.held_bytes == 0);  // every buffer freed
    CHECK(stats.peak_held_bytes <= system.buffer_bytes());
    for (const auto& d : system.incomplete(c).copy()) {
      CHECK(d.contributions == 2);  // everyone but input 1
      CHECK(d.t >= 30);
    }
  }
  CHECK(incomplete >= count - leaves_at);  // at least every time-slice it never got to
}

TEST_CASE("An input that falls silent: its time-slices are given up after the timeout", "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  auto options = three_by_three(ns::Mode::best_effort);
  options.incomplete_timeout = 200ms;
  const ns::TimesliceIndex count = 3 * 40;
  const ns::TimesliceIndex stops_at = 3 * 10;
  System system(base, options);
  std::vector<std::string> errors(3);
  std::vector<std::thread> threads;
  for (ns::InputIndex i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      try {
        // Input 1 stays connected but pushes only the first 10 rounds.
        const auto last = i == 1 ? stops_at : count;
        for (ns::TimesliceIndex t = 0; t < last; ++t) system.sender(i).push(t, contribution(i, t));
        if (i != 1) system.sender(i).finish();
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) CHECK(e.empty());
  // Each compute node gives up on one time-slice per timeout (each waits 200 ms from its
  // first contribution, and they arrived close together, so they expire together).
  for (ns::InputIndex i : {0u, 2u}) CHECK(system.sender(i).wait_finished(30s));
  for (ns::ComputeIndex c = 0; c < 3; ++c) {
    CHECK(eventually([&] { return system.deliveries(c).count() >= count / 3; }, 30s));
    const auto incomplete = check_in_order(system, c, 3, count);
    CHECK(incomplete == (count - stops_at) / 3);
    CHECK(system.receiver(c).stats().held_bytes == 0);
  }
}

TEST_CASE("Junk and mismatched inputs are refused without disturbing the system", "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  auto options = three_by_three(ns::Mode::best_effort);
  options.config.compute_count = 2;
  const ns::TimesliceIndex count = 2 * 100;
  System system(base, options);

  // A socket that sends junk, and a contribution without a hello.
  Context stranger_context(context_options());
  {
    LowLatencySendSocket stranger(stranger_context, system.receiver(0).local_endpoint());
    stranger.send(std::vector<std::byte>(40, std::byte{0xAB}));
    stranger.send(sp::encode_contribution(0, 0, std::vector<std::byte>(8)));
    REQUIRE(stranger.wait_sent(5s));
  }
  // An input of another system (4 inputs): both compute nodes refuse it and it loses them.
  auto wrong = system.sender_options(0);
  wrong.config.input_count = 4;
  std::atomic<int> undeliverable{0};
  wrong.on_undeliverable = [&](ns::TimesliceIndex, ns::ComputeIndex) { ++undeliverable; };
  sp::TimesliceSender mismatched(system.sender_context(0), wrong);
  CHECK(eventually([&] { return mismatched.stats().computes_lost == 2; }));
  mismatched.push(0, contribution(0, 0));
  mismatched.finish();
  CHECK(mismatched.wait_finished(10s));
  CHECK(undeliverable == 1);

  REQUIRE(system.push_all(count).empty());
  for (ns::InputIndex i = 0; i < 3; ++i) CHECK(system.sender(i).wait_finished(30s));
  for (ns::ComputeIndex c = 0; c < 2; ++c) {
    CHECK(eventually([&] { return system.deliveries(c).count() >= count / 2; }));
    check_complete_in_order(system, c, 2, count);
  }
  CHECK(system.receiver(0).stats().dropped == 2);
}
