// SPDX-License-Identifier: MIT
#include "netio/page_pool.hpp"

#include "netio/error.hpp"
#include "page_source.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <optional>

namespace netio {

// The pages and the accounting of every share. One lock guards both: a share's count and the
// pool's free list change together, so a page is never counted twice or lost between them.
class PagePool::Impl {
 public:
  explicit Impl(const PagePoolOptions& options)
      : options_(options),
        per_connection_(options.per_connection != 0
                            ? std::min(options.per_connection, options.page_count)
                            : std::min(options.page_count, std::max<std::size_t>(2, options.page_count / 4))) {
    if (options.page_count == 0 || options.page_size == 0) {
      throw Error(Errc::invalid_option,
                  fmt::format("page pool: page_count {} and page_size {}: both must be at least 1", options.page_count,
                              options.page_size));
    }
  }

  // Fixes the back-end on first use; later shares must match it.
  void attach(MemoryRegistrar* registrar, const std::string& remote) {
    std::lock_guard lock(mutex_);
    if (!pool_) {
      pool_.emplace(options_.page_count, options_.page_size, registrar);
      registrar_ = registrar;
      return;
    }
    if (registrar != registrar_) {
      throw Error(Errc::invalid_option,
                  fmt::format("the send socket to {} uses another back-end than the sockets already drawing from its "
                              "page pool: a PagePool serves the sockets of one Context and one scheme",
                              remote));
    }
  }

  // A page for a share holding `held` pages now, or nullptr.
  Buffer* take(std::size_t& held) {
    std::lock_guard lock(mutex_);
    return take_locked(held);
  }

  Buffer* take_waiting(std::size_t& held, const std::atomic<bool>& closed, std::chrono::nanoseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::unique_lock lock(mutex_);
    ++waiters_;
    Buffer* page = nullptr;
    while (!closed && (page = take_locked(held)) == nullptr) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) break;
      // Short slices, as BufferPool: pages come back to other shares without a wake-up here.
      returned_.wait_until(lock, std::min(deadline, now + std::chrono::milliseconds(1)));
    }
    --waiters_;
    return closed ? give_back_locked(page, held) : page;
  }

  void give_back(Buffer* page, std::size_t& held) noexcept {
    bool wake = false;
    {
      std::lock_guard lock(mutex_);
      give_back_locked(page, held);
      wake = waiters_ != 0;
    }
    if (wake) returned_.notify_all();
  }

  void reserve(Buffer* page, std::size_t capacity) { pool_->reserve(page, capacity); }
  void wake_all() noexcept {
    { std::lock_guard lock(mutex_); }
    returned_.notify_all();
  }

  const PagePoolOptions& options() const noexcept { return options_; }
  std::size_t per_connection() const noexcept { return per_connection_; }
  std::size_t in_use() const {
    std::lock_guard lock(mutex_);
    return in_use_;
  }
  std::size_t peak() const {
    std::lock_guard lock(mutex_);
    return peak_;
  }
  std::size_t bytes_allocated() const {
    std::lock_guard lock(mutex_);
    return pool_ ? pool_->bytes_allocated() : 0;
  }

 private:
  Buffer* take_locked(std::size_t& held) {
    if (!pool_ || held >= per_connection_) return nullptr;
    Buffer* page = pool_->try_acquire();
    if (page == nullptr) return nullptr;
    ++held;
    peak_ = std::max(peak_, ++in_use_);
    return page;
  }
  Buffer* give_back_locked(Buffer* page, std::size_t& held) noexcept {
    if (page == nullptr) return nullptr;
    pool_->release(page);
    --held;
    --in_use_;
    return nullptr;
  }

  PagePoolOptions options_;
  std::size_t per_connection_;
  mutable std::mutex mutex_;
  std::condition_variable returned_;
  std::optional<BufferPool> pool_;  // guarded by mutex_ (its own lock nests inside)
  MemoryRegistrar* registrar_ = nullptr;
  std::size_t waiters_ = 0;
  std::size_t in_use_ = 0;
  std::size_t peak_ = 0;
};

PagePool::PagePool(PagePoolOptions options) : impl_(std::make_unique<Impl>(options)) {}
PagePool::~PagePool() = default;
std::size_t PagePool::page_count() const noexcept { return impl_->options().page_count; }
std::size_t PagePool::page_size() const noexcept { return impl_->options().page_size; }
std::size_t PagePool::per_connection() const noexcept { return impl_->per_connection(); }
std::size_t PagePool::pages_in_use() const { return impl_->in_use(); }
std::size_t PagePool::peak_pages_in_use() const { return impl_->peak(); }
std::size_t PagePool::bytes_allocated() const { return impl_->bytes_allocated(); }

namespace detail {

struct PagePoolAccess {
  static PagePool::Impl& impl(PagePool& pool) noexcept { return *pool.impl_; }
};

namespace {

class SharedPages final : public PageSource {
 public:
  explicit SharedPages(std::shared_ptr<PagePool> pool) : pool_(std::move(pool)), impl_(PagePoolAccess::impl(*pool_)) {}

  Buffer* try_acquire() override {
    if (closed_.load()) return nullptr;
    return impl_.take(held_);
  }
  Buffer* acquire(std::chrono::nanoseconds timeout) override { return impl_.take_waiting(held_, closed_, timeout); }
  void release(Buffer* buffer) noexcept override { impl_.give_back(buffer, held_); }
  void reserve(Buffer* buffer, std::size_t capacity) override { impl_.reserve(buffer, capacity); }
  void close() noexcept override {
    closed_.store(true);
    impl_.wake_all();
  }
  std::size_t count() const noexcept override { return impl_.per_connection(); }
  std::size_t buffer_size() const noexcept override { return impl_.options().page_size; }
  std::size_t bytes_allocated() const override { return 0; }  // the pool's, counted by PagePool

 private:
  std::shared_ptr<PagePool> pool_;
  PagePool::Impl& impl_;
  std::size_t held_ = 0;  // guarded by the pool's lock (PagePool::Impl takes it for every change)
  std::atomic<bool> closed_{false};
};

}  // namespace

std::unique_ptr<PageSource> share_of(const std::shared_ptr<PagePool>& pool, MemoryRegistrar* registrar,
                                     const std::string& remote) {
  PagePoolAccess::impl(*pool).attach(registrar, remote);
  return std::make_unique<SharedPages>(pool);
}

}  // namespace detail
}  // namespace netio
