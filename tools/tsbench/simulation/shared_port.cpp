// SPDX-License-Identifier: MIT
#include "tsbench/simulation/shared_port.hpp"

#include <algorithm>

namespace netio::tools::tsbench::simulation {

void SharedPort::Queue::push(Waiting w) {
  if (size == ring.size()) {  // full: grow (a power of 2), the head at 0
    std::vector<Waiting> grown(std::max<std::size_t>(8, 2 * ring.size()));
    for (std::uint32_t k = 0; k < size; ++k) grown[k] = ring[(head + k) & (ring.size() - 1)];
    ring = std::move(grown);
    head = 0;
  }
  ring[(head + size) & (ring.size() - 1)] = w;
  ++size;
}

SharedPort::Waiting SharedPort::Queue::pop() {
  const Waiting w = ring[head];
  head = (head + 1) & static_cast<std::uint32_t>(ring.size() - 1);
  --size;
  return w;
}

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
  if (connection >= queues_.size()) queues_.resize(connection + 1);
  Queue& queue = queues_[connection];
  queue.push(Waiting{bytes, item});
  if (queue.size == 1) capacity_.enqueue(connection, bytes);
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
  Queue& queue = queues_[connection];
  const Waiting head = queue.pop();
  if (queue.size > 0) capacity_.enqueue(connection, queue.front().bytes);
  return head.item;
}

}  // namespace netio::tools::tsbench::simulation
