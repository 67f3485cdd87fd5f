// SPDX-License-Identifier: MIT
#include "tsbench/role_run.hpp"

#include "tsbench/compute_role.hpp"
#include "tsbench/input_role.hpp"

#include "common/metrics_option.hpp"
#include "common/termination.hpp"

#include "netio/context.hpp"
#include "netio/error.hpp"
#include "netio/log.hpp"
#include "netio/low_latency_socket.hpp"

#include <fmt/format.h>

#include <csignal>
#include <optional>
#include <thread>

namespace netio::tools::tsbench {

namespace {

using namespace std::chrono_literals;

// The nodes of a role run start in any order, and a sender does not reconnect: an input
// waits until every endpoint it needs accepts a connection (a probe, closed at once; the
// probe itself tries again in the background until `connect_timeout`).
std::string wait_reachable(Context& context, const std::vector<Endpoint>& endpoints,
                           std::chrono::nanoseconds connect_timeout, const Deadline& deadline) {
  const auto give_up = std::chrono::steady_clock::now() + deadline.remaining(connect_wait(connect_timeout));
  for (const auto& endpoint : endpoints) {
    LowLatencySendOptions options;
    options.connect_timeout = connect_timeout;
    try {
      LowLatencySendSocket probe(context, endpoint, options);
      while (!probe.wait_connected(100ms)) {
        if (std::chrono::steady_clock::now() >= give_up || stop_requested()) {
          return fmt::format("{} did not accept a connection in time", endpoint.to_string());
        }
      }
    } catch (const Error& e) {
      return fmt::format("{} did not accept a connection: {}", endpoint.to_string(), e.what());
    }
  }
  return {};
}

// --drain and --join in role mode, checked against the file (every process reads the same,
// so every one refuses alike): the DDE replicas are where the file puts them, not on the
// first compute nodes as in a local run (BenchConfig::validate() checks that case).
void check_membership(const BenchConfig& bench, const ClusterConfig& cluster, bool uses_dde) {
  if (!uses_dde) return;
  const auto dde_of = [&](std::uint32_t compute) {
    for (const auto& node : cluster.nodes) {
      if (node.role == ClusterNode::Role::compute && node.index == compute) return node.dde.has_value();
    }
    return false;
  };
  // A drained node takes its DDE replica with it: another must be left.
  if (const auto draining = bench.drain_spec();
      draining && dde_of(draining->compute) && cluster.dde_endpoints().size() < 2) {
    throw Error(Errc::invalid_option,
                fmt::format("--drain '{}': compute node {} carries the only DDE replica of the --config file; drain "
                            "another, or give a second compute line a DDE endpoint",
                            bench.drain, draining->compute));
  }
  // The inputs connect to every replica at the start: a slot kept out until it joins (and
  // whose process may start later) cannot carry one.
  if (const auto standby = bench.standby_slot(); standby && dde_of(*standby)) {
    throw Error(Errc::invalid_option,
                fmt::format("--join '{}': compute node {} (the last compute line, kept out until it joins) carries a "
                            "DDE replica; give the DDE endpoint to another compute line",
                            bench.join, *standby));
  }
}

// A compute node's --drain or --join, T after `started`: drain() or join() once due; the
// time of the change (relative to the run's origin) and the counts go into the records.
class DrainOrJoin {
 public:
  DrainOrJoin(const BenchConfig& bench, ns::ComputeIndex self, std::uint32_t rank) : rank_(rank), self_(self) {
    if (const auto draining = bench.drain_spec(); draining && draining->compute == self) at_ = draining->at;
    if (const auto joining = bench.join_at(); joining && bench.standby_slot() == self) {
      at_ = *joining;
      joins_ = true;
    }
    spec_ = joins_ ? bench.join : bench.drain;
  }
  bool drains() const { return at_ && !joins_; }
  bool done() const { return at_ && changed_at_; }  // drain() or join() called
  // Drains or joins once T has passed since `started`.
  void when_due(ComputeRole& compute, std::chrono::steady_clock::time_point started, ns::Time origin) {
    if (!at_ || changed_at_ || std::chrono::steady_clock::now() - started < *at_) return;
    changed_at_ = std::chrono::steady_clock::now().time_since_epoch() - origin;
    if (joins_) {
      compute.join();
      log(LogLevel::info, "netio_tsbench: rank {} (compute node {}) asks to join (--join {})", rank_, self_, spec_);
    } else {
      const auto from = compute.drain();
      log(LogLevel::info, "netio_tsbench: rank {} (compute node {}) drains from time-slice {} on (--drain {})", rank_,
          self_, from, spec_);
    }
  }
  // The change in this node's records; a change that never came (the run ended before T)
  // is said once.
  void record(RunRecords& records, bool drained) const {
    if (!at_) return;
    if (!changed_at_) {
      log(LogLevel::warn, "netio_tsbench: rank {} (compute node {}): the run ended before {} {}", rank_, self_,
          joins_ ? "--join" : "--drain", spec_);
      return;
    }
    records.membership_at = changed_at_;
    if (joins_) {
      records.computes_joined = 1;
      records.joined_compute = self_;
    } else if (drained) {
      records.computes_drained = 1;
    }
  }

 private:
  std::uint32_t rank_;
  ns::ComputeIndex self_;
  std::optional<std::chrono::nanoseconds> at_;  // T: this node drains or joins
  bool joins_ = false;
  std::string spec_;
  std::optional<ns::Time> changed_at_;
};

}  // namespace

RoleRunResult run_role(BenchConfig bench, scheduler::Mode mode, const ClusterConfig& cluster, std::uint32_t rank,
                       std::chrono::nanoseconds connect_timeout, const Deadline& deadline, const std::string& journal) {
  if (!bench.timeslices) {
    throw Error(Errc::invalid_option, "--role needs --timeslices COUNT (the same on every node)");
  }
  if (rank >= cluster.nodes.size()) {
    throw Error(Errc::invalid_option,
                fmt::format("rank {} out of range: the configuration lists {} nodes", rank, cluster.nodes.size()));
  }
  const bool uses_dde = mode == scheduler::Mode::dfs || bench.assignment == scheduler::Assignment::load;
  if (uses_dde && cluster.dde_endpoints().empty()) {
    throw Error(Errc::invalid_option,
                "DFS and --assignment load need a DDE: give a compute line a second endpoint (compute ENDPOINT "
                "DDE_ENDPOINT)");
  }
  bench.inputs = cluster.inputs;
  bench.computes = cluster.computes;
  bench.resolve();  // the buffer from --credits with the cluster's input count, as a local run derives it
  check_membership(bench, cluster, uses_dde);
  const auto total = *bench.timeslices;
  const ClusterNode& self = cluster.nodes[rank];
  const auto origin = std::chrono::steady_clock::now().time_since_epoch();
  ContextOptions context_options;
  context_options.emulation = bench.node_emulation(rank);
  context_options.cpu = bench.loop_cpu;
  Context context(context_options);
  watch_metrics(context, std::to_string(rank));  // --metrics: node= its rank
  RoleRunResult result;

  if (self.role == ClusterNode::Role::compute) {
    result.node = fmt::format("compute {}", self.index);
    ComputeRoleOptions co;
    co.bench = bench;
    co.compute = self.index;
    co.local = *self.endpoint;
    co.run_dde = uses_dde && self.dde.has_value();
    co.dde_local = self.dde;
    co.origin = origin;
    co.journal = journal;
    co.standby = bench.standby_slot() == self.index;  // --join: out until it joins
    ComputeRole compute(context, co);
    log(LogLevel::info, "netio_tsbench: rank {} is compute node {} at {}", rank, self.index,
        compute.endpoint().to_string());
    const auto share = compute.share_of(total);
    // Done once it built its share and every input has gone (finished: everything it sent
    // was built, here or, for a lost node's time-slices, anywhere). --fail: this node dies.
    // --drain: this node drains at T and is done once drained (its process ends, its
    // connections close: the inputs count it drained); --join: this standby slot joins at T.
    const auto failing = bench.fail_spec();
    DrainOrJoin change(bench, self.index, rank);
    const auto started = std::chrono::steady_clock::now();
    while ((compute.handed_over() < share || compute.inputs_gone() < cluster.inputs) && !stop_requested() &&
           !deadline.expired()) {
      if (failing && failing->compute == self.index && std::chrono::steady_clock::now() - started >= failing->at) {
        log(LogLevel::warn, "netio_tsbench: rank {} (compute node {}) fails now (--fail {})", rank, self.index,
            bench.fail);
        std::raise(SIGKILL);
      }
      change.when_due(compute, started, origin);
      if (change.drains() && change.done() && compute.drained()) break;
      std::this_thread::sleep_for(failing ? 1ms : 5ms);
    }
    result.interrupted = compute.handed_over() < share;
    if (result.interrupted) {
      result.error =
          fmt::format("compute node {} handed over {} of its {} time-slices", self.index, compute.handed_over(), share);
    }
    // Every input gone counts as its farewell: what is left to free goes in a moment.
    const bool drained = change.drains() && change.done() && compute.wait_drained(deadline.remaining(5s));
    if (change.drains() && change.done() && !drained && result.error.empty()) {
      result.error = fmt::format("compute node {} did not drain (--drain {})", self.index, bench.drain);
    }
    result.records = compute.take_records();
    change.record(result.records, drained);
    // A compute node cannot tell alone which time-slices the others built: "lost" counts
    // over the whole run in --collect (a node short of its own share fails above).
    result.records.expected_timeslices = 0;
    if (result.records.corrupt > 0 && result.error.empty()) {
      result.error = fmt::format("{} contributions arrived with the wrong stamp", result.records.corrupt);
    }
    return result;
  }

  result.node = fmt::format("input {}", self.index);
  auto needed = cluster.compute_endpoints();
  // --join: the slot kept out may start later; the sender connects to it when it listens.
  if (const auto standby = bench.standby_slot()) needed.erase(needed.begin() + *standby);
  if (uses_dde) {
    for (const auto& dde : cluster.dde_endpoints()) needed.push_back(dde);
  }
  if (auto error = wait_reachable(context, needed, connect_timeout, deadline); !error.empty()) {
    result.error = fmt::format("input {}: {}", self.index, error);
    return result;
  }
  InputRoleOptions io;
  io.bench = bench;
  io.mode = mode;
  io.input = self.index;
  io.computes = cluster.compute_endpoints();
  io.ddes = uses_dde ? cluster.dde_endpoints() : std::vector<Endpoint>{};
  io.origin = origin;
  InputRole input(context, io);
  input.set_limit(total);
  input.start();
  // --join 'input,at=T': this input is the standby one; it joins T after its start and
  // pushes from the boundary a compute node names (none when that is beyond the run's end).
  const auto join_at = bench.standby_input() == self.index ? bench.join_at() : std::nullopt;
  const auto started = std::chrono::steady_clock::now();
  std::optional<ns::Time> joined_at;
  const auto finished = [&] {
    const auto from = input.sender_stats().join_from;
    return input.pushed() >= total || (from != 0 && from >= total);
  };
  // The statistics when this input first lost a compute node: what it took after (DDE failover).
  std::optional<scheduled_push::TimesliceSenderStats> at_failure;
  while (!finished() && !stop_requested() && !deadline.expired()) {
    if (!at_failure) {
      if (auto s = input.sender_stats(); s.computes_lost > 0) at_failure = std::move(s);
    }
    if (join_at && !joined_at && std::chrono::steady_clock::now() - started >= *join_at) {
      joined_at = std::chrono::steady_clock::now().time_since_epoch() - origin;
      input.join();
      log(LogLevel::info, "netio_tsbench: rank {} (input {}) asks to join (--join {})", rank, self.index, bench.join);
    }
    std::this_thread::sleep_for(20ms);
  }
  if (input.pushed() < total) input.set_limit(input.pushed());  // cut short: stop where it is
  result.error = input.finish(deadline.remaining(std::chrono::hours(24)));
  // --drain near the end: the node leaves once it has every input's farewell, sent as the
  // inputs finish; its departure is awaited (briefly) so that this summary counts it.
  const auto departure_until = std::chrono::steady_clock::now() + deadline.remaining(5s);
  while (input.sender_stats().computes_draining > input.sender_stats().computes_drained &&
         std::chrono::steady_clock::now() < departure_until && !stop_requested()) {
    std::this_thread::sleep_for(10ms);
  }
  result.interrupted = stop_requested() || deadline.expired();
  const auto stats = input.sender_stats();
  result.records.contributions_reassigned = stats.reassigned;
  result.records.computes_lost = stats.computes_lost;
  result.records.computes_drained = stats.computes_drained;
  result.records.computes_joined = stats.computes_joined;
  // --join 'input,at=T': the joiner knows its boundary; a member counts the inputs it saw join.
  result.records.inputs_joined = stats.join_from != 0 ? 1 : stats.inputs_joined;
  result.records.input_join_from = stats.join_from;
  if (stats.join_from != 0) result.records.membership_at = joined_at;
  if (join_at && !joined_at)
    log(LogLevel::warn, "netio_tsbench: rank {} (input {}): the run ended before --join {}", rank, self.index,
        bench.join);
  if (at_failure) {
    result.records.proposals_after_failure = stats.proposals_taken - at_failure->proposals_taken;
    result.records.assignments_after_failure = stats.assignments_taken - at_failure->assignments_taken;
  }
  // The DDE replicas this input dropped, by the compute node each runs on (the file's order).
  std::vector<ns::ComputeIndex> dde_nodes;
  for (const auto& node : cluster.nodes) {
    if (node.dde) dde_nodes.push_back(node.index);
  }
  for (const auto d : stats.lost_ddes) result.records.dde_replicas_lost.push_back(dde_nodes.at(d));
  result.records.push_blocked = std::chrono::nanoseconds(stats.push_blocked_ns);
  result.records.pushes_blocked = stats.pushes_blocked;
  result.records.assignment_wait = std::chrono::nanoseconds(stats.assignment_wait_ns);
  result.records.assignment_waits = stats.assignment_waits;
  result.records.intervals = input.take_records();
  result.records.timeslices_per_interval = bench.scheduler_config().timeslices_in_interval();
  result.records.warmup_intervals = bench.warmup_intervals;
  return result;
}

}  // namespace netio::tools::tsbench
