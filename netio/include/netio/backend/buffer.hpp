// SPDX-License-Identifier: MIT
/// @file
/// @ingroup backend
/// Buffers that the back-ends move, and pools of them.
///
/// A Buffer is a block of memory a back-end can send or receive into. Back-ends such as
/// libfabric need memory registered before use; a MemoryRegistrar does that once per
/// buffer, when the pool allocates it (and again only if the buffer has to grow).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace netio {

struct Buffer {
  std::byte* data = nullptr;
  std::size_t capacity = 0;
  std::size_t size = 0;          ///< bytes in use (what send() transmits)
  void* desc = nullptr;          ///< back-end descriptor (fi_mr_desc), nullptr if none
  void* registration = nullptr;  ///< back-end handle (struct fid_mr*), owned by the registrar

  std::span<std::byte> bytes() noexcept { return {data, size}; }
  std::span<const std::byte> bytes() const noexcept { return {data, size}; }
};

/// Registers memory with a back-end. Called on any thread (pools are built on user
/// threads); implementations must be thread-safe. register_buffer() throws netio::Error.
class MemoryRegistrar {
 public:
  virtual ~MemoryRegistrar() = default;
  virtual void register_buffer(Buffer& buffer) = 0;
  virtual void deregister_buffer(Buffer& buffer) noexcept = 0;
};

/// Memory for a pool's buffers that a back-end hands out: memory its send() moves without
/// a copy (shm:// lends pages of a segment its receiver maps, which reads a page where the
/// sender wrote it). Called on any thread; implementations must be thread-safe. It must
/// outlive the pools that use it.
class BufferMemory {
 public:
  virtual ~BufferMemory() = default;
  /// `bytes` (a multiple of 4096), 4096-aligned; nullptr when there is no room (the pool
  /// then allocates the buffer itself, which the back-end copies).
  virtual std::byte* allocate(std::size_t bytes) noexcept = 0;
  /// Takes back what allocate() returned, with the same `bytes`.
  virtual void deallocate(std::byte* memory, std::size_t bytes) noexcept = 0;
};

/// A fixed number of buffers, allocated and registered when first needed and reused after
/// that: memory is bounded by count × the largest size asked for.
/// Thread-safe: acquire/release from any thread. The registrar must outlive the pool.
class BufferPool {
 public:
  /// Buffers come from `memory` when it has room, else from the heap.
  BufferPool(std::size_t count, std::size_t buffer_size, MemoryRegistrar* registrar = nullptr,
             BufferMemory* memory = nullptr);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  /// nullptr when all buffers are in use.
  Buffer* try_acquire();
  /// Waits up to `timeout` for a free buffer; nullptr only on timeout or after close(). Waiters
  /// are woken when a quarter of the pool is free again (or all of it), not per buffer,
  /// and look again every millisecond.
  Buffer* acquire(std::chrono::nanoseconds timeout);
  void release(Buffer* buffer) noexcept;
  /// Wakes every waiter in acquire(); later acquires fail at once.
  void close() noexcept;

  /// Makes `buffer` (acquired from this pool) hold at least `capacity` bytes, re-registering
  /// it if it had to move. Contents are not preserved.
  void reserve(Buffer* buffer, std::size_t capacity);
  /// Gives `buffer` back like release(), but frees its memory first, and it is taken again
  /// only once every other free buffer is (then allocated anew, of buffer_size()): for a
  /// buffer grown beyond what its holder may keep (a reply that does not fit a budget), so
  /// that buffers still holding memory are reused first.
  void discard(Buffer* buffer) noexcept;

  std::size_t count() const noexcept { return buffers_.size(); }
  std::size_t buffer_size() const noexcept { return buffer_size_; }
  std::size_t available() const;
  /// Bytes of the buffers allocated now; any thread, without the lock (a buffer is allocated
  /// and grown by its holder outside it).
  std::size_t bytes_allocated() const noexcept { return bytes_allocated_.load(std::memory_order_relaxed); }

 private:
  struct Slot;
  Buffer* ready(Slot* slot);  ///< allocates (once) and resets a slot just taken
  void allocate(Slot& slot, std::size_t capacity);
  void free_slot(Slot& slot) noexcept;

  static constexpr std::chrono::milliseconds wait_slice{1};

  std::size_t buffer_size_;
  MemoryRegistrar* registrar_;
  BufferMemory* memory_;
  std::size_t wake_batch_;  ///< waiters are woken when this many buffers are free (or all are)
  std::vector<std::unique_ptr<Slot>> buffers_;
  mutable std::mutex mutex_;
  std::condition_variable available_cv_;
  std::vector<Slot*> free_;  ///< guarded by mutex_
  /// One free buffer kept outside the lock: the next try_acquire() takes what the last
  /// release() gave back with one atomic exchange on each side, the case of a message or a
  /// reply in flight at a time. Used only while nobody waits in acquire(), so that a buffer
  /// never hides from a waiter (see release()).
  std::atomic<Slot*> spare_{nullptr};
  std::atomic<bool> closed_{false};      ///< written under mutex_
  std::atomic<std::size_t> waiters_{0};  ///< written under mutex_
  std::atomic<std::size_t> bytes_allocated_{0};
};

}  // namespace netio
