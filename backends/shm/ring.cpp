// SPDX-License-Identifier: MIT
#include "backends/shm/ring.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>

namespace netio::shm {
namespace {

constexpr std::size_t recycle_position = 64 * 1024;

std::uint64_t load_length(const std::byte* at) noexcept {
  std::uint64_t length = 0;
  std::memcpy(&length, at, sizeof length);  // the peer's bytes, read once
  return length;
}

void store_length(std::byte* at, std::uint64_t length) noexcept { std::memcpy(at, &length, sizeof length); }

// Whether the other side set `waiting` (it sleeps), clearing it: the load spares the common
// case (nobody sleeps) a locked exchange.
bool take_flag(std::atomic<std::uint32_t>& waiting) noexcept {
  return waiting.load(std::memory_order_seq_cst) != 0 && waiting.exchange(0, std::memory_order_seq_cst) != 0;
}

}  // namespace

bool RingProducer::room_for(std::size_t needed, std::string& corrupt) {
  if (capacity_ - (head_ - tail_) >= needed) return true;
  freed(corrupt);
  return corrupt.empty() && capacity_ - (head_ - tail_) >= needed;
}

std::uint64_t RingProducer::freed(std::string& corrupt) {
  const std::uint64_t tail = control_->tail.load(std::memory_order_seq_cst);
  if (tail < tail_ || tail > head_) {
    corrupt =
        fmt::format("the consumer's tail moved from {} to {}, outside what was produced (head {})", tail_, tail, head_);
    return tail_;
  }
  tail_ = tail;
  return tail_;
}

bool RingProducer::wait_for_free(std::uint64_t index, std::string& corrupt) {
  control_->producer_waiting.store(1, std::memory_order_seq_cst);
  if (freed(corrupt) >= index || !corrupt.empty()) {
    control_->producer_waiting.store(0, std::memory_order_relaxed);
    return false;
  }
  return true;
}

namespace {
// The bytes an entry of `needed` bytes at position `position` takes, with the pad before it
// when it would cross the end.
std::size_t with_pad(std::size_t needed, std::size_t position, std::size_t capacity) noexcept {
  const std::size_t to_end = capacity - position;
  return needed <= to_end ? needed : to_end + needed;
}
}  // namespace

bool RingProducer::push(std::span<const std::byte> payload, std::string& corrupt, EntryKind kind) {
  const std::size_t needed = entry_size(payload.size());
  std::size_t position = head_ % capacity_;
  if (position >= recycle_position && tail_ != head_ && !room_for(capacity_, corrupt) && !corrupt.empty()) return false;
  // An empty ring far from its start starts again at 0: small messages keep to the first
  // pages of a large ring, so the memory they touch (bytes_held()) stays small.
  const bool restart = position >= recycle_position && tail_ == head_ && needed <= position;
  if (!restart && !room_for(with_pad(needed, position, capacity_), corrupt)) return false;
  if (restart || needed > capacity_ - position) {
    store_length(bytes_ + position, pad_marker);
    head_ += capacity_ - position;
    position = 0;
  }
  store_length(bytes_ + position, payload.size());
  store_length(bytes_ + position + sizeof(std::uint64_t), static_cast<std::uint64_t>(kind));
  last_payload_ = bytes_ + position + entry_header_size;
  if (!payload.empty()) std::memcpy(last_payload_, payload.data(), payload.size());
  head_ += needed;
  control_->head.store(head_, std::memory_order_seq_cst);
  return true;
}

bool RingProducer::wait_for_space(std::size_t payload, std::string& corrupt) {
  control_->producer_waiting.store(1, std::memory_order_seq_cst);
  const std::size_t needed = with_pad(entry_size(payload), head_ % capacity_, capacity_);
  if (room_for(needed, corrupt) || !corrupt.empty()) {
    control_->producer_waiting.store(0, std::memory_order_relaxed);
    return false;
  }
  return true;
}

bool RingProducer::consumer_needs_wake() noexcept { return take_flag(control_->consumer_waiting); }

bool RingProducer::all_delivered() const noexcept {
  return control_ == nullptr || control_->delivered.load(std::memory_order_acquire) >= head_;
}

bool RingConsumer::load_head(std::string& corrupt) {
  const std::uint64_t head = control_->head.load(std::memory_order_seq_cst);
  if (head < head_ || head - tail_ > capacity_) {
    corrupt = fmt::format("the producer's head moved from {} to {}, beyond the {}-byte ring (tail {})", head_, head,
                          capacity_, tail_);
    return false;
  }
  head_ = head;
  return true;
}

RingConsumer::Entry RingConsumer::next(std::string& corrupt) {
  for (;;) {
    if (read_ == head_ && (!load_head(corrupt) || read_ == head_)) return {};
    const std::size_t position = read_ % capacity_;
    const std::size_t to_end = capacity_ - position;
    const std::uint64_t length = load_length(bytes_ + position);
    high_water_ = std::max(high_water_, position + entry_header_size);
    if (length == pad_marker) {
      if (head_ - read_ < to_end) {
        corrupt = fmt::format("a pad at {} runs past what was produced (head {})", read_, head_);
        return {};
      }
      read_ += to_end;
      continue;
    }
    if (length > max_payload_ || entry_size(length) > to_end || entry_size(length) > head_ - read_) {
      corrupt = fmt::format("an entry of {} bytes at {} (the most is {}, {} bytes to the ring's end, {} produced)",
                            length, read_, max_payload_, to_end, head_ - read_);
      return {};
    }
    const std::uint64_t kind = load_length(bytes_ + position + sizeof(std::uint64_t));
    if (kind > static_cast<std::uint64_t>(EntryKind::area_reference)) {
      corrupt = fmt::format("an entry at {} of unknown kind {}", read_, kind);
      return {};
    }
    const std::size_t needed = entry_size(length);
    Entry entry{std::span<std::byte>(bytes_ + position + entry_header_size, length), read_ + needed,
                static_cast<EntryKind>(kind)};
    read_ += needed;
    high_water_ = std::max(high_water_, position + needed);
    return entry;
  }
}

void RingConsumer::free_to(std::uint64_t index) noexcept {
  if (index <= tail_) return;
  tail_ = index;
  control_->tail.store(tail_, std::memory_order_seq_cst);
}

bool RingConsumer::wait_for_data(std::string& corrupt) {
  control_->consumer_waiting.store(1, std::memory_order_seq_cst);
  if (!load_head(corrupt) || head_ != read_) {
    control_->consumer_waiting.store(0, std::memory_order_relaxed);
    return false;
  }
  return true;
}

bool RingConsumer::producer_needs_wake() noexcept { return take_flag(control_->producer_waiting); }

void RingConsumer::publish_delivered() noexcept { control_->delivered.store(read_, std::memory_order_release); }

}  // namespace netio::shm
