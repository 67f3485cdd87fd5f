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
/// No clock, sockets or threads: the driver passes the time and carries out the decisions.
/// Not thread-safe: one driver thread (the pattern's event-loop thread).
#pragma once

#include "netio/scheduler/config.hpp"
#include "netio/scheduler/input_engine.hpp"
#include "netio/scheduler/time.hpp"
#include "netio/scheduler/timeslice_layout.hpp"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace netio::scheduler {

enum class Mode { best_effort, dfs };

std::string_view to_string(Mode mode) noexcept;

class InputNode {
 public:
  InputNode(const SchedulerConfig& config, InputIndex self, Mode mode);  ///< validates config

  struct Next {
    enum class What {
      send,                       ///< send `timeslice` to `compute` now, then on_sent()
      skip,                       ///< `compute` is gone: drop `timeslice`, then on_skipped()
      wait_until,                 ///< DFS: `timeslice` is due at `due`
      wait_for_credit,            ///< `compute` has no credit left (or granted none yet)
      wait_for_acknowledgements,  ///< DFS: θ of the current interval's acknowledgements are missing
    };
    What what = What::send;
    TimesliceIndex timeslice = 0;
    ComputeIndex compute = 0;
    Time due{0};

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
  TimesliceIndex next_timeslice() const noexcept { return layout_.timeslice_at(self_, sent_); }
  const TimesliceLayout& layout() const noexcept { return layout_; }
  const InputEngine* engine() const noexcept { return engine_ ? &*engine_ : nullptr; }

 private:
  void check(ComputeIndex c) const;
  // DFS: the outstanding time-slices of each compute node, oldest first.
  void push_unacknowledged(ComputeIndex c, TimesliceIndex t);
  bool pop_unacknowledged(ComputeIndex c, TimesliceIndex t);  // false: not outstanding
  void grow_rings(std::uint32_t at_least);

  TimesliceLayout layout_;
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
};

}  // namespace netio::scheduler
