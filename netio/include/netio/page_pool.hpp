// SPDX-License-Identifier: MIT
/// @file
/// Pages shared by many send sockets: a publisher with 100 subscribers, or a node with 1,000
/// connections, holds page_count pages in all, not page_count per socket.
///
/// Each socket drawing from the pool may hold at most per_connection pages at once (sent and
/// not yet completed, or being filled): a slow or stalled peer then gets back-pressure on its
/// own socket (its send() waits, its try_send() says false) while the others keep sending
/// from the rest of the pool.
///
/// Memory: page_count × page_size at most, allocated as pages are first used and registered
/// with the back-end of the first socket that draws from the pool; every socket of one pool
/// must use that back-end (same Context, same scheme), which the socket's constructor checks.
/// Thread-safety: everything, from any thread. Lifetime: hold it in a std::shared_ptr; the
/// sockets keep it alive as long as they use it, and it must not outlive their Context.
#pragma once

#include <cstddef>
#include <memory>

namespace netio {

namespace detail {
struct PagePoolAccess;  // the sockets' way in (netio/src/page_pool.cpp)
}

struct PagePoolOptions {
  std::size_t page_count = 64;
  std::size_t page_size = 1024 * 1024;
  /// Pages one socket may hold at once; 0: a quarter of page_count (at least 2, at most all).
  std::size_t per_connection = 0;
};

class PagePool {
 public:
  explicit PagePool(PagePoolOptions options = {});
  ~PagePool();
  PagePool(const PagePool&) = delete;
  PagePool& operator=(const PagePool&) = delete;

  std::size_t page_count() const noexcept;
  std::size_t page_size() const noexcept;
  std::size_t per_connection() const noexcept;
  /// Pages taken by sockets now, and the most ever taken at once.
  std::size_t pages_in_use() const;
  std::size_t peak_pages_in_use() const;
  /// Bytes allocated so far (pages are allocated on first use, then kept).
  std::size_t bytes_allocated() const;

  class Impl;

 private:
  friend struct detail::PagePoolAccess;
  std::unique_ptr<Impl> impl_;
};

}  // namespace netio
