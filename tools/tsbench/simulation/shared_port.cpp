// SPDX-License-Identifier: MIT
#include "tsbench/simulation/shared_port.hpp"

namespace netio::tools::tsbench::simulation {

void SharedPort::push(Queue& queue, Waiting w) {
  std::uint32_t slot = free_;
  if (slot == kNone) {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.push_back(Slot{});
  } else {
    free_ = slots_[slot].next;
  }
  slots_[slot] = Slot{0, w.item, kNone};
  if (queue.size == 0) {
    queue.head = slot;
  } else {
    slots_[queue.tail].next = slot;
    slots_[queue.tail].next_bytes = w.bytes;
  }
  queue.tail = slot;
  ++queue.size;
}

SharedPort::Popped SharedPort::pop(Queue& queue) {
  const std::uint32_t slot = queue.head;
  Slot& s = slots_[slot];
  const Popped popped{s.item, s.next_bytes};
  queue.head = s.next;
  --queue.size;
  s.next = free_;
  free_ = slot;
  return popped;
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
  push(queue, Waiting{bytes, item});
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
  const Popped head = pop(queue);
  if (queue.size > 0) capacity_.enqueue(connection, head.next_bytes);
  return head.item;
}

}  // namespace netio::tools::tsbench::simulation
