// SPDX-License-Identifier: MIT
#include "netio/emulated/shared_capacity.hpp"

#include <algorithm>

namespace netio::emulated {
namespace {

// std::*_heap keep the greatest on top: "later" puts the fair pick (and the least start) there.
struct FinishesLater {
  template <typename W>
  bool operator()(const W& a, const W& b) const {
    return a.finish != b.finish ? a.finish > b.finish : a.order > b.order;
  }
};
struct StartsLater {
  template <typename S>
  bool operator()(const S& a, const S& b) const {
    return a.start != b.start ? a.start > b.start : a.order > b.order;
  }
};

}  // namespace

void SharedCapacity::enqueue(FlowId flow, std::size_t bytes) {
  if (flow >= flows_.size()) flows_.resize(flow + 1);
  Flow& state = flows_[flow];
  if (state.waiting != not_waiting) return;
  // A backlogged flow's buffer starts where its last one finished; a flow that was idle
  // starts level with the least-served waiting one (or the last one released), so that
  // idling earns no burst.
  double floor = virtual_time_;
  if (!by_finish_.empty()) floor = std::min(floor, least_waiting_start());
  const double start = std::max(state.finished, floor);
  const std::uint64_t order = next_order_++;
  state.waiting = order;
  by_finish_.push_back(Waiting{start + static_cast<double>(bytes), order, start, bytes, flow});
  std::push_heap(by_finish_.begin(), by_finish_.end(), FinishesLater{});
  by_start_.push_back(Start{start, order, flow});
  std::push_heap(by_start_.begin(), by_start_.end(), StartsLater{});
}

void SharedCapacity::drop_stale_starts() {
  while (!by_start_.empty() && flows_[by_start_.front().flow].waiting != by_start_.front().order) {
    std::pop_heap(by_start_.begin(), by_start_.end(), StartsLater{});
    by_start_.pop_back();
  }
  // Stale starts below the top wait for their turn; keep them from piling up.
  if (by_start_.size() > 2 * by_finish_.size() + 64) {
    std::erase_if(by_start_, [this](const Start& s) { return flows_[s.flow].waiting != s.order; });
    std::make_heap(by_start_.begin(), by_start_.end(), StartsLater{});
  }
}

double SharedCapacity::least_waiting_start() {
  drop_stale_starts();
  return by_start_.front().start;
}

void SharedCapacity::remove(FlowId flow) noexcept {
  if (flow >= flows_.size()) return;
  if (flows_[flow].waiting != not_waiting) {
    std::erase_if(by_finish_, [flow](const Waiting& w) { return w.flow == flow; });
    std::make_heap(by_finish_.begin(), by_finish_.end(), FinishesLater{});
  }
  // Its stale starts too: the number may come back as a new flow.
  std::erase_if(by_start_, [flow](const Start& s) { return s.flow == flow; });
  std::make_heap(by_start_.begin(), by_start_.end(), StartsLater{});
  flows_[flow] = Flow{};
}

bool SharedCapacity::waiting(FlowId flow) const noexcept {
  return flow < flows_.size() && flows_[flow].waiting != not_waiting;
}

Nanos SharedCapacity::next_release_time(Nanos now) { return bucket_.ready_at(now, by_finish_.front().bytes); }

SharedCapacity::FlowId SharedCapacity::release(Nanos now) {
  std::pop_heap(by_finish_.begin(), by_finish_.end(), FinishesLater{});
  const Waiting chosen = by_finish_.back();
  by_finish_.pop_back();
  virtual_time_ = chosen.start;
  Flow& state = flows_[chosen.flow];
  state.finished = chosen.finish;
  state.waiting = not_waiting;
  bucket_.consume(now, chosen.bytes);
  return chosen.flow;
}

}  // namespace netio::emulated
