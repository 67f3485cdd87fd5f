// SPDX-License-Identifier: MIT
#include "backends/shm/in_place_lender.hpp"

#include <algorithm>

namespace netio::shm {

InPlaceLender::InPlaceLender(std::shared_ptr<Segment> segment, std::size_t credits)
    : segment_(std::move(segment)), slots_(std::max<std::size_t>(credits, 1)), ends_(slots_.size()),
      returned_(slots_.size(), 0) {
  free_.reserve(slots_.size());
  for (std::size_t i = slots_.size(); i > 0; --i) free_.push_back(i - 1);
}

Buffer* InPlaceLender::lend(std::span<std::byte> payload, std::uint64_t end) {
  if (free_.empty()) return nullptr;
  const std::size_t slot = free_.back();
  free_.pop_back();
  // capacity == size: the bytes after the entry are the ring's, not the holder's (spare()).
  slots_[slot] = Buffer{payload.data(), payload.size(), payload.size(), nullptr, nullptr};
  ends_[slot] = end;
  order_.push_back(slot);
  return &slots_[slot];
}

std::uint64_t InPlaceLender::reclaim(std::uint64_t read_index) {
  std::lock_guard lock(mutex_);
  while (!order_.empty() && returned_[order_.front()] != 0) {
    const std::size_t slot = order_.front();
    order_.pop_front();
    returned_[slot] = 0;
    freed_to_ = ends_[slot];
    free_.push_back(slot);
  }
  // An entry returned behind one still lent keeps its slot and its bytes until that one is
  // back: the ring frees in order.
  if (order_.empty()) freed_to_ = read_index;
  return freed_to_;
}

void InPlaceLender::give_back(Buffer* buffer) noexcept {
  std::lock_guard lock(mutex_);
  returned_[static_cast<std::size_t>(buffer - slots_.data())] = 1;
  if (waker_) waker_();
}

void InPlaceLender::set_waker(std::function<void()> waker) {
  std::lock_guard lock(mutex_);
  waker_ = std::move(waker);
}

}  // namespace netio::shm
