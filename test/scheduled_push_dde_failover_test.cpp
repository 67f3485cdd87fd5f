// SPDX-License-Identifier: MIT
// DDE failover in the scheduled-push pattern, on loopback over every back-end: two DDE
// replicas run inside compute nodes 0 and 1 (run_dde, as netio_tsbench runs them), and compute
// node 0 dies in the middle of a run, its receiver and its replica with it (their connections
// close as if the process died). The surviving replica goes on: DFS's proposals keep coming
// and the inputs keep pacing by them, every interval still gets its assignment by load (no
// input waits for one for ever), and node 0's time-slices are built by the others: none lost.
// A DDE keeps an assignment an input's reply window could not take and sends it later.
#include "netio/low_latency_socket.hpp"
#include "netio/scheduler/assignment_messages.hpp"
#include "support/scheduled_push_system.hpp"

#include <catch2/catch.hpp>

#include <set>
#include <thread>

using namespace netio;
using namespace netio::test;

namespace {

struct FailoverSetting {
  ns::Mode mode;
  ns::Assignment assignment;
};

std::string describe_setting(const FailoverSetting& s) {
  return std::string(ns::to_string(s.mode)) + (s.assignment == ns::Assignment::load ? " + load" : " + fixed");
}

SystemOptions failover_options(const FailoverSetting& setting) {
  SystemOptions options;
  options.mode = setting.mode;
  options.config.input_count = 3;
  options.config.compute_count = 3;
  options.config.timeslices_per_interval = 12;  // 4 rounds per interval
  options.config.history_length = 3;
  options.config.assignment = setting.assignment;
  options.credits = 3;
  options.dde_replicas = 2;
  options.dde_in_receivers = true;  // replica d inside receiver d: losing node 0 loses replica 0
  return options;
}

}  // namespace

TEST_CASE("DDE failover: the node of one of two DDE replicas dies mid-run, the other paces and assigns, nothing lost",
          "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  const auto setting = GENERATE(FailoverSetting{ns::Mode::dfs, ns::Assignment::fixed},
                                FailoverSetting{ns::Mode::dfs, ns::Assignment::load},
                                FailoverSetting{ns::Mode::best_effort, ns::Assignment::load});
  CAPTURE(base, describe_setting(setting));
  const auto options = failover_options(setting);
  const ns::TimesliceIndex count = 3 * 4 * 60;  // 60 intervals
  const auto intervals = count / options.config.timeslices_per_interval;
  System system(base, options);
  REQUIRE(system.receiver(0).dde_endpoint().has_value());
  REQUIRE(system.receiver(1).dde_endpoint().has_value());
  const auto survivor = [&] { return *system.receiver(1).dde_stats(); };

  // Everything is pushed while node 0 dies: it dies with intervals in flight.
  std::vector<std::string> push_errors;
  std::thread pushing([&] { push_errors = system.push_all(count); });
  // Until both replicas do their work: DFS proposes, assignment by load decides (from the
  // third interval on).
  const auto both_working = [&] {
    for (ns::ComputeIndex c = 0; c < 2; ++c) {
      const auto dde = *system.receiver(c).dde_stats();
      if (setting.mode == ns::Mode::dfs && dde.proposals_sent < 3 * 3) return false;
      if (setting.assignment == ns::Assignment::load && dde.assigned_interval < 6) return false;
    }
    return system.deliveries(0).count() >= 10;
  };
  const bool working = eventually(both_working, 30s);
  const auto before = survivor();
  std::vector<sp::TimesliceSenderStats> inputs_before;
  for (ns::InputIndex i = 0; i < 3; ++i) inputs_before.push_back(system.sender(i).stats());
  system.receiver_slot(0).reset();  // compute node 0 and DDE replica 0 are gone
  pushing.join();
  REQUIRE(push_errors.empty());
  CHECK(working);
  // No input waits for ever: for a proposal, an assignment, or node 0's credits.
  for (ns::InputIndex i = 0; i < 3; ++i) CHECK(system.sender(i).wait_finished(30s));

  // None lost: every time-slice built, node 0's before it went (or again, with a higher
  // attempt, when it had not credited it back) and the rest by nodes 1 and 2.
  (void)check_each_built_once_per_attempt(system, 3, count);
  for (ns::InputIndex i = 0; i < 3; ++i) {
    const auto stats = system.sender(i).stats();
    INFO("input " << i);
    CHECK(stats.ddes_lost == 1);
    CHECK(stats.lost_ddes == std::vector<std::size_t>{0});
    CHECK(stats.computes_lost == 1);
    CHECK(stats.undeliverable == 0);
    CHECK(stats.unbuilt == 0);
    CHECK(system.undeliverable(i).empty());
    CHECK(stats.pushed == count);
    if (setting.mode == ns::Mode::dfs) {
      // The plan went on: proposals of the surviving replica paced intervals after the failure
      // (how many came in time for their own interval depends on the machine's load).
      CHECK(stats.proposals_taken > inputs_before[i].proposals_taken);
    }
    if (setting.assignment == ns::Assignment::load) {
      // Every interval from the third on had its assignment (the input sent into every one of
      // them), after the failure from the surviving replica alone.
      CHECK(stats.assignments_taken >= intervals - ns::assignment_distance);
    }
  }
  const auto after = survivor();
  CHECK(after.bad_messages == 0);
  if (setting.mode == ns::Mode::dfs) CHECK(after.proposals_sent >= before.proposals_sent + 3 * 10);
  if (setting.assignment == ns::Assignment::load) {
    // It decided every interval up to the run's last, node 0 with no share.
    CHECK(eventually([&] { return survivor().assigned_interval >= intervals - 1; }));
    const auto last = survivor();
    CHECK(last.assignments_sent > before.assignments_sent);
    REQUIRE(last.assigned_shares.size() == 3);
    CHECK(last.assigned_shares[0] == 0);
    CHECK(last.computes_reported_lost == std::vector<ns::ComputeIndex>{0});
  }
}

TEST_CASE("DDE: an assignment the input's reply window cannot take is sent with the input's next report",
          "[scheduled_push]") {
  // After a failover the replica left may be the only one to send an interval's assignment,
  // and an input sends into an interval only once it holds it: one not sent because the
  // input's reply window was full must not be lost. One input, which reads no reply while it
  // sends 30 load reports (each decides an interval: j + 2), then reads them all and sends
  // more reports: every interval's assignment arrives, none dropped. Where replies wait in the
  // connection (tcp, shm: the kernel's buffers) the window does not fill here; over fabric it
  // takes 18 (the input's 2 reply credits and 16 queued), and the DDE keeps the other 12.
  const auto base = GENERATE(loopback_endpoints());
  CAPTURE(base);
  ns::SchedulerConfig config;
  config.input_count = 1;
  config.compute_count = 2;
  config.timeslices_per_interval = 4;
  config.history_length = 3;
  config.assignment = ns::Assignment::load;
  Context dde_context(context_options());
  Context input_context(context_options());
  sp::DdeService dde(dde_context, Endpoint::parse(base), config);
  LowLatencySendOptions options;
  options.replies.credits = 2;  // replies not read: two arrive, the rest wait
  LowLatencySendSocket input(input_context, dde.local_endpoint(), options);
  REQUIRE(input.wait_connected(10s));
  const auto report = [&](ns::IntervalIndex j) { input.send(ns::encode(ns::LoadReport{0, j, {0, 0}})); };
  const ns::IntervalIndex flood = 30;
  for (ns::IntervalIndex j = 0; j < flood; ++j) report(j);
  REQUIRE(eventually([&] { return dde.stats().load_reports == flood; }));
  WARN(flood - dde.stats().assignments_sent << " of " << flood << " assignments waited for the reply window");

  std::set<ns::IntervalIndex> got;
  const auto drain = [&] {
    while (auto reply = input.recv_reply(100ms)) got.insert(ns::decode_assignment(reply->bytes()).interval);
  };
  const auto all_decided = [&](ns::IntervalIndex next_report) {
    for (ns::IntervalIndex k = ns::assignment_distance; k < next_report + ns::assignment_distance; ++k) {
      if (!got.contains(k)) return false;
    }
    return true;
  };
  ns::IntervalIndex next = flood;
  drain();
  for (int round = 0; round < 10 && !all_decided(next); ++round) {
    report(next++);  // what waited goes with it, as far as the window takes it
    drain();
  }
  CHECK(all_decided(next));
  CHECK(dde.stats().assignments_dropped == 0);
  CHECK(dde.stats().bad_messages == 0);
}
