// SPDX-License-Identifier: MIT
// The Input Engine: best-effort first intervals, round slots and pacing under a proposal,
// the best-effort fallback after the proposed end, θ gating, the last proposal reused, the
// report when the last acknowledgement arrives, and faulty drivers or peers.
#include "netio/error.hpp"
#include "netio/scheduler/input_engine.hpp"

#include <catch2/catch.hpp>

using namespace netio::scheduler;
using namespace std::chrono_literals;
using Action = SendDecision::Action;

namespace {

SchedulerConfig config(std::uint64_t per_interval, double theta) {
  SchedulerConfig c;
  c.input_count = 2;
  c.compute_count = 2;
  c.timeslices_per_interval = per_interval;
  c.ack_threshold = theta;
  return c;
}

// Sends what next_send() names at `now` and checks it was `expected`.
void send(InputEngine& ie, TimesliceIndex expected, long long now) {
  const SendDecision d = ie.next_send(Time{now});
  INFO("at " << now << " ns");
  REQUIRE(d.action == Action::send);
  REQUIRE(d.timeslice == expected);
  ie.on_sent(expected, Time{now});
}

}  // namespace

TEST_CASE("scheduler IE: without proposals it sends best-effort in offset order, θ gates the next interval",
          "[scheduler]") {
  InputEngine ie(config(4, 0.75), 1);  // n = 4 (2 rounds of 2); ⌈0.75 · 4⌉ = 3 acknowledgements
  // input 1 starts each round with compute 1: 1 0 | 3 2 | 5 4 ...
  SendDecision d = ie.next_send(Time{100});
  CHECK(d.action == Action::send);
  CHECK(d.timeslice == 1);
  CHECK(d.compute == 1);
  CHECK(d.best_effort);
  send(ie, 1, 100);
  send(ie, 0, 110);
  send(ie, 3, 120);
  send(ie, 2, 130);
  CHECK(ie.next_send(Time{140}).action == Action::wait_for_acknowledgements);
  CHECK_FALSE(ie.on_acknowledged(1, Time{200}));                               // latency 100
  CHECK_FALSE(ie.on_acknowledged(0, Time{230}));                               // 120
  CHECK(ie.next_send(Time{240}).action == Action::wait_for_acknowledgements);  // 2 of 3
  CHECK_FALSE(ie.on_acknowledged(3, Time{300}));                               // 180; the third: interval 1 may start
  CHECK(ie.current_interval() == 1);
  CHECK(ie.next_send(Time{300}).timeslice == 5);
  send(ie, 5, 310);
  // the last acknowledgement of interval 0: its report and the request for interval 0 + 2
  const auto done = ie.on_acknowledged(2, Time{400});  // latency 270
  REQUIRE(done);
  CHECK(done->report.input == 1);
  CHECK(done->report.interval == 0);
  CHECK(done->report.start == Time{100});           // tm_0: the first send
  CHECK(done->report.duration == 300ns);            // 400 - 100
  CHECK(done->report.median_ack_latency == 150ns);  // 100 120 | 180 270
  CHECK_FALSE(done->report.proposed_duration);      // it ran without a proposal
  CHECK(done->request == ProposalRequest{1, 2});
}

TEST_CASE("scheduler IE: θ = 1 waits for every acknowledgement", "[scheduler]") {
  InputEngine ie(config(2, 1.0), 0);
  send(ie, 0, 0);
  send(ie, 1, 0);
  CHECK_FALSE(ie.on_acknowledged(1, Time{10}));
  CHECK(ie.next_send(Time{10}).action == Action::wait_for_acknowledgements);
  CHECK(ie.on_acknowledged(0, Time{20}));
  CHECK(ie.next_send(Time{20}).timeslice == 2);
}

TEST_CASE("scheduler IE: θ 0.95 of 100 needs 95 acknowledgements", "[scheduler]") {
  InputEngine ie(config(100, 0.95), 0);
  for (TimesliceIndex t = 0; t < 100; ++t) send(ie, t, 0);
  for (TimesliceIndex t = 0; t < 94; ++t) CHECK_FALSE(ie.on_acknowledged(t, Time{1}));
  CHECK(ie.current_interval() == 0);  // 94 < 95
  ie.on_acknowledged(94, Time{1});
  CHECK(ie.current_interval() == 1);
}

TEST_CASE("scheduler IE: under a proposal, round slots tm + durr*y and fair spacing within a round", "[scheduler]") {
  InputEngine ie(config(8, 1.0), 0);                        // n = 8: 4 rounds of 2; input 0 sends 0 1 2 3 ...
  REQUIRE(ie.on_proposal(Proposal{0, Time{1000}, 400ns}));  // durr = 400 / 4 = 100
  const auto plan = ie.plan(0);
  REQUIRE(plan);
  CHECK(*plan == IntervalPlan{0, Time{1000}, 400ns, true});

  SendDecision d = ie.next_send(Time{900});  // before tp_0
  CHECK(d.action == Action::wait_until);
  CHECK(d.due == Time{1000});
  CHECK(d.timeslice == 0);
  CHECK_FALSE(d.best_effort);
  send(ie, 0, 1010);  // tm_0 = 1010 (10 ns late)
  // place 1 (round 0, second of 2): 1010 + 0 + 100 * 1 / 2 = 1060
  d = ie.next_send(Time{1059});
  CHECK(d.action == Action::wait_until);
  CHECK(d.due == Time{1060});
  CHECK(ie.next_send(Time{1060}).action == Action::send);
  send(ie, 1, 1060);
  CHECK(ie.next_send(Time{1060}).due == Time{1110});  // round 1: 1010 + 100
  send(ie, 2, 1110);
  CHECK(ie.next_send(Time{1110}).due == Time{1160});
  send(ie, 3, 1170);                                  // a little late: the slots stay where they were
  CHECK(ie.next_send(Time{1170}).due == Time{1210});  // round 2
  send(ie, 4, 1210);
  CHECK(ie.next_send(Time{1210}).due == Time{1260});
  send(ie, 5, 1260);
  CHECK(ie.next_send(Time{1260}).due == Time{1310});  // round 3
  send(ie, 6, 1310);
  CHECK(ie.next_send(Time{1310}).due == Time{1360});
  send(ie, 7, 1360);
  for (TimesliceIndex t = 0; t < 7; ++t) ie.on_acknowledged(t, Time{1390});
  const auto done = ie.on_acknowledged(7, Time{1400});
  REQUIRE(done);
  CHECK(done->report.start == Time{1010});
  CHECK(done->report.duration == 390ns);
  CHECK(done->report.proposed_duration == 400ns);
}

TEST_CASE("scheduler IE: past the proposed end tp + durp the rest goes best-effort", "[scheduler]") {
  InputEngine ie(config(8, 1.0), 0);
  ie.on_proposal(Proposal{0, Time{1000}, 400ns});  // proposed end 1400
  send(ie, 0, 1200);                               // tm_0 = 1200: 200 ns late
  send(ie, 1, 1250);                               // 1200 + 50
  send(ie, 2, 1300);                               // round 1
  send(ie, 3, 1350);
  // place 4 (round 2) would be due at 1400; place 5 at 1450, capped at the proposed end 1400
  send(ie, 4, 1400);
  SendDecision d = ie.next_send(Time{1399});
  CHECK(d.action == Action::wait_until);
  CHECK(d.due == Time{1400});
  d = ie.next_send(Time{1400});
  CHECK(d.action == Action::send);
  CHECK(d.best_effort);
  CHECK(d.timeslice == 5);
  send(ie, 5, 1400);
  send(ie, 6, 1401);  // no pacing any more
  d = ie.next_send(Time{1401});
  CHECK(d.best_effort);
  CHECK(d.due == Time{1401});
}

TEST_CASE("scheduler IE: an interval starts when θ is reached and not before its (derived) proposed start",
          "[scheduler]") {
  InputEngine ie(config(2, 1.0), 0);  // n = 2: one round
  ie.on_proposal(Proposal{0, Time{1000}, 400ns});
  send(ie, 0, 1000);
  send(ie, 1, 1200);  // round 0, place 1: 1000 + 400 * 1 / 2
  ie.on_acknowledged(0, Time{1250});
  const auto done = ie.on_acknowledged(1, Time{1300});
  REQUIRE(done);
  CHECK(done->request.interval == 2);
  // no proposal for interval 1: the last one moved on by one interval, tp 1400, durp 400
  const auto plan = ie.plan(1);
  REQUIRE(plan);
  CHECK(*plan == IntervalPlan{1, Time{1400}, 400ns, false});
  const SendDecision d = ie.next_send(Time{1300});
  CHECK(d.action == Action::wait_until);
  CHECK(d.due == Time{1400});
  CHECK(d.timeslice == 2);
  // a proposal for interval 2 arrives in time and is used instead of the derived 1800
  CHECK(ie.on_proposal(Proposal{2, Time{1750}, 300ns}));
  CHECK_FALSE(ie.on_proposal(Proposal{2, Time{1760}, 310ns}));  // another replica's copy: the first wins
  send(ie, 2, 1400);
  send(ie, 3, 1600);
  ie.on_acknowledged(2, Time{1700});
  ie.on_acknowledged(3, Time{1700});
  CHECK(*ie.plan(2) == IntervalPlan{2, Time{1750}, 300ns, true});
  CHECK(ie.next_send(Time{1700}).due == Time{1750});
  // past its proposed end before it even started (a slow IE): best-effort at once
  CHECK(ie.next_send(Time{2050}).best_effort);
}

TEST_CASE("scheduler IE: stale, far-off and repeated proposals are ignored", "[scheduler]") {
  InputEngine ie(config(2, 1.0), 0);                        // proposal_distance 2
  CHECK_FALSE(ie.on_proposal(Proposal{3, Time{0}, 10ns}));  // 3 > 0 + 2
  CHECK(ie.on_proposal(Proposal{2, Time{0}, 10ns}));
  CHECK_FALSE(ie.on_proposal(Proposal{1, Time{0}, 0ns}));  // no duration
  send(ie, 0, 0);
  CHECK_FALSE(ie.on_proposal(Proposal{0, Time{0}, 10ns}));  // interval 0 started already
  CHECK_FALSE(ie.plan(0));                                  // and ran best-effort
}

TEST_CASE("scheduler IE: a proposal too late for its interval still paces the ones after it", "[scheduler]") {
  // Reports and proposals that queue behind contributions (a FIFO port) reach an IE after
  // the interval they are for has started. Ignoring them left such an IE without a plan for
  // good, sending every interval in a burst that kept the ports' queues long.
  InputEngine ie(config(2, 1.0), 0);                            // n = 2: one round
  send(ie, 0, 0);                                               // interval 0 starts best-effort
  CHECK_FALSE(ie.on_proposal(Proposal{0, Time{1000}, 400ns}));  // not taken for interval 0 ...
  CHECK_FALSE(ie.plan(0));
  // ... but interval 1 follows it: tp 1000 + 400, durp 400
  CHECK(*ie.plan(1) == IntervalPlan{1, Time{1400}, 400ns, false});
  send(ie, 1, 10);
  ie.on_acknowledged(0, Time{500});
  ie.on_acknowledged(1, Time{600});
  const SendDecision d = ie.next_send(Time{600});
  CHECK(d.action == Action::wait_until);
  CHECK(d.due == Time{1400});
  // a later late one (interval 1, after interval 1 started) moves the basis on; an older one does not
  send(ie, 2, 1400);
  CHECK_FALSE(ie.on_proposal(Proposal{1, Time{1500}, 300ns}));
  CHECK_FALSE(ie.on_proposal(Proposal{0, Time{900}, 500ns}));
  // interval 1's own proposal replaces the plan derived for it: 1500 + the DDE's spacing of
  // starts (1500 - 1000), durp 300
  CHECK(*ie.plan(2) == IntervalPlan{2, Time{2000}, 300ns, false});
}

TEST_CASE("scheduler IE: a faulty driver or peer gets a clear error", "[scheduler]") {
  InputEngine ie(config(4, 1.0), 0);
  CHECK_THROWS_AS(ie.on_sent(1, Time{0}), netio::Error);  // the next one is 0
  send(ie, 0, 0);
  CHECK_THROWS_AS(ie.on_acknowledged(1, Time{1}), netio::Error);  // not sent
  CHECK_THROWS_AS(ie.on_acknowledged(8, Time{1}), netio::Error);  // interval 2: nothing in flight
  ie.on_acknowledged(0, Time{1});
  try {
    ie.on_acknowledged(0, Time{2});
    FAIL("a second acknowledgement was taken");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::invalid_option);
    CHECK_THAT(e.what(), Catch::Contains("second acknowledgement of time-slice 0"));
  }
  CHECK_THROWS_AS(InputEngine(config(4, 1.0), 2), netio::Error);  // only inputs 0 and 1
}

TEST_CASE("scheduler IE: one that misses a proposal keeps the DDE's spacing of starts, not the duration",
          "[scheduler]") {
  // The DDE spaces starts by a measured duration (400) and proposes a shortened one (380).
  InputEngine ie(config(2, 1.0), 0);  // n = 2: one round
  CHECK(ie.on_proposal(Proposal{1, Time{1400}, 380ns}));
  CHECK(ie.on_proposal(Proposal{2, Time{1800}, 380ns}));
  send(ie, 0, 0);  // interval 0 best-effort
  send(ie, 1, 0);
  ie.on_acknowledged(0, Time{100});
  ie.on_acknowledged(1, Time{100});
  send(ie, 2, 1400);  // interval 1 on its proposal
  send(ie, 3, 1590);  // 1400 + 380 / 2
  ie.on_acknowledged(2, Time{1700});
  ie.on_acknowledged(3, Time{1700});
  send(ie, 4, 1800);  // interval 2
  send(ie, 5, 1990);
  ie.on_acknowledged(4, Time{2100});
  ie.on_acknowledged(5, Time{2100});
  // interval 3's proposal never came: 1800 + 400, in step with the IEs that got it (the
  // duration would have given 2180)
  CHECK(*ie.plan(3) == IntervalPlan{3, Time{2200}, 380ns, false});
  CHECK(*ie.plan(4) == IntervalPlan{4, Time{2600}, 380ns, false});
}
