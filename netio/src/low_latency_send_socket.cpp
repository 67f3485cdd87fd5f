// SPDX-License-Identifier: MIT
#include "netio/low_latency_socket.hpp"

#include "buffer_sender.hpp"
#include "handshake.hpp"
#include "message_parts.hpp"
#include "netio/log.hpp"
#include "socket_metrics.hpp"

#include <fmt/format.h>

#include <cstring>
#include <string_view>

namespace netio {

class LowLatencySendSocket::Impl {
 public:
  Impl(Context& context, const Endpoint& remote, const LowLatencySendOptions& options)
      : options_(validated(options)),
        sender_(std::make_shared<detail::BufferSender>(
            context, remote, detail::Hello{detail::SocketKind::low_latency_send, 0}, options.identity, options.key,
            options.replies, options.buffer_count, options.buffer_size, nullptr, options.close_awaits_receiver,
            options.connect_timeout)),
        stats_(sender_->stats()) {
    sender_->start();
  }

  static const LowLatencySendOptions& validated(const LowLatencySendOptions& options) {
    if (options.buffer_count == 0) {
      throw Error(Errc::invalid_option, "LowLatencySendOptions::buffer_count 0: must be at least 1");
    }
    return options;
  }

  // One buffer per message (the concatenation of `parts`): waits for a free one when
  // `wait`, copies, submits.
  bool send(std::span<const std::span<const std::byte>> parts, bool wait) {
    sender_->throw_if_unusable();
    const std::size_t size = detail::total_size(parts);
    if (const auto limit = sender_->state().peer_max_buffer_size(); limit != 0 && size > limit) {
      throw Error(Errc::message_too_large, fmt::format("a {}-byte message is larger than {} accepts ({} bytes)", size,
                                                       sender_->remote().to_string(), limit));
    }
    Buffer* buffer = sender_->pool().try_acquire();
    if (buffer == nullptr) {
      if (!wait) return false;
      if (sender_->loop().in_loop_thread()) {
        throw sender_->would_block("send()",
                                   fmt::format("all {} buffers are in flight: use try_send() on the event-loop thread",
                                               options_.buffer_count));
      }
      stats_.backpressure_waits().fetch_add(1, std::memory_order_relaxed);
      buffer = sender_->pool().acquire(options_.send_timeout);
      if (buffer == nullptr) {
        sender_->state().throw_if_failed();  // a failed connection closes the pool
        throw Error(Errc::timeout,
                    fmt::format("no send buffer to {} freed up within {} ms ({})", sender_->remote().to_string(),
                                std::chrono::duration_cast<std::chrono::milliseconds>(options_.send_timeout).count(),
                                sender_->why_no_buffer()));
      }
    }
    try {
      sender_->pool().reserve(buffer, size);  // may fail to allocate or register
    } catch (...) {
      sender_->pool().release(buffer);
      throw;
    }
    buffer->size = 0;
    for (const auto& part : parts) {
      if (!part.empty()) std::memcpy(buffer->data + buffer->size, part.data(), part.size());
      buffer->size += part.size();
    }
    stats_.add_message(size);
    stats_.pages().fetch_add(1, std::memory_order_relaxed);
    if (!sender_->submit(buffer)) {  // close() started meanwhile
      sender_->pool().release(buffer);
      throw sender_->closed_error();
    }
    return true;
  }

  // The destructor's close: blocking on user threads, asynchronous on the loop thread
  // (sender_ lives on until its close ends).
  void close_for_destructor() noexcept {
    try {
      if (sender_->context_gone()) {  // nothing can be sent any more: do not wait for it
        sender_->abandon("the Context it was made from was destroyed before it");
        return;
      }
      if (sender_->loop().in_loop_thread()) {
        sender_->close_async(options_.send_timeout, {});
        return;
      }
      (void)sender_->close_and_wait(options_.send_timeout);  // what was lost is logged there
    } catch (const std::exception& e) {
      log(LogLevel::error, "low-latency send socket to {}: closing failed: {}", sender_->remote().to_string(),
          e.what());
    }
  }

  LowLatencySendOptions options_;
  std::shared_ptr<detail::BufferSender> sender_;
  StatsCounters& stats_;                   // sender_'s
  MetricsRegistry::Registration metrics_;  // last: removed before anything it reads goes
};

LowLatencySendSocket::LowLatencySendSocket(Context& context, const Endpoint& remote, LowLatencySendOptions options)
    : impl_(std::make_shared<Impl>(context, remote, options)) {
  impl_->metrics_ = detail::add_socket_metrics(context, "low_latency_send", remote.to_string(), impl_->stats_);
}

LowLatencySendSocket::~LowLatencySendSocket() { impl_->close_for_destructor(); }

bool LowLatencySendSocket::wait_connected(std::chrono::nanoseconds timeout) {
  impl_->sender_->throw_if_context_gone();
  impl_->sender_->refuse_on_loop_thread("wait_connected()", "use connected() there");
  return impl_->sender_->state().wait_connected(timeout);
}
bool LowLatencySendSocket::connected() const noexcept { return impl_->sender_->state().connected(); }
std::optional<Error> LowLatencySendSocket::failure() const { return impl_->sender_->state().tell_failure(); }
void LowLatencySendSocket::send(std::span<const std::byte> message) {
  const std::span<const std::byte> parts[] = {message};
  impl_->send(parts, true);
}
bool LowLatencySendSocket::try_send(std::span<const std::byte> message) {
  const std::span<const std::byte> parts[] = {message};
  return impl_->send(parts, false);
}
void LowLatencySendSocket::send_parts(std::span<const std::span<const std::byte>> parts) { impl_->send(parts, true); }
bool LowLatencySendSocket::try_send_parts(std::span<const std::span<const std::byte>> parts) {
  return impl_->send(parts, false);
}
std::optional<Message> LowLatencySendSocket::recv_reply(std::chrono::nanoseconds timeout) {
  impl_->sender_->throw_if_context_gone();
  return impl_->sender_->replies().recv(timeout);
}
bool LowLatencySendSocket::wait_sent(std::chrono::nanoseconds timeout) {
  impl_->sender_->throw_if_context_gone();
  impl_->sender_->refuse_on_loop_thread("wait_sent()", "use close(on_closed) to learn when everything was sent");
  return impl_->sender_->wait_idle(timeout);
}
void LowLatencySendSocket::close(std::function<void(const Error*)> on_closed) {
  impl_->sender_->throw_if_context_gone();
  impl_->sender_->close_async(impl_->options_.send_timeout, std::move(on_closed));
}
void LowLatencySendSocket::abort(std::string_view reason) {
  impl_->sender_->throw_if_context_gone();
  impl_->sender_->abandon(reason);
}
const Endpoint& LowLatencySendSocket::remote() const noexcept { return impl_->sender_->remote(); }
SocketStats LowLatencySendSocket::stats() const noexcept { return impl_->stats_.snapshot(); }
std::size_t LowLatencySendSocket::buffer_bytes() const { return impl_->sender_->pool().bytes_allocated(); }

}  // namespace netio
