// SPDX-License-Identifier: MIT
#include "backends/emulated/shared_capacity.hpp"

#include <algorithm>

namespace netio::emulated {

void SharedCapacity::enqueue(FlowId flow, std::size_t bytes) {
  if (waiting(flow)) return;
  // A flow that was idle starts level with the least-served waiting one (or the last one
  // served), so that idling earns no burst.
  double floor = virtual_time_;
  if (!waiting_.empty()) floor = std::min(floor, waiting_.begin()->first.served);
  double& served = served_[flow];
  served = std::max(served, floor);
  const Key key{served, next_order_++};
  waiting_.emplace(key, Waiting{flow, bytes});
  waiting_key_.emplace(flow, key);
}

void SharedCapacity::remove(FlowId flow) noexcept {
  if (const auto it = waiting_key_.find(flow); it != waiting_key_.end()) {
    waiting_.erase(it->second);
    waiting_key_.erase(it);
  }
  served_.erase(flow);
}

bool SharedCapacity::waiting(FlowId flow) const noexcept { return waiting_key_.contains(flow); }

Nanos SharedCapacity::next_release_time(Nanos now) { return bucket_.ready_at(now, waiting_.begin()->second.bytes); }

SharedCapacity::FlowId SharedCapacity::release(Nanos now) {
  const auto first = waiting_.begin();
  const Waiting chosen = first->second;
  waiting_.erase(first);
  waiting_key_.erase(chosen.flow);
  bucket_.consume(now, chosen.bytes);
  double& served = served_[chosen.flow];
  virtual_time_ = served;
  served += static_cast<double>(chosen.bytes);
  return chosen.flow;
}

}  // namespace netio::emulated
