// SPDX-License-Identifier: MIT
#include "backends/emulated/core_switch.hpp"

#include "backends/emulated/network_state.hpp"

#include <sys/prctl.h>

#include <map>
#include <utility>

namespace netio::emulated {

std::shared_ptr<CoreSwitch> CoreSwitch::shared(const RateLimit& limit) {
  static std::mutex registry_mutex;
  static std::map<std::pair<double, std::uint64_t>, std::weak_ptr<CoreSwitch>> registry;
  std::lock_guard lock(registry_mutex);
  auto& slot = registry[{limit.bytes_per_second, limit.burst_bytes}];
  if (auto core = slot.lock()) return core;
  auto core = std::make_shared<CoreSwitch>(limit);
  slot = core;
  return core;
}

CoreSwitch::CoreSwitch(RateLimit limit) : capacity_(limit, SlowdownSchedule{}, now()), thread_([this] { run(); }) {}

CoreSwitch::~CoreSwitch() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

CoreSwitch::FlowId CoreSwitch::open() {
  std::lock_guard lock(mutex_);
  if (free_flows_.empty()) return next_flow_++;
  const FlowId flow = free_flows_.back();
  free_flows_.pop_back();
  return flow;
}

void CoreSwitch::enqueue(FlowId flow, std::size_t bytes, std::function<void()> release) {
  {
    std::lock_guard lock(mutex_);
    waiting_[flow] = std::move(release);
    capacity_.enqueue(flow, bytes);
  }
  wake_.notify_one();
}

void CoreSwitch::remove(FlowId flow) noexcept {
  std::lock_guard lock(mutex_);
  waiting_.erase(flow);
  capacity_.remove(flow);
  free_flows_.push_back(flow);
}

std::uint64_t CoreSwitch::buffers_released() const noexcept {
  std::lock_guard lock(mutex_);
  return released_;
}

void CoreSwitch::run() {
  // Releases tens of microseconds apart need a timer that fires on time (the kernel's
  // default slack is 50 us), as the event loops of the emulated nodes have.
  ::prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (capacity_.empty()) {
      wake_.wait(lock);
      continue;
    }
    const Nanos t = now();
    const Nanos at = capacity_.next_release_time(t);
    if (at > t) {
      if (at == Nanos::max())
        wake_.wait(lock);  // a rate of 0 for good: until a change
      else
        wake_.wait_for(lock, at - t);
      continue;
    }
    const FlowId flow = capacity_.release(t);
    if (const auto it = waiting_.find(flow); it != waiting_.end()) {
      auto release = std::move(it->second);
      waiting_.erase(it);
      ++released_;
      release();
    }
  }
}

}  // namespace netio::emulated
