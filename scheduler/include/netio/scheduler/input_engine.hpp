// SPDX-License-Identifier: MIT
/// @file
/// The Input Engine (IE) of one input node (the DFS paper, section III-C).
///
/// The IE decides when this input sends which contribution. The driver asks next_send(now),
/// sends the named time-slice when it is due (and, in the socket pattern, when it holds a
/// credit for that compute node), and reports it with on_sent(); it reports every
/// acknowledgement with on_acknowledged() and every proposal from a DDE with on_proposal().
/// All times are this node's clock.
///
/// The schedule of interval j (n contributions, R rounds of M, in the offset-based order of
/// TimesliceLayout):
///   - j may start once interval j-1 is sent completely and ⌈θ·n⌉ of its contributions are
///     acknowledged (θ = ack_threshold; gated_ack_threshold after a gated best-effort j-1),
///     and not before the proposed start tp_j;
///   - tm_j is the time of j's first send; durr_j = durp_j / R; round y is due at
///     tr_{j,y} = tm_j + durr_j * y, and its p-th contribution at tr_{j,y} + durr_j * p / M
///     (the round's duration divided fairly over its sends);
///   - from the proposed end tp_j + durp_j on, whatever is left goes best-effort (no pacing);
///   - without a proposal for j the IE uses its last one, moved on by whole intervals
///     (tp = tp_last + (j - last) * spacing, same duration); the spacing is the DDE's, read
///     off the two latest proposals taken ((tp_b - tp_a) / (b - a)), so that an IE that
///     missed proposals stays in step with the others (the DDE spaces starts by a measured
///     duration, not by the shortened durp); with one proposal only, durp_last. Before the
///     first proposal every contribution goes best-effort. The IE never waits for a DDE.
/// When the last acknowledgement of j arrives, on_acknowledged() returns the meta-data report
/// (tm_j, durm_j = that time - tm_j, the median send → acknowledgement latency, the durp_j
/// paced by) and the request for the proposal of interval j + proposal_distance, which the
/// driver sends to every DDE.
///
/// When to ask next_send() again: at `due` after wait_until (a timer), after every
/// acknowledgement after wait_for_acknowledgements, and after a taken proposal (it may move
/// the start of an interval not yet begun). Memory: each interval in flight holds n send
/// times; an acknowledgement that never comes (a dead compute node) keeps its interval in
/// flight, and below θ (a gated interval: below its gate) blocks the next one: detecting that
/// is the driver's job.
#pragma once

#include "netio/scheduler/config.hpp"
#include "netio/scheduler/control_messages.hpp"
#include "netio/scheduler/time.hpp"
#include "netio/scheduler/timeslice_layout.hpp"

#include <map>
#include <optional>
#include <vector>

namespace netio::scheduler {

struct SendDecision {
  enum class Action {
    send,                       ///< send `timeslice` now
    wait_until,                 ///< `timeslice` is due at `due`; ask again then
    wait_for_acknowledgements,  ///< the current interval is sent; θ of its acknowledgements are missing
  };
  Action action = Action::send;
  TimesliceIndex timeslice = 0;  ///< send, wait_until: the next contribution, in order
  ComputeIndex compute = 0;      ///< the compute node it goes to
  Time due{0};                   ///< send (paced), wait_until: when it is due
  bool best_effort = false;      ///< send: no pacing applies (no proposal, or past the proposed end)

  friend bool operator==(const SendDecision&, const SendDecision&) = default;
};

/// What the driver sends to every DDE when an interval is fully acknowledged.
struct IntervalCompletion {
  MetadataReport report;
  ProposalRequest request;
};

/// The start and duration an interval is paced by (IE clock).
struct IntervalPlan {
  IntervalIndex interval = 0;
  Time start{0};               ///< tp_j
  Duration duration{0};        ///< durp_j
  bool from_proposal = false;  ///< false: derived from an earlier proposal
  /// The DDE's fallback (Proposal::best_effort): unpaced, and the next interval starts once
  /// this one is sent, without waiting for θ of its acknowledgements. Its report's duration
  /// is then tm_{j+1} - tm_j, the time the network took to carry it, as a paced interval's is.
  bool best_effort = false;
  /// With best_effort: a gate stays (gated_ack_threshold, all of them by default) and the
  /// report measures to the last acknowledgement, as before the first proposal
  /// (Proposal::gated, extension 10).
  bool gated = false;

  Time end() const { return start + duration; }
  friend bool operator==(const IntervalPlan&, const IntervalPlan&) = default;
};

class InputEngine {
 public:
  InputEngine(const SchedulerConfig& config, InputIndex self);  ///< validates config

  /// What to do at `now`. Does not change the engine.
  SendDecision next_send(Time now) const;
  /// The driver sent `timeslice` at `now`. It must be the one next_send() named with
  /// Action::send or wait_until (sending early is the driver's choice, e.g. a simulator that
  /// ignores pacing); throws netio::Error (Errc::invalid_option) otherwise.
  void on_sent(TimesliceIndex timeslice, Time now);
  /// An acknowledgement of `timeslice` arrived at `now`. Returns the report and request when
  /// it was the interval's last one. Throws netio::Error (Errc::invalid_option) for a time-slice
  /// not sent or acknowledged already: the peer is faulty.
  std::optional<IntervalCompletion> on_acknowledged(TimesliceIndex timeslice, Time now);
  /// A DDE's proposal. Returns true when taken: the first proposal of an interval that has
  /// not started and is at most proposal_distance ahead of the current one; later copies
  /// (other replicas) and stale or far-off proposals are ignored. A proposal that comes after
  /// its interval started is not taken (false) but, when it is the newest word on the
  /// schedule, the intervals after it are derived from it (plan()): reports and proposals
  /// that queue behind contributions must not leave an IE unpaced for good.
  bool on_proposal(const Proposal& proposal);

  /// Extension 9: the clock sample of the interval that started with the last on_sent(), once
  /// (none after that, or when SchedulerConfig::clock_start_samples is off). The driver sends
  /// it to every DDE on the control connection, ahead of the contribution if it can. An
  /// interval starts when the ports' queues are at their shortest (a paced interval after
  /// the gap its proposed start leaves), where a report, sent at the interval's last
  /// acknowledgement, meets them at their longest.
  std::optional<ClockProbe> take_clock_sample();

  /// A standby input joining (input_membership.hpp): its first interval is `interval`, not 0.
  /// Before the first send only; throws netio::Error (Errc::invalid_option) after one.
  void start_at(IntervalIndex interval);

  IntervalIndex current_interval() const noexcept { return current_; }
  /// The plan the current interval runs (or would start) with; none: best-effort.
  std::optional<IntervalPlan> plan(IntervalIndex interval) const;
  const TimesliceLayout& layout() const noexcept { return layout_; }

 private:
  struct InFlight {  // an interval started and not yet fully acknowledged
    Time start{0};   ///< tm_j
    std::optional<IntervalPlan> plan;
    std::uint64_t sent = 0;
    std::uint64_t acknowledged = 0;
    std::vector<Time> sent_at;  ///< per place in the interval; acknowledged ones are acknowledged_mark
    std::vector<Duration> latencies;
    std::optional<Time> next_start;          ///< tm_{j+1}, once the next interval started
    std::optional<Time> probe_acknowledged;  ///< of TimesliceLayout::probe_timeslice(j)
  };

  void advance_if_released();
  void note_spacing(const Proposal& proposal);
  Time due_time(const InFlight& interval, std::uint64_t place) const;

  SchedulerConfig config_;
  TimesliceLayout layout_;
  InputIndex self_;
  std::uint64_t threshold_;        ///< ⌈θ·n⌉
  std::uint64_t gated_threshold_;  ///< ⌈gated_ack_threshold·n⌉, a gated best-effort interval's
  IntervalIndex current_ = 0;      ///< the interval being sent (or waiting to start)
  std::map<IntervalIndex, InFlight> in_flight_;
  std::map<IntervalIndex, Proposal> proposals_;  ///< received, for intervals not started
  std::optional<IntervalPlan> last_plan_;        ///< the newest plan: of a started interval, or a late proposal
  std::optional<Proposal> newest_taken_;         ///< the taken proposal of the highest interval
  std::optional<Duration> spacing_;              ///< the DDE's between starts, from two proposals
  std::optional<ClockProbe> clock_sample_;       ///< of the interval just started, not taken yet
};

}  // namespace netio::scheduler
