// SPDX-License-Identifier: MIT
// The scheduled push's receivers listen like every receive socket: the admission limit's
// worth of idle connections (hello only, or introduced and silent) at each compute node's
// data endpoint and at the DDE replica do not keep the input nodes out. Every time-slice is
// still built, complete and in order, on both back-ends and in both modes.
#include "support/admission_peers.hpp"
#include "support/scheduled_push_system.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

using namespace netio;
using namespace netio::test;

namespace {

constexpr std::size_t connection_limit = 4;

// `connection_limit` idle peers at `endpoint`, every other one introduced.
void open_idle_peers(Context& context, const Endpoint& endpoint, std::vector<std::unique_ptr<HelloOnlyPeer>>& peers) {
  for (std::size_t i = 0; i < connection_limit; ++i) {
    auto& peer = peers.emplace_back(std::make_unique<HelloOnlyPeer>(context, endpoint));
    REQUIRE(eventually([&] { return peer->connected() || peer->failed(); }));
    REQUIRE(peer->connected());
    if (i % 2 == 1) peer->send(detail::encode_introduction({"idle-" + std::to_string(i), std::nullopt}));
  }
}

}  // namespace

TEST_CASE(
    "scheduled push: the admission limit's worth of idle peers at the compute nodes and the DDE does not keep "
    "the inputs out",
    "[scheduled_push][admission][idle]") {
  const auto base = GENERATE(loopback_endpoints());
  const auto mode = GENERATE(ns::Mode::best_effort, ns::Mode::dfs);
  INFO(base << (mode == ns::Mode::dfs ? " DFS" : " best effort"));
  Context idle_context(context_options());
  std::vector<std::unique_ptr<HelloOnlyPeer>> idle;  // destroyed before their context
  SystemOptions options;
  options.mode = mode;
  options.config.input_count = 2;
  options.config.compute_count = 2;
  options.config.timeslices_per_interval = 8;  // 4 rounds per interval
  options.config.history_length = 3;
  options.admission.max_connections = connection_limit;
  options.before_inputs = [&](System& system) {
    for (ns::ComputeIndex c = 0; c < options.config.compute_count; ++c) {
      open_idle_peers(idle_context, system.receiver(c).local_endpoint(), idle);
    }
    for (std::size_t d = 0; d < system.dde_count(); ++d) {
      open_idle_peers(idle_context, system.dde_slot(d)->local_endpoint(), idle);
    }
  };
  System system(base, options);

  // DFS: long enough (30 intervals) that every input's DDE connection, which has to make room
  // among the idle peers too, is up before the last report (under TSan on fabric 6 intervals
  // were over first, once: no report sent).
  const ns::TimesliceIndex count = mode == ns::Mode::dfs ? 240 : 48;
  REQUIRE(system.push_all(count).empty());
  for (ns::InputIndex i = 0; i < options.config.input_count; ++i) CHECK(system.sender(i).wait_finished(60s));
  CHECK(wait_all_delivered(system, options.config.compute_count, count));
  for (ns::ComputeIndex c = 0; c < options.config.compute_count; ++c) {
    check_complete_in_order(system, c, options.config.compute_count, count);
    CHECK(system.receiver(c).stats().dropped == 0);
  }
  if (mode == ns::Mode::dfs) {
    // The DDE took every input's reports: the idle peers made room for them.
    for (ns::InputIndex i = 0; i < options.config.input_count; ++i) CHECK(system.sender(i).stats().reports_sent > 0);
  }
  // The inputs took their places from silent peers.
  CHECK(std::count_if(idle.begin(), idle.end(), [](const auto& peer) { return peer->disconnected(); }) >=
        static_cast<std::ptrdiff_t>(options.config.input_count));
}
