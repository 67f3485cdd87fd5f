// SPDX-License-Identifier: MIT
#include "backends/emulated/shared_capacity.hpp"

#include <algorithm>

namespace netio::emulated {

void SharedCapacity::enqueue(FlowId flow, std::size_t bytes) {
  if (waiting(flow)) return;
  // A backlogged flow's buffer starts where its last one finished; a flow that was idle
  // starts level with the least-served waiting one (or the last one released), so that
  // idling earns no burst.
  double floor = virtual_time_;
  if (!starts_.empty()) floor = std::min(floor, *starts_.begin());
  const double start = std::max(finished_[flow], floor);
  const Key key{start + static_cast<double>(bytes), next_order_++};
  waiting_.emplace(key, Waiting{flow, bytes, start});
  starts_.insert(start);
  waiting_key_.emplace(flow, key);
}

void SharedCapacity::remove(FlowId flow) noexcept {
  if (const auto it = waiting_key_.find(flow); it != waiting_key_.end()) {
    const auto waiting = waiting_.find(it->second);
    starts_.erase(starts_.find(waiting->second.start));
    waiting_.erase(waiting);
    waiting_key_.erase(it);
  }
  finished_.erase(flow);
}

bool SharedCapacity::waiting(FlowId flow) const noexcept { return waiting_key_.contains(flow); }

Nanos SharedCapacity::next_release_time(Nanos now) { return bucket_.ready_at(now, waiting_.begin()->second.bytes); }

SharedCapacity::FlowId SharedCapacity::release(Nanos now) {
  const auto first = waiting_.begin();
  const Waiting chosen = first->second;
  virtual_time_ = chosen.start;
  finished_[chosen.flow] = first->first.finish;
  starts_.erase(starts_.find(chosen.start));
  waiting_.erase(first);
  waiting_key_.erase(chosen.flow);
  bucket_.consume(now, chosen.bytes);
  return chosen.flow;
}

}  // namespace netio::emulated
