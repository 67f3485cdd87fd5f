// SPDX-License-Identifier: MIT
#include "backends/shm/in_place_lender.hpp"

#include "backends/shm/send_area.hpp"

#include <algorithm>

namespace netio::shm {

InPlaceLender::InPlaceLender(std::shared_ptr<Segment> segment, std::size_t credits)
    : segment_(std::move(segment)),
      slots_(std::max<std::size_t>(credits, 1)),
      sequence_of_slot_(slots_.size()),
      returned_flags_(slots_.size(), nullptr) {
  free_.reserve(slots_.size());
  returned_.reserve(slots_.size());  // a slot is given back once per lend: never more
  for (std::size_t i = slots_.size(); i > 0; --i) free_.push_back(i - 1);
}

Buffer* InPlaceLender::lend(std::span<std::byte> payload, std::uint64_t end, std::byte* returned) {
  if (free_.empty()) return nullptr;
  const std::size_t slot = free_.back();
  free_.pop_back();
  // capacity == size: the bytes after the entry are the ring's, not the holder's (spare()).
  slots_[slot] = Buffer{payload.data(), payload.size(), payload.size(), nullptr, nullptr};
  returned_flags_[slot] = returned;
  if (returned != nullptr && residency_) residency_->lent(payload);
  sequence_of_slot_[slot] = first_sequence_ + order_.size();
  order_.push_back(Lent{end, false});
  return &slots_[slot];
}

std::uint64_t InPlaceLender::reclaim(std::uint64_t read_index) {
  std::lock_guard lock(mutex_);
  // A slot is free again as soon as its buffer is back, in whatever order...
  for (const std::size_t slot : returned_) {
    order_[sequence_of_slot_[slot] - first_sequence_].back = true;
    if (returned_flags_[slot] != nullptr && residency_) residency_->returned(slots_[slot].bytes());
    free_.push_back(slot);
  }
  returned_.clear();
  // ...but the ring frees in order: up to the end of the entries back without a gap.
  while (!order_.empty() && order_.front().back) {
    freed_to_ = order_.front().end;
    order_.pop_front();
    ++first_sequence_;
  }
  if (order_.empty()) freed_to_ = read_index;
  return freed_to_;
}

void InPlaceLender::give_back(Buffer* buffer) noexcept {
  std::lock_guard lock(mutex_);
  const auto slot = static_cast<std::size_t>(buffer - slots_.data());
  // Sequentially consistent, against the sender's waiting flag (ShmConnection).
  if (returned_flags_[slot] != nullptr) returned_flag(returned_flags_[slot]).store(1, std::memory_order_seq_cst);
  returned_.push_back(slot);
  if (waker_) waker_();
}

void InPlaceLender::hold_area(std::shared_ptr<SendArea> area, std::size_t window) {
  if (const auto whole = area->resolve({0, area->capacity()})) residency_.emplace(*whole, window);
  area_ = std::move(area);
}

void InPlaceLender::set_waker(std::function<void()> waker) {
  std::lock_guard lock(mutex_);
  waker_ = std::move(waker);
}

}  // namespace netio::shm
