// SPDX-License-Identifier: MIT
#include "netio/scheduler/membership.hpp"

#include "netio/error.hpp"
#include "netio/internal/reject.hpp"
#include "netio/scheduler/reassignment.hpp"

#include <algorithm>
#include <string>

namespace netio::scheduler {
namespace {

constexpr netio::detail::Rejecter reject{Errc::invalid_option, "membership"};

}  // namespace

Membership::Membership(std::uint32_t compute_count, const std::vector<ComputeIndex>& standby)
    : initial_(compute_count, true), by_slot_(compute_count) {
  if (compute_count == 0) reject("0 compute slots");
  for (const ComputeIndex c : standby) {
    if (c >= compute_count) {
      reject("standby slot " + std::to_string(c) + " out of range (" + std::to_string(compute_count) + " slots)");
    }
    initial_[c] = false;
    any_standby_ = true;
  }
}

bool Membership::apply(const MembershipChange& change) {
  const auto m = compute_count();
  if (change.compute >= m) {
    reject("slot " + std::to_string(change.compute) + " out of range (" + std::to_string(m) + " slots)");
  }
  if (change.from % m != 0) {
    reject("boundary " + std::to_string(change.from) + " of slot " + std::to_string(change.compute) +
           " is not a round start (a multiple of " + std::to_string(m) + ")");
  }
  auto& changes = by_slot_[change.compute];
  if (std::find(changes.begin(), changes.end(), change) != changes.end()) return false;
  if (!changes.empty() && change.from <= changes.back().from) {
    reject("slot " + std::to_string(change.compute) + " changes at " + std::to_string(change.from) +
           ", not after its last change at " + std::to_string(changes.back().from));
  }
  const bool was_member = changes.empty() ? initial_[change.compute] : changes.back().joins;
  if (was_member == change.joins) {
    reject("slot " + std::to_string(change.compute) + (change.joins ? " joins" : " leaves") + " at " +
           std::to_string(change.from) + " but is " + (was_member ? "a member" : "not a member") + " already");
  }
  changes.push_back(change);
  first_boundary_ = change_count_ == 0 ? change.from : std::min(first_boundary_, change.from);
  ++change_count_;
  return true;
}

bool Membership::member(ComputeIndex c, TimesliceIndex t) const {
  bool is = initial_.at(c);
  for (const auto& change : by_slot_[c]) {
    if (change.from > t) break;
    is = change.joins;
  }
  return is;
}

bool Membership::all_members(TimesliceIndex from, TimesliceIndex to) const {
  if (!any_standby_ && (change_count_ == 0 || to <= first_boundary_)) return true;  // the usual case: no change
  for (ComputeIndex c = 0; c < compute_count(); ++c) {
    if (!member(c, from)) return false;
    for (const auto& change : by_slot_[c]) {
      if (change.from > from && change.from < to && !change.joins) return false;
    }
  }
  return true;
}

std::optional<ComputeIndex> Membership::route(TimesliceIndex t, ComputeIndex own) const {
  if (own >= compute_count()) return std::nullopt;
  if (member(own, t)) return own;
  const auto where = reroute(t, own, non_members(t));
  if (!where) return std::nullopt;
  return where->compute;
}

std::vector<bool> Membership::non_members(TimesliceIndex t) const {
  std::vector<bool> out(compute_count());
  for (ComputeIndex c = 0; c < compute_count(); ++c) out[c] = !member(c, t);
  return out;
}

std::optional<TimesliceIndex> Membership::leaves_from(ComputeIndex c) const {
  const auto& changes = by_slot_.at(c);
  if (changes.empty() || changes.back().joins) return std::nullopt;
  return changes.back().from;
}

std::optional<TimesliceIndex> Membership::joins_from(ComputeIndex c) const {
  const auto& changes = by_slot_.at(c);
  if (changes.empty() || !changes.back().joins) return std::nullopt;
  return changes.back().from;
}

}  // namespace netio::scheduler
