// SPDX-License-Identifier: MIT
#include "netio/backend/buffer.hpp"

#include "netio/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <new>

namespace netio {
namespace {

constexpr std::size_t alignment = 4096;  // page-aligned: what registration (and DMA) likes best

std::size_t round_up(std::size_t n) { return (std::max<std::size_t>(n, 1) + alignment - 1) / alignment * alignment; }

}  // namespace

struct BufferPool::Slot : Buffer {
  bool allocated = false;
  bool lent = false;  // from memory_, not the heap
};

BufferPool::BufferPool(std::size_t count, std::size_t buffer_size, MemoryRegistrar* registrar, BufferMemory* memory)
    : buffer_size_(buffer_size),
      registrar_(registrar),
      memory_(memory),
      wake_batch_(std::max<std::size_t>(1, count / 4)) {
  if (count == 0) throw Error(Errc::invalid_option, "buffer_count 0: a socket needs at least 1 buffer");
  buffers_.reserve(count);
  free_.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    buffers_.push_back(std::make_unique<Slot>());
    free_.push_back(buffers_.back().get());
  }
}

BufferPool::~BufferPool() {
  for (auto& slot : buffers_) free_slot(*slot);
}

void BufferPool::allocate(Slot& slot, std::size_t capacity) {
  const std::size_t bytes = round_up(capacity);
  std::byte* lent = memory_ != nullptr ? memory_->allocate(bytes) : nullptr;
  void* memory = lent != nullptr ? lent : std::aligned_alloc(alignment, bytes);
  if (memory == nullptr) throw std::bad_alloc();
  slot.data = static_cast<std::byte*>(memory);
  slot.capacity = bytes;
  slot.size = 0;
  slot.allocated = true;
  slot.lent = lent != nullptr;
  if (registrar_ != nullptr) {
    try {
      registrar_->register_buffer(slot);
    } catch (...) {
      if (slot.lent) {
        memory_->deallocate(lent, bytes);
      } else {
        std::free(memory);
      }
      slot = Slot{};
      throw;
    }
  }
  bytes_allocated_.fetch_add(bytes, std::memory_order_relaxed);
}

void BufferPool::free_slot(Slot& slot) noexcept {
  if (!slot.allocated) return;
  bytes_allocated_.fetch_sub(slot.capacity, std::memory_order_relaxed);
  if (registrar_ != nullptr) registrar_->deregister_buffer(slot);
  if (slot.lent) {
    memory_->deallocate(slot.data, slot.capacity);
  } else {
    std::free(slot.data);
  }
  static_cast<Buffer&>(slot) = Buffer{};
  slot.allocated = false;
  slot.lent = false;
}

Buffer* BufferPool::try_acquire() {
  if (closed_.load(std::memory_order_acquire)) return nullptr;
  // Sequentially consistent: a caller that announced itself elsewhere before this try (the
  // POSIX reader's stall flag) relies on either finding the spare here or being seen by the
  // release() that fills it.
  if (spare_.load(std::memory_order_seq_cst) != nullptr) {
    if (Slot* slot = spare_.exchange(nullptr, std::memory_order_seq_cst)) return ready(slot);
  }
  Slot* slot = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (closed_.load(std::memory_order_relaxed) || free_.empty()) return nullptr;
    slot = free_.back();
    free_.pop_back();
  }
  return ready(slot);
}

Buffer* BufferPool::ready(Slot* slot) {
  // Allocated lazily, outside the lock: the pool costs memory only as it is used.
  if (!slot->allocated) {
    try {
      allocate(*slot, buffer_size_);
    } catch (...) {
      release(slot);
      throw;
    }
  }
  slot->size = 0;
  return slot;
}

Buffer* BufferPool::acquire(std::chrono::nanoseconds timeout) {
  if (Buffer* buffer = try_acquire()) return buffer;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Slot* slot = nullptr;
  {
    std::unique_lock lock(mutex_);
    // Announced before looking at the spare: a release() from now on either sees a waiter
    // and brings its buffer here, or filled the spare before that look.
    waiters_.fetch_add(1, std::memory_order_seq_cst);
    // Woken in batches (see release()); the short slices bound the wait when buffers
    // trickle back fewer than a batch at a time, e.g. from a stalling receiver.
    while (!closed_.load(std::memory_order_relaxed)) {
      slot = spare_.exchange(nullptr, std::memory_order_seq_cst);
      if (slot == nullptr && !free_.empty()) {
        slot = free_.back();  // taken under the lock that saw it free: no other thread can win it
        free_.pop_back();
      }
      if (slot != nullptr) break;
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) break;
      available_cv_.wait_until(lock, std::min(deadline, now + wait_slice));
    }
    waiters_.fetch_sub(1, std::memory_order_relaxed);
  }
  return slot == nullptr ? nullptr : ready(slot);
}

void BufferPool::release(Buffer* buffer) noexcept {
  auto* slot = static_cast<Slot*>(buffer);
  if (waiters_.load(std::memory_order_seq_cst) == 0) {
    Slot* none = nullptr;
    if (spare_.compare_exchange_strong(none, slot, std::memory_order_seq_cst)) {
      // A waiter that arrived meanwhile may have looked at the spare before it was filled:
      // then this load sees it, and the buffer goes through the lock to wake it.
      if (waiters_.load(std::memory_order_seq_cst) == 0) return;
      slot = spare_.exchange(nullptr, std::memory_order_seq_cst);
      if (slot == nullptr) return;  // someone took it
    }
  }
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    free_.push_back(slot);
    // Waking a waiter per returned buffer costs a context switch per message when the
    // pool runs dry; waking when a batch is free lets the waiter fill many at once.
    const std::size_t free = free_.size();
    wake = waiters_.load(std::memory_order_relaxed) > 0 && (free == wake_batch_ || free == buffers_.size());
  }
  if (wake) available_cv_.notify_all();
}

void BufferPool::close() noexcept {
  {
    std::lock_guard lock(mutex_);
    closed_.store(true, std::memory_order_release);
  }
  available_cv_.notify_all();
}

void BufferPool::reserve(Buffer* buffer, std::size_t capacity) {
  auto& slot = *static_cast<Slot*>(buffer);
  if (slot.allocated && slot.capacity >= capacity) return;
  free_slot(slot);
  allocate(slot, capacity);
}

void BufferPool::discard(Buffer* buffer) noexcept {
  auto* slot = static_cast<Slot*>(buffer);
  free_slot(*slot);
  {
    std::lock_guard lock(mutex_);
    free_.insert(free_.begin(), slot);  // taken last: buffers that hold memory go first
  }
  if (waiters_.load(std::memory_order_relaxed) > 0) available_cv_.notify_all();
}

std::size_t BufferPool::available() const {
  std::lock_guard lock(mutex_);
  return free_.size() + (spare_.load(std::memory_order_acquire) != nullptr ? 1 : 0);
}

}  // namespace netio
