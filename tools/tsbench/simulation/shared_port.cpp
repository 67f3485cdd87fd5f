// SPDX-License-Identifier: MIT
#include "tsbench/simulation/shared_port.hpp"

namespace netio::tools::tsbench::simulation {

const char* to_string(PortSharing sharing) noexcept { return sharing == PortSharing::fifo ? "fifo" : "fair"; }

SharedPort::SharedPort(RateLimit limit, emulated::SlowdownSchedule schedule, PortSharing sharing)
    : limited_(static_cast<bool>(limit)),
      sharing_(sharing),
      capacity_(limit, schedule, scheduler::Time{0}),
      bucket_(limit, schedule, scheduler::Time{0}) {}

void SharedPort::arrive(Connection connection, std::uint64_t bytes, Item item, scheduler::Time now) {
  (void)now;
  ++waiting_;
  if (sharing_ == PortSharing::fifo) {
    fifo_.push_back(Waiting{bytes, item});
    return;
  }
  auto& queue = queues_[connection];
  queue.push_back(Waiting{bytes, item});
  if (queue.size() == 1) capacity_.enqueue(connection, bytes);
}

std::optional<scheduler::Time> SharedPort::next_release(scheduler::Time now) {
  if (waiting_ == 0) return std::nullopt;
  const auto at = sharing_ == PortSharing::fifo ? bucket_.ready_at(now, fifo_.front().bytes)
                                                 : capacity_.next_release_time(now);
  if (at == scheduler::Time::max()) return std::nullopt;
  return at;
}

SharedPort::Item SharedPort::release(scheduler::Time now) {
  --waiting_;
  if (sharing_ == PortSharing::fifo) {
    const Waiting head = fifo_.front();
    fifo_.pop_front();
    bucket_.consume(now, head.bytes);
    return head.item;
  }
  const auto connection = capacity_.release(now);
  auto& queue = queues_.find(connection)->second;
  const Waiting head = queue.front();
  queue.pop_front();
  if (!queue.empty()) capacity_.enqueue(connection, queue.front().bytes);
  return head.item;
}

}  // namespace netio::tools::tsbench::simulation
