// SPDX-License-Identifier: MIT
#include "netio/high_throughput_socket.hpp"

#include "buffer_sender.hpp"
#include "handshake.hpp"
#include "netio/internal/little_endian.hpp"
#include "netio/log.hpp"
#include "page_format.hpp"
#include "socket_metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <mutex>
#include <string_view>
#include <vector>

namespace netio {
namespace {

// Fetches a cache line for writing (x86's PREFETCHW, which GCC emits for __builtin_prefetch
// only with -mprfchw; a no-op on CPUs without it), elsewhere for reading at least.
inline void prefetch_for_write(const std::byte* address) noexcept {
#if defined(__x86_64__)
  asm volatile("prefetchw %0" : : "m"(*reinterpret_cast<const char*>(address)));
#else
  __builtin_prefetch(address, 1);
#endif
}

}  // namespace

class HighThroughputSendSocket::Impl {
 public:
  Impl(Context& context, const Endpoint& remote, const HighThroughputSendOptions& options)
      : options_(validated(options)),
        sender_(std::make_shared<detail::BufferSender>(
            context, remote, detail::Hello{detail::SocketKind::high_throughput_send, options_.page_size},
            options_.identity, options_.key, options_.replies, options_.page_count, options_.page_size,
            options_.shared_pages, options_.close_awaits_receiver, options_.connect_timeout)),
        stats_(sender_->stats()),
        page_capacity_(std::min(options_.page_size, sender_->efficient_buffer_size())),
        zero_copy_threshold_(zero_copy_threshold(options_, sender_->efficient_buffer_size(), page_capacity_)) {
    reserved_.reserve(options_.page_count);
    sender_->start();
  }

  // Once `self` (this object) is owned: the timer holds a weak reference, so a tick never
  // touches a destroyed socket, whichever thread destroys it and whenever its cancel lands.
  void start_flush_timer(const std::shared_ptr<Impl>& self) {
    flush_timer_ =
        sender_->loop().add_timer(options_.flush_timeout, options_.flush_timeout, [weak = std::weak_ptr<Impl>(self)] {
          if (const auto impl = weak.lock()) {
            impl->flush_page(impl->stats_.flushes_timer());
          }
        });
  }

  ~Impl() { sender_->loop().cancel_timer(flush_timer_); }

  // Starts the asynchronous close: the partly filled page goes out with the rest.
  void close(detail::BufferSender::OnClosed on_closed) {
    sender_->loop().cancel_timer(flush_timer_);  // nothing to flush after this
    {
      std::lock_guard page_lock(page_mutex_);
      closing_.store(true, std::memory_order_release);
      if (current_ != nullptr && current_->size != 0) {
        stats_.flushes_explicit().fetch_add(1, std::memory_order_relaxed);
        submit_current();
      } else if (current_ != nullptr) {
        sender_->pool().release(std::exchange(current_, nullptr));
      }
    }
    sender_->close_async(options_.send_timeout, std::move(on_closed));
  }

  // The receiver is gone: the partly filled page is dropped with the rest, and senders
  // waiting for a page wake to the failure (the pool closes).
  void abort(std::string_view reason) {
    sender_->loop().cancel_timer(flush_timer_);
    // First: a sender that wakes (or finds the socket closing) must see why.
    sender_->abandon(reason);
    std::lock_guard page_lock(page_mutex_);
    closing_.store(true, std::memory_order_release);
    if (current_ != nullptr) sender_->pool().release(std::exchange(current_, nullptr));
  }

  // The destructor's close: blocking on user threads (flush, wait up to send_timeout,
  // close), asynchronous on the loop thread (sender_ lives on until its close ends).
  void close_for_destructor() noexcept {
    try {
      if (sender_->context_gone()) {  // nothing can be sent any more: do not wait for it
        sender_->abandon("the Context it was made from was destroyed before it");
        return;
      }
      close({});
      if (sender_->loop().in_loop_thread()) return;
      (void)sender_->close_and_wait(options_.send_timeout);  // what was lost is logged there
    } catch (const std::exception& e) {
      log(LogLevel::error, "high-throughput send socket to {}: closing failed: {}", sender_->remote().to_string(),
          e.what());
    }
  }

  void throw_if_closed() const {
    if (closing_.load(std::memory_order_acquire)) throw sender_->closed_error();
    sender_->throw_if_unusable();
  }

  // Where the back-end writes each buffer with a call of its own (it caps the buffer size),
  // a lent message costs one more buffer than its frames, for its length: lend only what
  // fills two pages at least.
  static std::size_t zero_copy_threshold(const HighThroughputSendOptions& options, std::size_t efficient_buffer_size,
                                         std::size_t page_capacity) {
    if (options.zero_copy_threshold) return *options.zero_copy_threshold;
    const std::size_t threshold = HighThroughputSendOptions::default_zero_copy_threshold;
    if (efficient_buffer_size == std::numeric_limits<std::size_t>::max()) return threshold;
    return std::max(threshold, 2 * page_capacity);
  }

  // The options as used: with a shared pool, its page size, and its per-connection share
  // as the pages this socket may hold.
  static HighThroughputSendOptions validated(HighThroughputSendOptions options) {
    if (options.shared_pages) {
      options.page_size = options.shared_pages->page_size();
      options.page_count = options.shared_pages->per_connection();
    }
    if (options.page_count == 0) {
      throw Error(Errc::invalid_option, "HighThroughputSendOptions::page_count 0: must be at least 1");
    }
    if (options.page_size < 2 * detail::message_header_size) {
      throw Error(Errc::invalid_option,
                  fmt::format("HighThroughputSendOptions::page_size {}: too small (at least {} bytes)",
                              options.page_size, 2 * detail::message_header_size));
    }
    if (options.flush_timeout <= std::chrono::nanoseconds::zero()) {
      throw Error(Errc::invalid_option, fmt::format("HighThroughputSendOptions::flush_timeout {} ns: must be positive",
                                                    options.flush_timeout.count()));
    }
    return options;
  }

  // The message is the concatenation of `parts` (usually one).
  bool send(std::span<const std::span<const std::byte>> parts, bool wait) {
    throw_if_closed();
    const std::size_t size = detail::total_size(parts);
    if (wait && sender_->loop().in_loop_thread()) {
      // Pages come back on this very thread: waiting for one would never end.
      if (send(parts, false)) return true;
      throw sender_->would_block(
          "send()", fmt::format("the {}-byte message does not fit in the free pages: use try_send() on the "
                                "event-loop thread",
                                size));
    }
    if (wait && size >= zero_copy_threshold_ && sender_->can_send_borrowed()) {
      if (parts.size() == 1) {
        send_from_caller_memory(parts[0]);
      } else {  // lent frames must be one span: join the parts (a copy, as into pages)
        std::vector<std::byte> joined;
        joined.reserve(size);
        for (const auto& part : parts) joined.insert(joined.end(), part.begin(), part.end());
        send_from_caller_memory(joined);
      }
      return true;
    }
    if (send_into_current_page(parts, size)) return true;
    std::lock_guard message_lock(message_mutex_);
    // Take every page the message needs before writing any of it: a timeout then leaves
    // nothing queued. Only a message larger than the whole pool streams through it.
    const std::size_t needed = pages_needed(size);
    if (!wait && needed > options_.page_count) {
      throw Error(Errc::message_too_large,
                  fmt::format("a {}-byte message needs more pages than the pool of {} holds: only send() on a "
                              "user thread can take it (it streams it)",
                              size, options_.page_count));
    }
    if (needed <= options_.page_count && !reserve_pages(needed, wait)) return false;
    detail::MessagePacker packer(parts, size);
    while (!packer.done()) {
      std::unique_lock page_lock(page_mutex_);
      if (current_ == nullptr) {
        page_lock.unlock();  // never wait for a page while holding what the timer needs
        Buffer* page = next_page(packer.started());
        page_lock.lock();
        if (closing_.load(std::memory_order_relaxed)) {  // close() took the pages meanwhile
          sender_->pool().release(page);
          release_reserved();
          throw sender_->closed_error();
        }
        current_ = page;
      }
      packer.fill(current_->data, current_->size, page_capacity_);
      if (packer.done()) stats_.add_message_single_writer(size);  // every writer holds page_mutex_
      if (detail::MessagePacker::page_full(current_->size, page_capacity_)) {
        stats_.flushes_full().fetch_add(1, std::memory_order_relaxed);
        submit_current();
      }
    }
    return true;
  }

  // The length goes into the current page, which is sent; the bytes follow as frames of
  // their own, straight from the caller's memory. Frames are at most a page's capacity, so
  // the receiver's page limit holds, and a body that fits one arrives as one page it can
  // hand out without reassembling.
  void send_from_caller_memory(std::span<const std::byte> message) {
    std::lock_guard message_lock(message_mutex_);
    {
      std::unique_lock page_lock(page_mutex_);
      if (current_ == nullptr) {
        page_lock.unlock();
        Buffer* page = next_page(false);  // a timeout throws with nothing queued
        page_lock.lock();
        if (closing_.load(std::memory_order_relaxed)) {
          sender_->pool().release(page);
          throw sender_->closed_error();
        }
        current_ = page;
      }
      detail::store_le<std::uint64_t>(current_->data + current_->size, message.size());
      current_->size += detail::message_header_size;
      stats_.add_message_single_writer(message.size());  // every writer holds page_mutex_
      stats_.zero_copy_messages().fetch_add(1, std::memory_order_relaxed);
      submit_current();
    }
    sender_->send_borrowed(message, page_capacity_, options_.send_timeout);
    stats_.pages().fetch_add((message.size() + page_capacity_ - 1) / page_capacity_, std::memory_order_relaxed);
  }

  // The common case, under one lock: the whole message fits into the current page. Another
  // sender's message is never half-written there: between the pages of a message that
  // spans pages current_ is null (a page is submitted as soon as it is full).
  bool send_into_current_page(std::span<const std::span<const std::byte>> parts, std::size_t size) {
    std::lock_guard page_lock(page_mutex_);
    if (closing_.load(std::memory_order_relaxed)) throw sender_->closed_error();
    if (current_ == nullptr || page_capacity_ - current_->size < detail::message_header_size + size) {
      return false;
    }
    detail::MessagePacker::write_whole(current_->data, current_->size, parts, size);
    // Ask for the cache lines the next messages go to before they are written: a page the
    // receiver read in place (shm://) is in its core's cache, and the lock's release below
    // would otherwise wait for each line to come back before the next message starts.
    if (current_->size + prefetch_distance < page_capacity_)
      prefetch_for_write(current_->data + current_->size + prefetch_distance);
    if (detail::MessagePacker::page_full(current_->size, page_capacity_)) {
      stats_.flushes_full().fetch_add(1, std::memory_order_relaxed);
      submit_current();
    }
    stats_.add_message_single_writer(size);  // every writer holds page_mutex_
    return true;
  }

  // Fresh pages a message of `size` bytes needs after what the current page can take.
  std::size_t pages_needed(std::size_t size) {
    std::size_t free = 0;
    {
      std::lock_guard page_lock(page_mutex_);
      if (current_ != nullptr) free = page_capacity_ - current_->size;
    }
    if (free >= detail::message_header_size + size) return 0;
    // The length field never spans pages, so it goes where it fits whole.
    const std::size_t rest = free >= detail::message_header_size ? size - (free - detail::message_header_size)
                                                                 : size + detail::message_header_size;
    return (rest + page_capacity_ - 1) / page_capacity_;
  }

  // Fills reserved_ with `count` pages. False (nothing held) when !wait and the pool is
  // short; throws Errc::timeout (nothing held) when waiting ran out.
  bool reserve_pages(std::size_t count, bool wait) {
    const auto deadline = std::chrono::steady_clock::now() + options_.send_timeout;
    bool waited = false;
    while (reserved_.size() < count) {
      if (Buffer* page = sender_->pool().try_acquire()) {
        reserved_.push_back(page);
        continue;
      }
      if (!wait) {
        release_reserved();
        return false;
      }
      if (!std::exchange(waited, true)) stats_.backpressure_waits().fetch_add(1, std::memory_order_relaxed);
      const auto left =
          std::max(deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero());
      if (Buffer* page = sender_->pool().acquire(left)) {
        reserved_.push_back(page);
        continue;
      }
      release_reserved();
      sender_->state().throw_if_failed();  // a failed connection closes the pool
      throw page_timeout("nothing of the message was queued");
    }
    return true;
  }

  void release_reserved() {
    for (Buffer* page : reserved_) sender_->pool().release(page);
    reserved_.clear();
  }

  // A reserved page, or (when the flush timer took the current page meanwhile, or the
  // message is larger than the pool) a page from the pool, waiting for one.
  Buffer* next_page(bool message_started) {
    if (!reserved_.empty()) {
      Buffer* page = reserved_.back();
      reserved_.pop_back();
      return page;
    }
    if (Buffer* page = sender_->pool().try_acquire()) return page;
    stats_.backpressure_waits().fetch_add(1, std::memory_order_relaxed);
    // Never waits on the loop thread (pages come back there); only a message larger than
    // the pool gets here, and send() does not take those on the loop thread.
    const bool may_wait = !sender_->loop().in_loop_thread();
    if (Buffer* page = may_wait ? sender_->pool().acquire(options_.send_timeout) : nullptr) return page;
    sender_->state().throw_if_failed();  // a failed connection closes the pool
    // Part of the message is queued: going on would tear the stream, so it ends here.
    Error error = page_timeout(message_started ? "the message was half queued, so the connection was closed"
                                               : "nothing of the message was queued");
    if (message_started) sender_->abort(error);
    throw error;
  }

  Error page_timeout(std::string_view consequence) const {
    return Error(Errc::timeout,
                 fmt::format("no free page for {} within {} ms: all {} pages are in flight ({}); {}",
                             sender_->remote().to_string(),
                             std::chrono::duration_cast<std::chrono::milliseconds>(options_.send_timeout).count(),
                             options_.page_count, sender_->why_no_buffer(), consequence));
  }

  void flush_page(std::atomic<std::uint64_t>& counter) {
    std::lock_guard page_lock(page_mutex_);
    if (current_ == nullptr || current_->size == 0) return;
    counter.fetch_add(1, std::memory_order_relaxed);
    submit_current();
  }

  // page_mutex_ held.
  void submit_current() {
    stats_.pages().fetch_add(1, std::memory_order_relaxed);
    Buffer* page = std::exchange(current_, nullptr);
    // Refused only once the sender closes, which happens after close() took page_mutex_
    // and set closing_: no message written under the lock is lost that way.
    if (!sender_->submit(page)) sender_->pool().release(page);
  }

  static constexpr std::size_t prefetch_distance = 512;  // bytes ahead of the write position

  HighThroughputSendOptions options_;
  std::shared_ptr<detail::BufferSender> sender_;
  StatsCounters& stats_;  // sender_'s: it outlives this object while a close is in progress
  // Bytes filled into a page (and lent per frame) at most: the page size, or less where the
  // back-end sends smaller buffers faster. The receiver only checks against the page size.
  const std::size_t page_capacity_;
  const std::size_t zero_copy_threshold_;  // the option, or the back-end's default
  EventLoop::TimerId flush_timer_ = 0;
  std::mutex message_mutex_;  // one message at a time, held across waits for pages
  std::mutex page_mutex_;     // current_, shared with the flush timer on the loop thread
  Buffer* current_ = nullptr;
  std::vector<Buffer*> reserved_;          // guarded by message_mutex_; capacity page_count, never grows
  std::atomic<bool> closing_{false};       // set under page_mutex_ by close()
  MetricsRegistry::Registration metrics_;  // last: removed before anything it reads goes
};

HighThroughputSendSocket::HighThroughputSendSocket(Context& context, const Endpoint& remote,
                                                   HighThroughputSendOptions options)
    : impl_(std::make_shared<Impl>(context, remote, options)) {
  impl_->start_flush_timer(impl_);
  impl_->metrics_ = detail::add_socket_metrics(context, "high_throughput_send", remote.to_string(), impl_->stats_);
}

HighThroughputSendSocket::~HighThroughputSendSocket() { impl_->close_for_destructor(); }

bool HighThroughputSendSocket::wait_connected(std::chrono::nanoseconds timeout) {
  impl_->sender_->throw_if_context_gone();
  impl_->sender_->refuse_on_loop_thread("wait_connected()", "use connected() there");
  return impl_->sender_->state().wait_connected(timeout);
}
bool HighThroughputSendSocket::connected() const noexcept { return impl_->sender_->state().connected(); }
std::optional<Error> HighThroughputSendSocket::failure() const { return impl_->sender_->state().tell_failure(); }
void HighThroughputSendSocket::send(std::span<const std::byte> message) {
  const std::span<const std::byte> parts[] = {message};
  impl_->send(parts, true);
}
bool HighThroughputSendSocket::try_send(std::span<const std::byte> message) {
  const std::span<const std::byte> parts[] = {message};
  return impl_->send(parts, false);
}
void HighThroughputSendSocket::send_parts(std::span<const std::span<const std::byte>> parts) {
  impl_->send(parts, true);
}
bool HighThroughputSendSocket::try_send_parts(std::span<const std::span<const std::byte>> parts) {
  return impl_->send(parts, false);
}
void HighThroughputSendSocket::flush() {
  impl_->sender_->throw_if_context_gone();
  impl_->flush_page(impl_->stats_.flushes_explicit());
}
bool HighThroughputSendSocket::flush_and_wait(std::chrono::nanoseconds timeout) {
  impl_->sender_->throw_if_context_gone();
  impl_->sender_->refuse_on_loop_thread("flush_and_wait()",
                                        "use flush(), or close(on_closed) to learn when everything was sent");
  flush();
  return impl_->sender_->wait_idle(timeout);
}
std::optional<Message> HighThroughputSendSocket::recv_reply(std::chrono::nanoseconds timeout) {
  impl_->sender_->throw_if_context_gone();
  return impl_->sender_->replies().recv(timeout);
}
void HighThroughputSendSocket::close(std::function<void(const Error*)> on_closed) {
  impl_->sender_->throw_if_context_gone();
  impl_->close(std::move(on_closed));
}
void HighThroughputSendSocket::abort(std::string_view reason) {
  impl_->sender_->throw_if_context_gone();
  impl_->abort(reason);
}
const Endpoint& HighThroughputSendSocket::remote() const noexcept { return impl_->sender_->remote(); }
SocketStats HighThroughputSendSocket::stats() const noexcept { return impl_->stats_.snapshot(); }
std::size_t HighThroughputSendSocket::buffer_bytes() const { return impl_->sender_->pool().bytes_allocated(); }

}  // namespace netio
