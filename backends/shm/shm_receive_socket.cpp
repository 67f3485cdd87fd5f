// SPDX-License-Identifier: MIT
#include "backends/shm/shm_receive_socket.hpp"

#include "backends/shm/segment_passing.hpp"
#include "netio/log.hpp"
#include "rejection_log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace netio::shm {

ShmReceiveSocket::ShmReceiveSocket(EventLoop& loop, posix::SocketFd fd, Endpoint local, Endpoint peer,
                                   std::size_t max_buffer_size, std::size_t credits, std::size_t max_reply_size)
    : local_(std::move(local)),
      peer_(std::move(peer)),
      max_reply_size_(max_reply_size),
      buffers_size_(credits > SIZE_MAX / std::max<std::size_t>(max_buffer_size, 1) ? SIZE_MAX
                                                                                   : credits * max_buffer_size) {
  auto segment = Segment::create(ring_capacity(max_buffer_size, credits, data_ring_limit),
                                 max_reply_size == 0 ? 0 : ring_capacity(max_reply_size, SIZE_MAX, reply_ring_limit));
  send_segment(fd.get(), *segment);
  segment->close_fd();  // mapped: the descriptor is the connector's business now
  RingProducer replies(&segment->reply_control(), segment->reply_ring(), segment->reply_capacity());
  RingConsumer data(&segment->data_control(), segment->data_ring(), segment->data_capacity(), max_buffer_size);
  connection_ = std::make_unique<ShmConnection>(loop, std::move(fd), segment, replies, data, credits,
                                                fmt::format("from {} to {}", peer_.to_string(), local_.to_string()));
}

void ShmReceiveSocket::start(Callbacks callbacks) {
  callbacks_ = std::move(callbacks);
  ShmConnection::Callbacks connection_callbacks;
  connection_callbacks.on_message = [this](ReceivedBuffer buffer) {
    if (callbacks_.on_data) callbacks_.on_data(std::move(buffer));
  };
  connection_callbacks.on_written = [this](Buffer* buffer) {
    if (callbacks_.on_reply_completed) callbacks_.on_reply_completed(buffer);
  };
  connection_callbacks.on_peer_closed = [this](int error_number) {
    fail(Errc::disconnected, error_number == 0
                                 ? fmt::format("{} closed the connection to {}", peer_.to_string(), local_.to_string())
                                 : fmt::format("connection from {} to {} lost: {}", peer_.to_string(),
                                               local_.to_string(), posix::errno_text(error_number)));
  };
  connection_callbacks.on_failed = [this](Errc code, const std::string& why) { fail(code, why); };
  connection_->start(std::move(connection_callbacks));
}

void ShmReceiveSocket::send_reply(Buffer* buffer) {
  if (failed_) return;
  if (buffer->size > max_reply_size_) {
    fail(Errc::message_too_large,
         fmt::format("a {}-byte reply to {} on {}: that sender takes replies of at most {} bytes", buffer->size,
                     peer_.to_string(), local_.to_string(), max_reply_size_));
    return;
  }
  connection_->send(buffer);
}

void ShmReceiveSocket::fail(Errc code, const std::string& why) {
  if (std::exchange(failed_, true)) return;
  if (code == Errc::disconnected)
    log(LogLevel::info, "receive socket: {}", why);
  else
    DroppedConnectionLog::instance().dropped(why);  // rate-limited: a peer may reconnect without end
  auto callback = callbacks_.on_disconnected;
  // Silent from now on; the descriptor stays open until the owner's close(), which the
  // sender's end of stream waits for (as on tcp://).
  connection_->silence();
  if (callback) callback(Error(code, why));
}

}  // namespace netio::shm
