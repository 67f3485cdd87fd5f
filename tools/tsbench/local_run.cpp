// SPDX-License-Identifier: MIT
#include "tsbench/local_run.hpp"

#include "tsbench/compute_role.hpp"
#include "tsbench/input_role.hpp"

#include "common/metrics_option.hpp"
#include "common/termination.hpp"

#include "netio/context.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <thread>

namespace netio::tools::tsbench {

namespace {

using namespace std::chrono_literals;

ContextOptions node_context(const BenchConfig& bench, std::uint32_t rank) {
  ContextOptions options;
  options.emulation = bench.node_emulation(rank);
  options.cpu = bench.loop_cpu;
  return options;
}

// The count every input pushes up to: the furthest any has come, rounded up to a whole
// interval (so the last DFS interval is complete), plus one interval of margin for an
// input that pushes while the limit is being set.
std::uint64_t common_limit(const std::vector<std::unique_ptr<InputRole>>& inputs, std::uint64_t interval) {
  std::uint64_t furthest = 0;
  for (const auto& input : inputs) furthest = std::max(furthest, input->pushed());
  return (furthest / interval + 2) * interval;
}

}  // namespace

LocalRunResult run_local(const BenchConfig& bench, scheduler::Mode mode, const Deadline& deadline) {
  LocalRunResult result;
  const auto origin = std::chrono::steady_clock::now().time_since_epoch();
  const auto interval = bench.scheduler_config().timeslices_in_interval();

  // Contexts first: they outlive every socket made from them.
  std::vector<std::unique_ptr<Context>> compute_contexts;
  std::vector<std::unique_ptr<Context>> input_contexts;
  for (std::uint32_t c = 0; c < bench.computes; ++c) {
    compute_contexts.push_back(std::make_unique<Context>(node_context(bench, bench.inputs + c)));
    watch_metrics(*compute_contexts.back(), std::to_string(bench.inputs + c));  // --metrics: node= its rank
  }
  for (std::uint32_t i = 0; i < bench.inputs; ++i) {
    input_contexts.push_back(std::make_unique<Context>(node_context(bench, i)));
    watch_metrics(*input_contexts.back(), std::to_string(i));
  }

  std::vector<std::unique_ptr<ComputeRole>> computes;
  std::vector<Endpoint> compute_endpoints;
  std::vector<Endpoint> dde_endpoints;
  for (std::uint32_t c = 0; c < bench.computes; ++c) {
    ComputeRoleOptions co;
    co.standby = bench.standby_slot() == c;
    co.bench = bench;
    co.compute = c;
    co.local = local_endpoint(bench.transport);
    // DFS's pacing or assignment by load: DDE replicas (coordinators) on the first compute nodes,
    // so that one dying with its node leaves another (--dde-replicas).
    co.run_dde = (mode == scheduler::Mode::dfs || bench.assignment == scheduler::Assignment::load) &&
                 c < bench.dde_replica_count();
    co.origin = origin;
    computes.push_back(std::make_unique<ComputeRole>(*compute_contexts[c], co));
    compute_endpoints.push_back(computes.back()->endpoint());
    if (auto dde = computes.back()->dde_endpoint()) dde_endpoints.push_back(*dde);
  }

  std::vector<std::unique_ptr<InputRole>> inputs;
  for (std::uint32_t i = 0; i < bench.inputs; ++i) {
    InputRoleOptions io;
    io.bench = bench;
    io.mode = mode;
    io.input = i;
    io.computes = compute_endpoints;
    io.ddes = dde_endpoints;
    io.origin = origin;
    inputs.push_back(std::make_unique<InputRole>(*input_contexts[i], io));
  }
  if (bench.timeslices) {
    for (auto& input : inputs) input->set_limit(*bench.timeslices);
  }
  for (auto& input : inputs) input->start();

  // Run for the duration (a count ends by itself), then agree on where every input stops.
  // --fail: compute node K's receiver is destroyed at T, its connections close as if its
  // process died; what it had handed over stays in its records.
  const auto started = std::chrono::steady_clock::now();
  const auto failing = bench.fail_spec();
  std::optional<RunRecords> failed_records;
  std::vector<scheduled_push::TimesliceSenderStats> at_failure;  // the inputs' when it failed
  auto fail_when_due = [&] {
    if (!failing || failed_records || std::chrono::steady_clock::now() - started < failing->at) return;
    for (auto& input : inputs) at_failure.push_back(input->sender_stats());
    result.records.failed_at = std::chrono::steady_clock::now().time_since_epoch() - origin;
    failed_records = computes[failing->compute]->take_records();
    computes[failing->compute].reset();
    ++result.records.computes_failed;
  };
  // --drain: compute node K drains at T; once drained its receiver goes (its connections
  // close: the inputs see it depart), what it handed over staying in its records. --join:
  // slot M-1, out from the start, joins at T.
  const auto draining = bench.drain_spec();
  const auto joining = bench.join_at();
  bool drain_started = false, join_started = false;
  std::optional<RunRecords> drained_records;
  auto change_membership_when_due = [&] {
    const auto elapsed = std::chrono::steady_clock::now() - started;
    if (draining && !drain_started && elapsed >= draining->at) {
      drain_started = true;
      result.records.membership_at = std::chrono::steady_clock::now().time_since_epoch() - origin;
      (void)computes[draining->compute]->drain();
    }
    if (draining && drain_started && !drained_records && computes[draining->compute]->drained()) {
      drained_records = computes[draining->compute]->take_records();
      computes[draining->compute].reset();
      ++result.records.computes_drained;
    }
    if (joining && !join_started && elapsed >= *joining && bench.standby_input()) {  // --join 'input,at=T'
      join_started = true;
      result.records.membership_at = std::chrono::steady_clock::now().time_since_epoch() - origin;
      inputs.back()->join();
    }
    if (joining && !join_started && elapsed >= *joining) {
      join_started = true;
      result.records.membership_at = std::chrono::steady_clock::now().time_since_epoch() - origin;
      result.records.joined_compute = bench.computes - 1;
      computes[bench.computes - 1]->join();
      ++result.records.computes_joined;
    }
  };
  auto running = [&] {
    if (stop_requested() || deadline.expired()) return false;
    if (bench.timeslices) {
      return std::any_of(inputs.begin(), inputs.end(),
                         [&](const auto& in) { return in->pushed() < *bench.timeslices; });
    }
    return std::chrono::steady_clock::now() - started < bench.duration;
  };
  while (running()) {
    fail_when_due();
    change_membership_when_due();
    std::this_thread::sleep_for(failing && !failed_records ? 1ms : 20ms);
  }
  result.interrupted = stop_requested() || deadline.expired();
  const std::uint64_t total =
      bench.timeslices && !result.interrupted ? *bench.timeslices : common_limit(inputs, interval);
  for (auto& input : inputs) input->set_limit(total);

  // Finish: every input sends the rest; every compute node hands over its share.
  const auto finish_timeout = deadline.remaining(60s);
  for (auto& input : inputs) input->end_stream();
  for (auto& input : inputs) {
    auto error = input->finish(finish_timeout);
    if (!error.empty() && result.error.empty()) result.error = std::move(error);
  }
  const auto wait_until =
      std::chrono::steady_clock::now() + std::max<std::chrono::nanoseconds>(deadline.remaining(30s), 1s);
  // A node that drains late in the run finishes draining now (its farewells come as the inputs finish).
  while (draining && drain_started && !drained_records && std::chrono::steady_clock::now() < wait_until &&
         !stop_requested()) {
    change_membership_when_due();
    std::this_thread::sleep_for(5ms);
  }
  for (auto& compute : computes) {
    if (!compute) continue;  // failed (--fail) or drained (--drain): the others built its share
    while (compute->handed_over() < compute->share_of(total) && std::chrono::steady_clock::now() < wait_until &&
           !stop_requested()) {
      std::this_thread::sleep_for(5ms);
    }
    if (compute->handed_over() < compute->share_of(total) && result.error.empty()) {
      result.error = fmt::format("a compute node handed over {} of its {} time-slices", compute->handed_over(),
                                 compute->share_of(total));
    }
  }
  // By load no node has a share known in advance: together they hand over every time-slice
  // (the inputs' finish() has seen each one built), some twice after a --fail.
  std::uint64_t handed_over = failed_records ? failed_records->timeslices.size() : 0;
  handed_over += drained_records ? drained_records->timeslices.size() : 0;
  for (auto& compute : computes) handed_over += compute ? compute->handed_over() : 0;
  if (handed_over < total && result.error.empty()) {
    result.error = fmt::format("the compute nodes handed over {} of the {} time-slices", handed_over, total);
  }

  result.records.expected_timeslices = total;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto stats = inputs[i]->sender_stats();
    // The replicas run on compute nodes 0, 1, ...: replica d on compute node d.
    for (const auto d : stats.lost_ddes) {
      auto& lost = result.records.dde_replicas_lost;
      if (std::find(lost.begin(), lost.end(), d) == lost.end()) lost.push_back(static_cast<ns::ComputeIndex>(d));
    }
    if (!at_failure.empty()) {
      result.records.proposals_after_failure += stats.proposals_taken - at_failure[i].proposals_taken;
      result.records.assignments_after_failure += stats.assignments_taken - at_failure[i].assignments_taken;
    }
    auto& input = inputs[i];
    if (stats.join_from != 0) {  // --join 'input,at=T': the standby input's boundary
      ++result.records.inputs_joined;
      result.records.input_join_from = stats.join_from;
    }
    result.records.contributions_reassigned += stats.reassigned;
    result.records.computes_lost = std::max(result.records.computes_lost, stats.computes_lost);
    result.records.push_blocked += std::chrono::nanoseconds(stats.push_blocked_ns);
    result.records.pushes_blocked += stats.pushes_blocked;
    result.records.assignment_wait += std::chrono::nanoseconds(stats.assignment_wait_ns);
    result.records.assignment_waits += stats.assignment_waits;
    auto intervals = input->take_records();
    result.records.intervals.insert(result.records.intervals.end(), intervals.begin(), intervals.end());
  }
  if (failed_records) computes.push_back(nullptr);  // its records join the others' below
  if (drained_records) {
    failed_records = std::move(drained_records);
    computes.push_back(nullptr);
  }
  for (auto& compute : computes) {
    if (!compute && !failed_records) continue;  // the drained node's slot: its records come last
    auto r = compute ? compute->take_records() : std::move(*failed_records);
    if (!compute) failed_records.reset();
    auto& all = result.records;
    all.timeslices.insert(all.timeslices.end(), r.timeslices.begin(), r.timeslices.end());
    all.fill.insert(all.fill.end(), r.fill.begin(), r.fill.end());
    all.peak_fill_percent = std::max(all.peak_fill_percent, r.peak_fill_percent);
    all.corrupt += r.corrupt;
    if (r.fallback && (compute || !all.fallback)) all.fallback = r.fallback;  // a DDE's, a live one's first
    // Assignment by load: the current assignment, the latest any coordinator decided.
    if (!r.assignments.empty() &&
        (all.assignments.empty() || all.assignments.back().interval < r.assignments.back().interval))
      all.assignments = r.assignments;
    all.buffer_bytes = r.buffer_bytes;
    all.timeslices_per_interval = r.timeslices_per_interval;
    all.warmup_intervals = r.warmup_intervals;
  }
  std::sort(result.records.timeslices.begin(), result.records.timeslices.end(),
            [](const auto& a, const auto& b) { return a.timeslice < b.timeslice; });
  std::sort(result.records.fill.begin(), result.records.fill.end(),
            [](const auto& a, const auto& b) { return a.at < b.at; });
  if (result.records.corrupt > 0 && result.error.empty()) {
    result.error = fmt::format("{} contributions arrived with the wrong stamp", result.records.corrupt);
  }
  return result;
}

}  // namespace netio::tools::tsbench
