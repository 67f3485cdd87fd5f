// SPDX-License-Identifier: MIT
/// @file
/// The best-effort credit ("ticket") logic of FLESnet, shared by the socket pattern and the
/// simulator.
///
/// Each compute node grants each input a fixed number of credits, sized by the part of its
/// receive buffer that input may fill. An input spends one credit of compute node c per
/// contribution it sends to c (InputCredits). The compute node counts the contributions of
/// each time-slice (TimesliceCompletion); when all inputs contributed, the time-slice is
/// complete; when the user is done with it and its buffer space is free (release), one credit
/// goes back to every input that contributed. Releasing an incomplete time-slice (after a
/// fault) returns the credits of the inputs that did contribute.
#pragma once

#include "netio/scheduler/config.hpp"
#include "netio/scheduler/time.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace netio::scheduler {

/// How many contributions of contribution_bytes fit into one input's share of the receive
/// buffer (receive_buffer_bytes / input_count). Throws netio::Error (Errc::invalid_option) when
/// not even one fits, or for a zero size or count.
std::uint32_t credits_per_input(std::uint64_t receive_buffer_bytes, std::uint32_t input_count,
                                std::uint64_t contribution_bytes);

/// The fewest credits per input–compute pair a receive buffer may give. With one, an input's
/// every contribution to a compute node waits a full round trip for the credit of the one
/// before; with two, one contribution is in flight while the next waits for its credit.
inline constexpr std::uint32_t min_credits_per_input = 2;
/// The credits per pair when nobody sized the buffer (the FLESnet paper's 16).
inline constexpr std::uint32_t default_credits_per_input = 16;

/// The receive buffer that gives each of input_count inputs `credits` contributions of
/// contribution_bytes: credits × input_count × contribution_bytes, so that credits_per_input()
/// of it is `credits` again. Throws netio::Error (Errc::invalid_option) for a zero argument or a
/// product beyond 64 bits.
std::uint64_t buffer_for_credits(std::uint32_t credits, std::uint32_t input_count, std::uint64_t contribution_bytes);

/// The text refusing a receive buffer that gives `credits` (fewer than min_credits_per_input)
/// per input–compute pair: "<sized_by> gives <credits> credit(s) per input–compute pair",
/// why two is the minimum, then "; give <instead>". The caller throws it its own way.
std::string too_few_credits_message(std::uint64_t credits, std::string_view sized_by, std::string_view instead);

/// An input's credits, per compute node.
class InputCredits {
 public:
  InputCredits(std::uint32_t compute_count, std::uint32_t credits_per_compute);  ///< both ≥ 1

  std::uint32_t available(ComputeIndex c) const;
  /// Spends a credit of c; false (nothing spent) when none is left.
  bool try_take(ComputeIndex c);
  /// Credits c sent back. Throws netio::Error (Errc::protocol_error) when the input would hold
  /// more than it was granted: a compute node returning what it never got is a protocol fault.
  void give_back(ComputeIndex c, std::uint32_t count = 1);

 private:
  void check(ComputeIndex c) const;
  std::uint32_t granted_;
  std::vector<std::uint32_t> available_;
};

/// A compute node's view of the time-slices it builds.
class TimesliceCompletion {
 public:
  TimesliceCompletion(const SchedulerConfig& config, ComputeIndex self);

  /// Input i's contribution to t arrived. Returns true when t is complete with it. Throws
  /// netio::Error (Errc::protocol_error) when t does not belong to this compute node, i is out of
  /// range or the contribution is a duplicate. (A contribution to a t released already opens
  /// it anew: the receiver's buffer bookkeeping, not this class, rejects such a peer.)
  bool on_contribution(InputIndex i, TimesliceIndex t);
  bool is_complete(TimesliceIndex t) const;
  /// t's buffer space is free: forgets t and returns the inputs owed one credit each, in
  /// ascending order (all inputs when t was complete). Throws for a t never seen.
  std::vector<InputIndex> release(TimesliceIndex t);
  std::size_t open_timeslices() const noexcept { return open_.size(); }

 private:
  std::uint32_t input_count_;
  std::uint32_t compute_count_;
  ComputeIndex self_;
  struct Open {
    std::vector<bool> contributed;  ///< per input
    std::uint32_t count = 0;
  };
  std::map<TimesliceIndex, Open> open_;  ///< time-slices seen and not yet released
};

}  // namespace netio::scheduler
