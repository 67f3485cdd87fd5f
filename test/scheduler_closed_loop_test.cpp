// SPDX-License-Identifier: MIT
// Input Engines and a DDE driven together by a small discrete-event model, the way the
// simulator and the socket pattern will drive them: each input's link carries one
// contribution per 100 ns and the acknowledgement returns 10 ns after the transmission;
// control messages take 55 ns (half the 110 ns send → acknowledgement time, so the Clock
// Synchronizer's latency estimate is exact). Input 1's clock runs 7,000 ns ahead and it
// starts 37 ns late.
#include "netio/scheduler/deterministic_engine.hpp"
#include "netio/scheduler/input_engine.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <vector>

using namespace netio::scheduler;
using namespace std::chrono_literals;

namespace {

constexpr long long transmit = 100;
constexpr long long ack_after = 10;
constexpr long long control_value = 55;
constexpr long long clock_skew[2] = {0, 7'000};
constexpr long long first_grant[2] = {0, 37};

struct Model {
  SchedulerConfig config;
  std::vector<InputEngine> ies;
  DeterministicEngine dde;
  long long link_free[2] = {0, 0};
  std::multimap<long long, std::pair<InputIndex, TimesliceIndex>> acks;  // global time → ack
  std::multimap<long long, IntervalCompletion> to_dde;
  std::multimap<long long, AddressedProposal> to_ies;
  std::vector<MetadataReport> reports[2];
  std::map<IntervalIndex, Proposal> proposals[2];  // as received, IE clock

  explicit Model(const SchedulerConfig& c) : config(c), dde(c) {
    ies.emplace_back(c, 0);
    ies.emplace_back(c, 1);
  }

  void deliver_proposals(const std::vector<AddressedProposal>& out, long long now) {
    for (const auto& p : out) to_ies.emplace(now + control_value, p);
  }

  void step(long long g) {  // global time g, 1 ns steps
    for (auto it = to_dde.begin(); it != to_dde.end() && it->first <= g; it = to_dde.erase(it)) {
      deliver_proposals(dde.on_report(it->second.report, Time{g}), g);
      deliver_proposals(dde.on_request(it->second.request), g);
    }
    for (auto it = to_ies.begin(); it != to_ies.end() && it->first <= g; it = to_ies.erase(it)) {
      const InputIndex i = it->second.input;
      if (ies[i].on_proposal(it->second.proposal)) proposals[i][it->second.proposal.interval] = it->second.proposal;
    }
    for (auto it = acks.begin(); it != acks.end() && it->first <= g; it = acks.erase(it)) {
      const auto [i, t] = it->second;
      if (auto done = ies[i].on_acknowledged(t, Time{g + clock_skew[i]})) {
        reports[i].push_back(done->report);
        to_dde.emplace(g + control_value, *done);
      }
    }
    for (InputIndex i = 0; i < 2; ++i) {
      if (g < first_grant[i] || g < link_free[i]) continue;
      const SendDecision d = ies[i].next_send(Time{g + clock_skew[i]});
      if (d.action != SendDecision::Action::send) continue;
      ies[i].on_sent(d.timeslice, Time{g + clock_skew[i]});
      link_free[i] = g + transmit;
      acks.emplace(g + transmit + ack_after, std::pair{i, d.timeslice});
    }
  }
};

}  // namespace

TEST_CASE("scheduler closed loop: IEs follow the DDE's proposals, in sync, and the speed-up settles", "[scheduler]") {
  SchedulerConfig c;
  c.input_count = 2;
  c.compute_count = 2;
  c.timeslices_per_interval = 4;  // 2 rounds; best-effort an interval takes 4 * 100 + 10 = 410 ns
  c.history_length = 3;
  c.ack_threshold = 1.0;
  c.duration_rule = DurationRule::paper;
  c.clock_rule = ClockRule::paper;  // the offsets checked below are Eq. 2's
  Model model(c);
  for (long long g = 0; g < 40 * 600; ++g) model.step(g);

  REQUIRE(model.reports[0].size() >= 30);
  REQUIRE(model.reports[1].size() >= 30);
  // The first proposal is for interval 4 (window 0 1 2, asked for after interval 2): the
  // intervals before run best-effort, every one after on a proposal.
  for (InputIndex i = 0; i < 2; ++i) {
    for (const MetadataReport& r : model.reports[i]) {
      INFO("input " << i << " interval " << r.interval);
      CHECK(r.proposed_duration.has_value() == (r.interval >= 4));
    }
  }
  // The offsets are exact (latency estimate = real control delay): -skew.
  CHECK(model.dde.clocks().offset(0) == 0ns);
  CHECK(model.dde.clocks().offset(1) == -7'000ns);
  CHECK(model.dde.clocks().drift(1) == 0.0);
  // Both IEs got every proposal, the same instant in their own clocks.
  for (const auto& [k, p0] : model.proposals[0]) {
    REQUIRE(model.proposals[1].contains(k));
    CHECK(model.proposals[1][k].start - p0.start == 7'000ns);
    CHECK(model.proposals[1][k].duration == p0.duration);
  }
  // Best-effort, input 1 stays 37 ns behind; once proposed, both IEs start each interval at
  // the same global instant.
  for (std::size_t n = 0; n < 4; ++n) {
    CHECK(model.reports[1][n].start - Time{clock_skew[1]} - model.reports[0][n].start == 37ns);
  }
  for (std::size_t n = 10; n < 30; ++n) {
    const MetadataReport& r0 = model.reports[0][n];
    const MetadataReport& r1 = model.reports[1][n];
    REQUIRE(r0.interval == r1.interval);
    CHECK(r1.start - Time{clock_skew[1]} == r0.start);
  }
  // The link bounds an interval to 410 ns: the proposals settle 5 % below what is measured,
  // 410 * 0.95 = 389.5 → 390, and the intervals keep taking 410.
  const MetadataReport& last = model.reports[0][29];
  CHECK(last.duration == 410ns);
  CHECK(last.proposed_duration == 390ns);
  const auto w = model.dde.history().last_complete();
  REQUIRE(w);
  CHECK(model.dde.history().find(*w)->duration == 410ns);
  const auto p = model.dde.proposal(*w + 2);
  REQUIRE(p);
  CHECK(p->duration == 390ns);
  REQUIRE(p->speed_up);
  CHECK(p->speed_up->applies);
}
