// SPDX-License-Identifier: MIT
#include "backends/shm/shm_send_socket.hpp"

#include "backends/shm/segment_passing.hpp"
#include "netio/log.hpp"

#include <fmt/format.h>

#include <sys/epoll.h>

#include <cerrno>
#include <system_error>

namespace netio::shm {

ShmSendSocket::ShmSendSocket(EventLoop& loop, std::shared_ptr<const posix::StreamFamily> family)
    : loop_(loop), handshake_(std::make_unique<posix::PosixSendSocket>(loop, std::move(family))), registration_(loop) {}

void ShmSendSocket::accept_replies(ReplyWindow window) {
  window_ = window;
  handshake_->accept_replies(window);
}

void ShmSendSocket::connect(const Endpoint& remote, std::span<const std::byte> hello, Callbacks callbacks) {
  callbacks_ = std::move(callbacks);
  remote_ = remote;
  state_ = State::handshaking;
  handshake_->hand_over_on_accept(
      [this](posix::SocketFd fd, ConnectionInfo info) { on_accepted(std::move(fd), std::move(info)); });
  Callbacks handshake_callbacks;
  handshake_callbacks.on_connect_failed = [this](const Error& error) {
    auto callback = callbacks_.on_connect_failed;
    close();
    if (callback) callback(error);
  };
  handshake_->connect(remote, hello, std::move(handshake_callbacks));
}

void ShmSendSocket::on_accepted(posix::SocketFd fd, ConnectionInfo info) {
  state_ = State::awaiting_segment;
  fd_ = std::move(fd);
  info_ = std::move(info);
  registration_.add(fd_.get(), EPOLLIN, [this](std::uint32_t) { on_segment_readable(); });
  on_segment_readable();  // it may be there already
}

void ShmSendSocket::on_segment_readable() {
  if (state_ != State::awaiting_segment) return;
  auto received = receive_segment(fd_.get());
  switch (received.status) {
    case ReceivedSegment::Status::need_more: return;
    case ReceivedSegment::Status::closed:
      fail_connect(Errc::handshake_rejected,
                   fmt::format("{} closed the connection before passing its shared segment", remote_.to_string()));
      return;
    case ReceivedSegment::Status::failed:
      fail_connect(Errc::handshake_rejected,
                   fmt::format("{} did not pass a shared segment: {}", remote_.to_string(), received.why));
      return;
    case ReceivedSegment::Status::received: break;
  }
  std::string unusable;
  const std::size_t max_reply = window_.max_size == 0 ? 0 : ring_capacity(window_.max_size, SIZE_MAX, reply_ring_limit);
  auto segment =
      Segment::attach(std::move(received.fd), ring_capacity(info_.peer_max_buffer_size, SIZE_MAX, data_ring_limit),
                      max_reply, unusable);
  if (!segment) {
    fail_connect(Errc::handshake_rejected,
                 fmt::format("the shared segment {} passed is unusable: {}", remote_.to_string(), unusable));
    return;
  }
  segment->close_fd();
  registration_.remove();
  RingProducer data(&segment->data_control(), segment->data_ring(), segment->data_capacity());
  std::optional<RingConsumer> replies;
  if (segment->reply_capacity() != 0 && window_.max_size != 0) {
    replies.emplace(&segment->reply_control(), segment->reply_ring(), segment->reply_capacity(), window_.max_size);
  }
  const auto peer = remote_.to_string();
  connection_ = std::make_unique<ShmConnection>(loop_, std::move(fd_), segment, data, replies, window_.credits,
                                                fmt::format("to {}", peer));
  connection_->use_send_area(area_);
  state_ = State::connected;
  ShmConnection::Callbacks connection_callbacks;
  connection_callbacks.on_message = [this](ReceivedBuffer buffer) {
    if (callbacks_.on_reply) callbacks_.on_reply(std::move(buffer));
  };
  connection_callbacks.on_written = [this](Buffer* buffer) {
    if (callbacks_.on_send_completed) callbacks_.on_send_completed(buffer);
  };
  connection_callbacks.on_sent_in_place = [this](Buffer* buffer) {
    if (callbacks_.on_sent_in_place) callbacks_.on_sent_in_place(buffer);
  };
  connection_callbacks.on_peer_closed = [this](int error_number) { on_peer_closed(error_number); };
  connection_callbacks.on_failed = [this](Errc code, const std::string& why) { fail_connected(Error(code, why)); };
  connection_->start(std::move(connection_callbacks));
  if (state_ != State::connected) return;
  if (callbacks_.on_connected) callbacks_.on_connected(info_);
  // Buffers queued before the connection was up meet the receiver's limit only now.
  while (state_ == State::connected && !early_.empty()) {
    Buffer* buffer = early_.front();
    early_.pop_front();
    send(buffer);
  }
}

std::shared_ptr<BufferMemory> ShmSendSocket::send_memory() noexcept {
  if (!area_) {
    try {
      area_ = SendArea::create();
    } catch (const std::exception& e) {
      log(LogLevel::warn, "send socket to {}: no send area, pages are copied: {}", remote_.to_string(), e.what());
      return nullptr;
    }
  }
  return area_;
}

void ShmSendSocket::use_send_memory(std::shared_ptr<BufferMemory> memory) noexcept {
  if (auto area = std::dynamic_pointer_cast<SendArea>(std::move(memory))) area_ = std::move(area);
}

void ShmSendSocket::send(Buffer* buffer) {
  switch (state_) {
    case State::idle:
    case State::handshaking:
    case State::awaiting_segment: early_.push_back(buffer); return;
    case State::closed: return;
    case State::connected: break;
  }
  if (buffer->size > info_.peer_max_buffer_size) {
    fail_connected(
        Error(Errc::message_too_large, fmt::format("a buffer of {} bytes is larger than the {} bytes {} takes",
                                                   buffer->size, info_.peer_max_buffer_size, remote_.to_string())));
    return;
  }
  connection_->send(buffer);
}

bool ShmSendSocket::end_stream() {
  if (state_ != State::connected || !connection_->outbound_empty() || stream_ended_) return false;
  std::string failure;
  if (!connection_->shut_down_writing(failure)) {
    fail_connected(
        Error(Errc::disconnected, fmt::format("ending the stream to {} failed: {}", remote_.to_string(), failure)));
    return true;
  }
  stream_ended_ = true;
  return true;
}

void ShmSendSocket::on_peer_closed(int error_number) {
  if (!stream_ended_) {
    fail_connected(Error(Errc::disconnected, error_number == 0
                                                 ? fmt::format("{} closed the connection", remote_.to_string())
                                                 : fmt::format("connection to {} lost: {}", remote_.to_string(),
                                                               posix::errno_text(error_number))));
    return;
  }
  // After the end of the stream: clean when the receiver took every entry before it closed.
  if (error_number == 0 && !connection_->peer_took_everything()) error_number = ECONNRESET;
  if (error_number == 0) {
    fail_connected(Error(Errc::disconnected,
                         fmt::format("{} closed the connection after the end of the stream", remote_.to_string())));
    return;
  }
  fail_connected(Error(std::error_code(error_number, std::system_category()),
                       fmt::format("{} closed the connection with data unread: {}", remote_.to_string(),
                                   posix::errno_text(error_number))));
}

void ShmSendSocket::fail_connect(Errc code, const std::string& why) {
  log(LogLevel::info, "send socket: {}", why);
  auto callback = callbacks_.on_connect_failed;
  close();
  if (callback) callback(Error(code, why));
}

void ShmSendSocket::fail_connected(const Error& error) {
  if (state_ == State::closed) return;
  log(posix::send_failure_level(error, stream_ended_), "send socket: {}", error.what());
  auto callback = callbacks_.on_disconnected;
  close();
  if (callback) callback(error);
}

void ShmSendSocket::close() noexcept {
  if (state_ == State::closed) return;
  state_ = State::closed;
  handshake_->close();
  registration_.remove();
  fd_.reset();
  if (connection_) connection_->close();
  early_.clear();
}

}  // namespace netio::shm
