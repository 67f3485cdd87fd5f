// SPDX-License-Identifier: MIT
/// @file
/// Where a lost compute node's time-slices go (issue 51, item 2), as pure logic.
///
/// When an input loses compute node c (its data connection failed, or c made no progress:
/// no credit back for progress_timeout while it held contributions), every time-slice that
/// would have been built on c and is not known built there is rerouted: the contributions
/// the input retained (sent, never credited) and those it has not sent yet. Every input
/// must send a time-slice to the same node, without asking anyone, so the node is a function
/// of the time-slice and of the nodes lost only: reroute(). Inputs learn of a loss at
/// slightly different moments; a compute node that hears of one from one input tells every
/// input (the pattern's LostCompute reply), so their views agree within a round trip.
///
/// The delivery number (`attempt`) counts the reassignments: 0 on the time-slice's own node,
/// +1 for every lost node on the way to the one that builds it. A time-slice that was handed
/// to the application on the lost node just before it died, but whose credit did not leave
/// it, is built again with a higher attempt: the application drops the copy with the higher
/// number (the time-slice's index is the key).
///
/// No clock, sockets or threads.
#pragma once

#include "netio/scheduler/time.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace netio::scheduler {

struct Reroute {
  ComputeIndex compute = 0;  ///< the node that builds the time-slice
  std::uint8_t attempt = 0;  ///< its delivery number: lost nodes on the way (255 at most)

  friend bool operator==(const Reroute&, const Reroute&) = default;
};

/// Where time-slice t, whose own node (t mod M, or the coordinator's under assignment by
/// load) is `own`, is built, given which of the M = lost.size() nodes are lost:
///   - own, attempt 0, when own is not lost;
///   - otherwise the first node not lost in own + 1 + k, own + 2 + k, ... (mod M, own left
///     out), k = (t / M) mod (M − 1): a lost node's time-slices spread evenly over the
///     others (under t mod M, own's consecutive time-slices go to consecutive nodes), and
///     attempt 1 + the lost nodes passed on the way;
///   - nothing when every node is lost.
/// Depends on the lost set only, not on the order the losses were seen in: inputs that saw
/// two losses in different orders still agree.
std::optional<Reroute> reroute(TimesliceIndex t, ComputeIndex own, const std::vector<bool>& lost);

}  // namespace netio::scheduler
