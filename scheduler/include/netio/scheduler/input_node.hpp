// SPDX-License-Identifier: MIT
/// @file
/// One input node of the time-slice building pattern, as pure logic: which contribution to
/// send next and when, in either mode, with the credits of every compute node.
///
///   - best_effort (FLESnet's baseline): contributions go out in the offset round-robin order
///     of TimesliceLayout as soon as the compute node they go to has granted a credit;
///   - dfs: the Input Engine paces them (InputEngine), and a send also needs a credit.
/// A compute node grants its credits once (grant(), from its welcome) and returns one per
/// contribution whose buffer space it freed (on_credit()). Until granted, a compute node has
/// no credits: its contributions wait. A compute node that is gone (on_compute_lost()) gets
/// nothing more: its contributions are skipped (the driver reports them undeliverable) and,
/// in DFS mode, its outstanding acknowledgements count as arrived so that the IE's
/// intervals still end and the IE never blocks on a dead node.
///
/// With SchedulerConfig::assignment = load, which compute node a time-slice goes to is the
/// coordinator's (assigner.hpp): the input waits for interval j's assignment
/// (on_assignment()) before it sends into j (wait_for_assignment), and once it has sent j it
/// hands the coordinator its LoadReport (take_load_report()). DFS's pacing and the compute
/// node visited at each moment do not change; within a round, a node with several places
/// takes them in index order (in_node_order()).
///
/// Membership (membership.hpp): a slot that is not a member at t (standby, not joined yet,
/// or drained) gets none of its time-slices; they go to the members (Membership::route()),
/// attempt 0, under the target's credits. The change is the driver's to learn and pass in
/// (on_membership()) before this input sends into the boundary's round. Under load the
/// coordinator names the change in an interval's assignment (on_assignment() applies it); the
/// driver passes a node's request on (request_change()), which this input flags in its
/// load reports until then.
///
/// Inputs joining under load (input_membership.hpp, assigner.hpp): a member input flags a
/// standby input's request (request_input_join()) in its reports until an assignment names the
/// join; a standby input (constructed with standby_input) sends nothing and keeps no
/// assignment until the one naming its own join, which starts it at the boundary (start_at()),
/// while it applies the compute membership changes of every assignment it gets meanwhile.
///
/// No clock, sockets or threads: the driver passes the time and carries out the decisions.
/// Not thread-safe: one driver thread (the pattern's event-loop thread).
#pragma once

#include "netio/scheduler/assigner.hpp"
#include "netio/scheduler/config.hpp"
#include "netio/scheduler/input_engine.hpp"
#include "netio/scheduler/membership.hpp"
#include "netio/scheduler/time.hpp"
#include "netio/scheduler/timeslice_layout.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

namespace netio::scheduler {

enum class Mode { best_effort, dfs };

std::string_view to_string(Mode mode) noexcept;

class InputNode {
 public:
  /// Validates config; `standby`: slots that are not members at the start (membership.hpp);
  /// `standby_input`: this input is on standby (under load it starts with the assignment
  /// naming its join; under the fixed assignment its driver calls start_at()).
  InputNode(const SchedulerConfig& config, InputIndex self, Mode mode, const std::vector<ComputeIndex>& standby = {},
            bool standby_input = false);

  struct Next {
    enum class What {
      send,                       ///< send `timeslice` to `compute` now, then on_sent()
      skip,                       ///< `compute` is gone: drop `timeslice`, then on_skipped()
      wait_until,                 ///< DFS: `timeslice` is due at `due`
      wait_for_credit,            ///< `compute` has no credit left (or granted none yet)
      wait_for_acknowledgements,  ///< DFS: θ of the current interval's acknowledgements are missing
      wait_for_assignment,        ///< load: the coordinator has not assigned `timeslice`'s interval yet
    };
    What what = What::send;
    TimesliceIndex timeslice = 0;
    ComputeIndex compute = 0;
    Time due{0};
    bool paced = false;  ///< DFS: `due` is the plan's (InputEngine's SendDecision not best-effort)

    friend bool operator==(const Next&, const Next&) = default;
  };
  /// What to do at `now`; changes nothing.
  Next next(Time now) const;

  /// `timeslice` (the one next() named with send) went out at `now`: spends a credit.
  void on_sent(TimesliceIndex timeslice, Time now);
  /// `timeslice` (named with skip) was dropped: in DFS mode it counts as sent and
  /// acknowledged at once, which may end an interval (the report then goes to the DDEs).
  std::optional<IntervalCompletion> on_skipped(TimesliceIndex timeslice, Time now);
  /// DFS: InputEngine::take_clock_sample(); none in best-effort mode.
  std::optional<ClockProbe> take_clock_sample();
  /// load: the report of the interval whose last contribution on_sent() or on_skipped() just
  /// took (for every coordinator), once; nothing otherwise.
  std::optional<LoadReport> take_load_report();
  /// load: the coordinator's assignment of an interval. True when it is new and used; an
  /// interval assigned already keeps its first assignment (replicas decide the same), and one
  /// this input has gone past is ignored. Its membership changes (the coordinator's, from the
  /// interval's first time-slice) are applied with it. Throws netio::Error
  /// (Errc::protocol_error) for shares or changes that do not fit the configuration
  /// (check_assignment()) or the membership (a member joining, a non-member leaving).
  /// Its input joins are noted (a request for them is flagged no more). A standby input not
  /// started yet keeps none but the one naming its own join, which starts it there (true);
  /// from the others it applies the compute membership changes only (true when one was new).
  bool on_assignment(const IntervalAssignment& assignment);
  /// load: standby input x asked to join (its request reached this input). Flagged in every
  /// load report (LoadReport::joining_inputs) until an assignment names x's join. True when
  /// new; false when asked already, named already, or x is this input. Throws netio::Error
  /// (Errc::protocol_error) under the fixed assignment or for x out of range.
  bool request_input_join(InputIndex x);
  /// Standby input x's boundary, once an assignment this input took named it (load).
  std::optional<TimesliceIndex> input_joins_from(InputIndex x) const;
  /// A standby input (standby_input): whether it started (start_at(), or its join's assignment).
  bool started() const noexcept { return started_; }
  /// load: compute node c asked this input to drain it (joins false) or, a standby slot, to
  /// join (joins true). Flagged in every load report (draining_compute, joining_compute) until
  /// an assignment names c's change. True when new; false when asked already, or when the
  /// change it asks for is named already. Throws netio::Error (Errc::protocol_error) under
  /// the fixed assignment, for c out of range, or a join of a slot that is not a standby slot.
  bool request_change(ComputeIndex c, bool joins);
  /// Which compute node builds t: t mod M (fixed), the coordinator's (load), or nothing while
  /// its interval is not assigned yet; a slot that is not a member at t is routed around
  /// (Membership::route()).
  std::optional<ComputeIndex> compute_of(TimesliceIndex t) const;
  /// A membership change (every input gets the same ones). True when new; false when known.
  /// Throws netio::Error (Errc::protocol_error) when this input has sent into the boundary's
  /// round already (too late to agree with the others), Errc::invalid_option for a change
  /// Membership::apply() refuses.
  bool on_membership(const MembershipChange& change);
  const Membership& membership() const noexcept { return membership_; }
  /// A standby input joining (input_membership.hpp): its first contribution is to round
  /// start `from`, the boundary a compute node named; nothing below it is sent. Before the
  /// first send only. Throws netio::Error (Errc::invalid_option) after a send, for a `from`
  /// that is not an interval start, and under assignment by load. DFS: its engine starts at
  /// the boundary's interval.
  void start_at(TimesliceIndex from);

  /// The credits compute node c grants this input (its welcome). Throws netio::Error
  /// (Errc::invalid_option) for c out of range, 0 credits, or a second grant.
  void grant(ComputeIndex c, std::uint32_t credits);
  /// c returned `count` credits. Throws (Errc::invalid_option) when it would return more than it
  /// granted: the compute node is faulty.
  void on_credit(ComputeIndex c, std::uint32_t count = 1);
  /// DFS: the acknowledgement (arrival) of `timeslice`; the interval's report and request
  /// at its last one. Best-effort: ignored (nullopt). Throws (Errc::invalid_option) for a
  /// time-slice not outstanding.
  std::optional<IntervalCompletion> on_acknowledged(TimesliceIndex timeslice, Time now);
  /// DFS: a DDE's proposal (see InputEngine::on_proposal); false in best-effort mode.
  bool on_proposal(const Proposal& proposal);
  /// c is gone: what it owed counts as acknowledged now (DFS); returns the completions that
  /// caused, in order. Idempotent.
  std::vector<IntervalCompletion> on_compute_lost(ComputeIndex c, Time now);

  Mode mode() const noexcept { return mode_; }
  InputIndex self() const noexcept { return self_; }
  bool lost(ComputeIndex c) const { return lost_.at(c); }
  std::uint32_t available(ComputeIndex c) const { return available_.at(c); }
  std::uint32_t granted(ComputeIndex c) const { return granted_.at(c); }
  std::uint64_t sent_count() const noexcept { return sent_; }  // sent and skipped
  /// The next time-slice in this input's order (what next() names once paced and credited).
  /// load: within a round, a compute node that builds several of its time-slices gets them in
  /// index order (see in_node_order()); until the round's interval is assigned, the fixed order.
  TimesliceIndex next_timeslice() const noexcept;
  const TimesliceLayout& layout() const noexcept { return layout_; }
  const InputEngine* engine() const noexcept { return engine_ ? &*engine_ : nullptr; }

 private:
  void check(ComputeIndex c) const;
  // DFS: the outstanding time-slices of each compute node, oldest first.
  void push_unacknowledged(ComputeIndex c, TimesliceIndex t);
  bool pop_unacknowledged(ComputeIndex c, TimesliceIndex t);  // false: not outstanding
  void grow_rings(std::uint32_t at_least);
  // load: samples the credits out at a round's start; closes the interval's report at its end.
  void note_load();
  void count_sent();
  ComputeIndex assigned(TimesliceIndex t) const;  // compute_of(), which must be known
  // load: the engines' offset round-robin order (TimesliceLayout::timeslice_at) and the order
  // sent. The same places of a round are visited at the same moments; where a compute node
  // has several places in a round, this input's visits to it take them in index order, so
  // that every compute node receives its time-slices in index order from every input (its
  // hand-over in order relies on that, as under the fixed assignment). The identity while
  // the interval is unassigned and under the fixed assignment.
  TimesliceIndex in_node_order(TimesliceIndex engine_timeslice) const noexcept;
  TimesliceIndex in_engine_order(TimesliceIndex timeslice) const noexcept;
  void forget_assignments();
  void begin_at(TimesliceIndex from);  // start_at() without the checks of who calls it
  // load, a standby input not started: the compute changes of `assignment`, and its start
  // when the assignment names its own join.
  bool on_assignment_on_standby(const IntervalAssignment& assignment);
  // The node of each place of the round starting at round_start (compute_count entries), or
  // nullptr when every place goes to its own slot (fixed, every slot a member) or the
  // round's interval is not assigned yet.
  const ComputeIndex* round_nodes(TimesliceIndex round_start) const;
  std::optional<ComputeIndex> own_of(TimesliceIndex t) const;  // before membership routing

  TimesliceLayout layout_;
  Assignment assignment_;
  InputIndex self_;
  Mode mode_;
  std::optional<InputEngine> engine_;  ///< DFS only
  std::uint64_t sent_ = 0;
  std::vector<std::uint32_t> granted_;
  std::vector<std::uint32_t> available_;
  std::vector<bool> lost_;
  /// DFS: per compute node, the time-slices sent and not acknowledged, in the order sent (a
  /// connection acknowledges in that order, so the one acknowledged is nearly always the
  /// oldest: no search, no tree). One ring of ring_size_ slots per compute node, all in one
  /// array (compute node c's at [c·ring_size_, (c+1)·ring_size_)): their number is bounded by
  /// the credits granted as long as acknowledgements come before the credits behind them, so
  /// the rings are sized at grant() (up to 64 slots) and grow (all of them, doubling) only
  /// beyond that or when a peer returns credits first.
  struct Ring {
    std::uint32_t head = 0;
    std::uint32_t count = 0;
  };
  std::vector<TimesliceIndex> unacknowledged_;
  std::vector<Ring> rings_;      // by compute node
  std::uint32_t ring_size_ = 0;  // a power of 2 (or 0 before the first grant)
  // load: the assigned intervals' tables (assignment_table()), from the oldest one with a
  // time-slice outstanding on; the current interval's sums of credits out (thousandths, per
  // compute node) and how many rounds they sum; the report of an interval just sent.
  std::map<IntervalIndex, std::vector<ComputeIndex>> tables_;
  std::vector<std::uint64_t> use_sums_;
  std::uint64_t use_samples_ = 0;
  std::optional<LoadReport> load_report_;
  Membership membership_;
  // load: per compute node, what it asked for and no assignment named yet (request_change()).
  enum class Request : std::uint8_t { none, drain, join };
  std::vector<Request> requested_;
  // load: standby inputs whose request reached this input and no assignment named yet, and
  // the boundaries assignments named.
  std::vector<InputIndex> inputs_requested_;
  std::map<InputIndex, TimesliceIndex> input_joins_;
  std::uint32_t input_count_;
  bool started_ = true;  // false for a standby input until it starts
  // round_nodes() of a round with a non-member: the last one asked for (rounds are visited in order).
  mutable TimesliceIndex cached_round_ = ~TimesliceIndex{0};
  mutable std::vector<ComputeIndex> cached_nodes_;
};

}  // namespace netio::scheduler
