// SPDX-License-Identifier: MIT
// Where a send socket's buffers come from: a pool of its own (OwnedPages), or its share of a
// PagePool that several sockets draw from (a PagePool::Impl share). BufferSender and the
// user-level send sockets see only this interface.
//
// Thread-safety: every method from any thread.
#pragma once

#include "netio/backend/buffer.hpp"
#include "netio/page_pool.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace netio::detail {

class PageSource {
 public:
  virtual ~PageSource() = default;
  virtual Buffer* try_acquire() = 0;  // nullptr when none is free to this socket now
  // Waits up to `timeout`; nullptr on timeout or after close().
  virtual Buffer* acquire(std::chrono::nanoseconds timeout) = 0;
  virtual void release(Buffer* buffer) noexcept = 0;
  // Makes `buffer` hold at least `capacity` bytes (contents are not kept).
  virtual void reserve(Buffer* buffer, std::size_t capacity) = 0;
  // Wakes waiters; later acquires fail at once. Buffers still out may be released after.
  virtual void close() noexcept = 0;
  virtual std::size_t count() const noexcept = 0;  // buffers this socket may hold at once
  virtual std::size_t buffer_size() const noexcept = 0;
  // Bytes this socket's own pool allocated (0 for a share of a PagePool: the pool counts those).
  virtual std::size_t bytes_allocated() const = 0;
};

// A pool of the socket's own.
class OwnedPages final : public PageSource {
 public:
  OwnedPages(std::size_t count, std::size_t buffer_size, MemoryRegistrar* registrar, BufferMemory* memory = nullptr)
      : pool_(count, buffer_size, registrar, memory) {}
  Buffer* try_acquire() override { return pool_.try_acquire(); }
  Buffer* acquire(std::chrono::nanoseconds timeout) override { return pool_.acquire(timeout); }
  void release(Buffer* buffer) noexcept override { pool_.release(buffer); }
  void reserve(Buffer* buffer, std::size_t capacity) override { pool_.reserve(buffer, capacity); }
  void close() noexcept override { pool_.close(); }
  std::size_t count() const noexcept override { return pool_.count(); }
  std::size_t buffer_size() const noexcept override { return pool_.buffer_size(); }
  std::size_t bytes_allocated() const override { return pool_.bytes_allocated(); }

 private:
  BufferPool pool_;
};

// A socket's share of `pool`: at most pool.per_connection() pages at once. `registrar` is
// the back-end's (the first share fixes it; a share of another back-end is refused with
// netio::Error naming `remote`).
std::unique_ptr<PageSource> share_of(const std::shared_ptr<PagePool>& pool, MemoryRegistrar* registrar,
                                     const std::string& remote);

}  // namespace netio::detail
