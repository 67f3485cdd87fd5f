#include "backends/emulated/shared_capacity.hpp"

#include <algorithm>

namespace netio::emulated {

void SharedCapacity::enqueue(FlowId flow, std::size_t bytes) {
  if (waiting(flow)) return;
  double floor = virtual_time_;
  for (const auto& w : waiting_) floor = std::min(floor, served_[w.flow]);
  double& served = served_[flow];
  served = std::max(served, floor);
  waiting_.push_back({flow, bytes});
}

void SharedCapacity::remove(FlowId flow) noexcept {
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), [flow](const Waiting& w) { return w.flow == flow; }),
                 waiting_.end());
  served_.erase(flow);
}

bool SharedCapacity::waiting(FlowId flow) const noexcept {
  return std::any_of(waiting_.begin(), waiting_.end(), [flow](const Waiting& w) { return w.flow == flow; });
}

std::size_t SharedCapacity::pick() const noexcept {
  std::size_t best = 0;
  double best_served = served_.at(waiting_[0].flow);
  for (std::size_t i = 1; i < waiting_.size(); ++i) {
    const double served = served_.at(waiting_[i].flow);
    if (served < best_served) {
      best = i;
      best_served = served;
    }
  }
  return best;
}

Nanos SharedCapacity::next_release_time(Nanos now) { return bucket_.ready_at(now, waiting_[pick()].bytes); }

SharedCapacity::FlowId SharedCapacity::release(Nanos now) {
  const std::size_t index = pick();
  const Waiting chosen = waiting_[index];
  waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(index));
  bucket_.consume(now, chosen.bytes);
  double& served = served_[chosen.flow];
  virtual_time_ = served;
  served += static_cast<double>(chosen.bytes);
  return chosen.flow;
}

}  // namespace netio::emulated
