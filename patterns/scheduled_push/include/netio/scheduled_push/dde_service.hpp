// SPDX-License-Identifier: MIT
/// @file
/// A DDE replica (scheduler::DeterministicEngine) served over netio: input nodes connect to
/// it with a low-latency send socket each (TimesliceSender does, for every endpoint in
/// its options' dde_endpoints), send their meta-data reports and proposal requests
/// (scheduler/control_messages.hpp), and get their proposals back as replies on that same
/// connection. A report's arrival time is this node's steady clock. Each input starts with the
/// clock handshake (two probes, each answered with an echo on the same connection), which
/// gives the DDE that input's clock offset before its first report.
///
/// With SchedulerConfig::assignment = load it is also the coordinator (scheduler::Assigner):
/// inputs send their load reports here, and every interval's assignment goes to every input
/// as a reply on the connection its latest report came on (one the input's reply window does
/// not take now goes with its next report: an input waits for every interval's assignment).
///
/// Proposals for input i go to the connection i's latest request came on. A message that
/// does not decode, or names an input out of range, is dropped and logged once per
/// connection; the others are served on.
///
/// Threading: all work runs on the context's event-loop thread. Construct and destroy on
/// any thread (not inside this service's own callbacks); no callback runs after the
/// destructor returned. Several replicas may run, on one compute node each (or anywhere):
/// given the same reports they propose the same (see deterministic_engine.hpp).
#pragma once

#include "netio/context.hpp"
#include "netio/endpoint.hpp"
#include "netio/scheduler/config.hpp"
#include "netio/scheduler/control_messages.hpp"
#include "netio/scheduler/time.hpp"
#include "netio/socket_options.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace netio::scheduled_push {

struct DdeServiceStats {
  std::uint64_t reports = 0;
  std::uint64_t requests = 0;
  std::uint64_t proposals_sent = 0;
  std::uint64_t proposals_dropped = 0;  ///< the input's reply window was full, or it was gone
  std::uint64_t bad_messages = 0;
  std::uint64_t clock_probes = 0;   ///< start handshake probes answered
  std::uint64_t clock_samples = 0;  ///< interval-start clock samples taken (extension 9)
  /// The safety net (extension 7, netio/scheduler/fallback_guard.hpp): how often pacing lost
  /// and this DDE switched to best-effort, and how many intervals it proposed best-effort.
  std::uint64_t fallbacks = 0;
  std::uint64_t fallbacks_on_spread = 0;  ///< of `fallbacks`: on the spread rule (extension 10)
  std::uint64_t best_effort_intervals = 0;
  bool fallback_active = false;  ///< the latest interval decided runs best-effort
  /// Assignment by load (SchedulerConfig::assignment): the inputs' load reports taken, and
  /// the interval assignments sent to inputs or dropped (input gone, or 16 waiting for its
  /// reply window: one that does not fit it is sent again with the input's next report).
  std::uint64_t load_reports = 0;
  std::uint64_t assignments_sent = 0;
  std::uint64_t assignments_dropped = 0;
  /// The assignment in force: the mode; the latest interval decided and its shares per compute
  /// node (time-slices per interval; fixed: every node the same; load: a lost node's is 0);
  /// and the compute nodes some input reported lost.
  scheduler::Assignment assignment = scheduler::Assignment::fixed;
  std::uint64_t assigned_interval = 0;
  std::vector<std::uint32_t> assigned_shares;
  std::vector<scheduler::ComputeIndex> computes_reported_lost;
  /// Standby inputs whose join an input told this replica of (its history counts each from
  /// the interval of its boundary on).
  std::uint64_t inputs_joined = 0;
};

class DdeService {
 public:
  /// Called on the event-loop thread with every proposal this replica sends (to compare
  /// replicas, or to log proposed against actual intervals).
  using ProposalObserver = std::function<void(scheduler::InputIndex, const scheduler::Proposal&)>;

  /// Listens at `local` (port 0 picks one), admitting input nodes within `admission`
  /// (netio/socket_options.hpp: allow-list, connection limits, timeouts; input nodes bring no
  /// pre-shared key, so a `key` turns every one away). Throws netio::Error if it cannot bind,
  /// or Errc::invalid_option for a bad config. `standby_inputs`: inputs that report nothing
  /// until they join (TimesliceReceiverOptions::standby_inputs, equal on every node): an
  /// interval is complete here when every input that is a member at it reported it; the
  /// inputs tell every replica of a join (wire.hpp InputJoin) before any report from its
  /// boundary's interval on. Under assignment by load this replica's Assigner also waits for
  /// a standby input's load reports only from the interval its decision made it join at; the
  /// standby input's request ({x, 0}) is passed on to every input, which flag it in their
  /// load reports (docs/design/assignment.md), and the standby input is sent every decision
  /// from its first message on.
  DdeService(Context& context, const Endpoint& local, const scheduler::SchedulerConfig& config,
             ProposalObserver on_proposal = {}, AdmissionOptions admission = {},
             const std::vector<scheduler::InputIndex>& standby_inputs = {});
  ~DdeService();
  DdeService(const DdeService&) = delete;
  DdeService& operator=(const DdeService&) = delete;

  Endpoint local_endpoint() const;
  DdeServiceStats stats() const;  ///< any thread

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace netio::scheduled_push
