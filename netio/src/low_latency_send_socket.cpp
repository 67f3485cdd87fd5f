#include "netio/low_latency_socket.hpp"

#include "buffer_sender.hpp"
#include "handshake.hpp"

#include <fmt/format.h>

#include <cstring>

namespace netio {

class LowLatencySendSocket::Impl {
 public:
  Impl(Context& context, const Endpoint& remote, const LowLatencySendOptions& options)
      : options_(options),
        sender_(context, remote, detail::Hello{detail::SocketKind::low_latency_send, 0}, options.identity,
                options.replies, options.buffer_count, options.buffer_size, stats_) {}

  // One buffer per message: waits for a free one when `wait`, copies, submits.
  bool send(std::span<const std::byte> message, bool wait) {
    sender_.state().throw_if_failed();
    if (const auto limit = sender_.state().peer_max_buffer_size(); limit != 0 && message.size() > limit) {
      throw Error(Errc::message_too_large, fmt::format("a {}-byte message is larger than {} accepts ({} bytes)",
                                                       message.size(), sender_.remote().to_string(), limit));
    }
    Buffer* buffer = sender_.pool().try_acquire();
    if (buffer == nullptr) {
      if (!wait) return false;
      if (sender_.loop().in_loop_thread()) {
        throw Error(Errc::timeout, fmt::format("send() to {} on the event-loop thread with all {} buffers in flight "
                                               "would wait forever: use try_send() in callbacks",
                                               sender_.remote().to_string(), options_.buffer_count));
      }
      stats_.backpressure_waits().fetch_add(1, std::memory_order_relaxed);
      buffer = sender_.pool().acquire(options_.send_timeout);
      if (buffer == nullptr) {
        sender_.state().throw_if_failed();  // a failed connection closes the pool
        throw Error(Errc::timeout,
                    fmt::format("no send buffer to {} freed up within {} ms (the receiver is not keeping up)",
                                sender_.remote().to_string(),
                                std::chrono::duration_cast<std::chrono::milliseconds>(options_.send_timeout).count()));
      }
    }
    sender_.pool().reserve(buffer, message.size());
    if (!message.empty()) std::memcpy(buffer->data, message.data(), message.size());
    buffer->size = message.size();
    stats_.add_message(message.size());
    stats_.pages().fetch_add(1, std::memory_order_relaxed);
    sender_.submit(buffer);
    return true;
  }

  LowLatencySendOptions options_;
  StatsCounters stats_;
  detail::BufferSender sender_;
};

LowLatencySendSocket::LowLatencySendSocket(Context& context, const Endpoint& remote, LowLatencySendOptions options)
    : impl_(std::make_shared<Impl>(context, remote, options)) {}

LowLatencySendSocket::~LowLatencySendSocket() = default;

void LowLatencySendSocket::wait_connected(std::chrono::nanoseconds timeout) {
  impl_->sender_.state().wait_connected(timeout, impl_->sender_.remote());
}
bool LowLatencySendSocket::connected() const noexcept { return impl_->sender_.state().connected(); }
void LowLatencySendSocket::send(std::span<const std::byte> message) { impl_->send(message, true); }
bool LowLatencySendSocket::try_send(std::span<const std::byte> message) { return impl_->send(message, false); }
std::optional<Message> LowLatencySendSocket::recv_reply(std::chrono::nanoseconds timeout) {
  return impl_->sender_.replies().recv(timeout);
}
void LowLatencySendSocket::wait_sent(std::chrono::nanoseconds timeout) { impl_->sender_.wait_idle(timeout); }
const Endpoint& LowLatencySendSocket::remote() const noexcept { return impl_->sender_.remote(); }
SocketStats LowLatencySendSocket::stats() const noexcept { return impl_->stats_.snapshot(); }

}  // namespace netio
