// SPDX-License-Identifier: MIT
#include "backends/fabric/backward_receives.hpp"

#include "backends/fabric/fabric_wire.hpp"

#include <algorithm>

namespace netio::fabric {
namespace {

// Slots start on cache lines; a credit message needs only the header.
std::size_t slot_size_for(std::size_t max_payload) {
  constexpr std::size_t line = 64;
  return (wire::backward_header_size + max_payload + line - 1) / line * line;
}

}  // namespace

BackwardReceives::BackwardReceives(std::shared_ptr<Domain> domain, std::size_t count, std::size_t max_payload)
    : slot_size_(slot_size_for(max_payload)), block_(std::move(domain), count * slot_size_), slots_(count) {
  returned_.reserve(count);  // give_back() must not allocate
  for (std::size_t i = 0; i < count; ++i) {
    slots_[i].operation.kind = OperationContext::Kind::backward_receive;
    slots_[i].operation.index = static_cast<std::uint32_t>(i);
    slots_[i].operation.buffer = &slots_[i].buffer;
    slots_[i].buffer.desc = block_.desc();
  }
}

void BackwardReceives::attach(std::shared_ptr<ProgressDriver> driver) {
  std::lock_guard lock(mutex_);
  driver_ = std::move(driver);
}

Buffer* BackwardReceives::lend(std::size_t index, std::size_t payload_size) noexcept {
  Buffer& buffer = slots_[index].buffer;
  buffer.data = slot(index) + wire::backward_header_size;
  buffer.capacity = slot_size_ - wire::backward_header_size;
  buffer.size = payload_size;
  return &buffer;
}

void BackwardReceives::give_back(Buffer* buffer) noexcept {
  // Buffers are the first member of their slot.
  const auto index = static_cast<std::uint32_t>(reinterpret_cast<Slot*>(buffer) - slots_.data());
  std::lock_guard lock(mutex_);
  if (!driver_) return;  // detached: the block goes with the last owner
  returned_.push_back(index);
  // Under the lock: detach() cannot drop the driver while we use it.
  driver_->kick();
}

void BackwardReceives::take_returned(std::vector<std::uint32_t>& out) {
  out.clear();
  std::lock_guard lock(mutex_);
  out.swap(returned_);
}

void BackwardReceives::detach() noexcept {
  std::lock_guard lock(mutex_);
  driver_.reset();
  returned_.clear();
}

}  // namespace netio::fabric
