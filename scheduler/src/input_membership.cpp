// SPDX-License-Identifier: MIT
#include "netio/scheduler/input_membership.hpp"

#include "netio/error.hpp"
#include "netio/internal/reject.hpp"

#include <string>

namespace netio::scheduler {
namespace {

constexpr netio::detail::Rejecter reject{Errc::invalid_option, "input membership"};

}  // namespace

InputMembership::InputMembership(std::uint32_t input_count, const std::vector<InputIndex>& standby)
    : from_(input_count, TimesliceIndex{0}), standby_(input_count, false) {
  if (input_count == 0) reject("0 input slots");
  for (const InputIndex i : standby) {
    if (i >= input_count) {
      reject("standby input " + std::to_string(i) + " out of range (" + std::to_string(input_count) + " inputs)");
    }
    if (standby_[i]) continue;
    standby_[i] = true;
    from_[i].reset();
    ++standby_count_;
  }
}

bool InputMembership::join(InputIndex i, TimesliceIndex from) {
  if (i >= input_count()) {
    reject("input " + std::to_string(i) + " out of range (" + std::to_string(input_count()) + " inputs)");
  }
  if (!standby_[i]) reject("input " + std::to_string(i) + " joins, but it is a member from the start");
  if (from == 0) reject("input " + std::to_string(i) + " joins from time-slice 0 (a member from the start)");
  if (from_[i]) {
    if (*from_[i] == from) return false;
    reject("input " + std::to_string(i) + " joins from " + std::to_string(from) + ", but its boundary is " +
           std::to_string(*from_[i]));
  }
  from_[i] = from;
  return true;
}

bool InputMembership::member(InputIndex i, TimesliceIndex t) const {
  const auto& from = from_.at(i);
  return from && t >= *from;
}

std::uint32_t InputMembership::members(TimesliceIndex t) const {
  if (standby_count_ == 0) return input_count();
  std::uint32_t count = 0;
  for (const auto& from : from_) count += from && t >= *from ? 1 : 0;
  return count;
}

bool InputMembership::standby(InputIndex i) const { return standby_.at(i); }

std::optional<TimesliceIndex> InputMembership::joins_from(InputIndex i) const {
  if (!standby_.at(i)) return std::nullopt;
  return from_[i];
}

}  // namespace netio::scheduler
