// SPDX-License-Identifier: MIT
#include "reply_sender.hpp"

#include "budget_charge.hpp"
#include "netio/error.hpp"
#include "netio/log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace netio::detail {
namespace {
constexpr std::size_t initial_reply_buffer = 256;  // buffers grow to the largest reply they carried

std::chrono::steady_clock::rep now_ticks() noexcept {
  return std::chrono::steady_clock::now().time_since_epoch().count();
}
}  // namespace

ReplySender::ReplySender(EventLoop& loop, LowLevelReceiveSocket& socket, std::size_t window, std::size_t max_size,
                         std::shared_ptr<ReceiveBudget> budget, std::string peer,
                         std::shared_ptr<std::atomic<std::uint64_t>> socket_queued)
    : loop_(loop),
      socket_(&socket),
      declared_max_size_(socket.max_reply_size()),
      limit_(max_size),
      max_size_(std::min(declared_max_size_, limit_)),
      budget_(std::move(budget)),
      peer_(std::move(peer)),
      socket_queued_(std::move(socket_queued)),
      pool_(std::make_unique<BufferPool>(std::max<std::size_t>(window, 1), std::min(max_size_, initial_reply_buffer),
                                         socket.reply_registrar())) {}

bool ReplySender::send(std::span<const std::byte> message, bool wait, std::chrono::nanoseconds timeout) {
  if (message.size() > max_size_) {
    if (declared_max_size_ == 0) {
      throw Error(Errc::message_too_large, fmt::format("{} takes no replies (its send socket declared none)", peer_));
    }
    throw Error(
        Errc::message_too_large,
        max_size_ == limit_
            ? fmt::format("a {}-byte reply to {} is larger than this receiver sends ({} bytes, its "
                          "admission max_reply_size)",
                          message.size(), peer_, max_size_)
            : fmt::format("a {}-byte reply is larger than {} takes ({} bytes)", message.size(), peer_, max_size_));
  }
  if (loop_.in_loop_thread()) return send_on_loop(message, wait);
  bool schedule = false;
  {
    std::unique_lock lock(mutex_);
    if (!pool_) throw Error(Errc::disconnected, fmt::format("cannot reply to {}: its connection is gone", peer_));
    Buffer* buffer = pool_->try_acquire();
    if (buffer == nullptr) {
      if (!wait) return false;
      const auto deadline = std::chrono::steady_clock::now() + timeout;
      // Announced before the next try: on_completed() either sees it or released before it.
      waiters_.fetch_add(1, std::memory_order_seq_cst);
      while (pool_ && (buffer = pool_->try_acquire()) == nullptr) {
        if (room_.wait_until(lock, deadline) == std::cv_status::timeout) {
          if (pool_) buffer = pool_->try_acquire();
          break;
        }
      }
      waiters_.fetch_sub(1, std::memory_order_relaxed);
      if (!pool_) throw Error(Errc::disconnected, fmt::format("cannot reply to {}: its connection is gone", peer_));
      if (buffer == nullptr) {
        throw Error(Errc::timeout,
                    fmt::format("no room for a reply to {} within {} ms (it is not taking its replies)", peer_,
                                std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()));
      }
    }
    if (!fill(buffer, message)) {
      lock.unlock();
      return no_budget(wait);
    }
    submitted_.push_back(buffer);
    has_submitted_.store(true, std::memory_order_release);
    schedule = !std::exchange(drain_scheduled_, true);
  }
  if (schedule) {
    // A weak reference: the connection may end before the task runs.
    loop_.post([weak = weak_from_this()] {
      if (const auto self = weak.lock()) self->drain();
    });
  }
  return true;
}

bool ReplySender::send_on_loop(std::span<const std::byte> message, bool wait) {
  // pool_ and socket_ change only on this thread (close()): read here without the lock.
  if (!pool_) throw Error(Errc::disconnected, fmt::format("cannot reply to {}: its connection is gone", peer_));
  Buffer* buffer = pool_->try_acquire();
  if (buffer == nullptr) {
    if (!wait) return false;
    throw Error(Errc::would_block, fmt::format("reply() to {} on the event-loop thread with its reply window "
                                               "full would wait forever: use try_reply() in callbacks",
                                               peer_));
  }
  if (!fill(buffer, message)) return no_budget(wait);
  if (has_submitted_.load(std::memory_order_acquire) || !draining_.empty()) {
    // After what user threads queued before, in order.
    {
      std::lock_guard lock(mutex_);
      submitted_.push_back(buffer);
    }
    drain();
  } else if (socket_ != nullptr) {
    socket_->send_reply(buffer);  // may complete at once (on_completed)
  }
  return true;
}

bool ReplySender::fill(Buffer* buffer, std::span<const std::byte> message) {
  try {
    pool_->reserve(buffer, message.size());  // may fail to allocate or register
  } catch (...) {
    pool_->release(buffer);
    throw;
  }
  if (!charge_pool()) {
    detail::BudgetAccounting::count_refusal(*budget_);
    pool_->discard(buffer);  // the buffer that grew for this reply: its memory goes
    charge_pool();           // gives back what that freed
    return false;
  }
  if (queued_.fetch_add(1, std::memory_order_relaxed) == 0)
    last_progress_.store(now_ticks(), std::memory_order_relaxed);
  if (socket_queued_) socket_queued_->fetch_add(1, std::memory_order_relaxed);
  if (!message.empty()) std::memcpy(buffer->data, message.data(), message.size());
  buffer->size = message.size();
  return true;
}

bool ReplySender::no_budget(bool wait) {
  if (!budget_refusal_logged_.exchange(true)) {
    log(LogLevel::warn,
        "the receiver's memory budget ({} of {} bytes held) has no room for more replies to {} "
        "(further refusals for it are not logged)",
        budget_->used(), budget_->limit(), peer_);
  }
  if (!wait) return false;
  throw Error(Errc::would_block, fmt::format("the receiver's memory budget has no room for a reply to {} ({} of {} "
                                             "bytes held)",
                                             peer_, budget_->used(), budget_->limit()));
}

bool ReplySender::charge_pool() {
  if (!budget_) return true;
  std::lock_guard lock(charge_mutex_);
  const std::size_t held = pool_->bytes_allocated();
  if (held < charged_) {
    detail::BudgetAccounting::give_back(*budget_, charged_ - held);
  } else if (held > charged_ && !detail::BudgetAccounting::try_take(*budget_, held - charged_)) {
    return false;
  }
  charged_ = held;
  return true;
}

std::chrono::nanoseconds ReplySender::stalled_for(std::chrono::steady_clock::time_point now) const noexcept {
  if (queued_.load(std::memory_order_relaxed) == 0) return std::chrono::nanoseconds::zero();
  const auto since = std::chrono::steady_clock::time_point(
      std::chrono::steady_clock::duration(last_progress_.load(std::memory_order_relaxed)));
  return std::max<std::chrono::nanoseconds>(now - since, std::chrono::nanoseconds::zero());
}

void ReplySender::drain() {
  {
    std::lock_guard lock(mutex_);
    drain_scheduled_ = false;
    has_submitted_.store(false, std::memory_order_relaxed);
    draining_.swap(submitted_);
  }
  for (Buffer* buffer : draining_) {
    if (socket_ != nullptr) socket_->send_reply(buffer);  // may complete at once (on_completed)
  }
  draining_.clear();
}

void ReplySender::on_completed(Buffer* buffer) {
  if (!pool_) return;  // closed: the pool and its buffers are gone
  queued_.fetch_sub(1, std::memory_order_relaxed);
  if (socket_queued_) socket_queued_->fetch_sub(1, std::memory_order_relaxed);
  last_progress_.store(now_ticks(), std::memory_order_relaxed);
  pool_->release(buffer);
  if (waiters_.load(std::memory_order_seq_cst) != 0) {
    std::lock_guard lock(mutex_);  // orders the wake-up after the waiter's last look
    room_.notify_one();
  }
}

void ReplySender::close() noexcept {
  socket_ = nullptr;
  std::lock_guard lock(mutex_);
  submitted_.clear();
  has_submitted_.store(false, std::memory_order_relaxed);
  pool_.reset();  // the back-end dropped what it held: every buffer is ours again
  if (budget_) {
    std::lock_guard charge_lock(charge_mutex_);
    detail::BudgetAccounting::give_back(*budget_, std::exchange(charged_, 0));
  }
  // Under mutex_, which fill() on user threads holds too: what the socket's count drops by is
  // exactly what this connection added and did not take back.
  const std::size_t dropped = queued_.exchange(0, std::memory_order_relaxed);
  if (socket_queued_) socket_queued_->fetch_sub(dropped, std::memory_order_relaxed);
  room_.notify_all();
}

}  // namespace netio::detail
