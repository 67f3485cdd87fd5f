// SPDX-License-Identifier: MIT
// The connecting side of a shm:// connection: the POSIX send socket makes the connection
// and its handshake (credentials checked, hello, accept or reject), then hands the Unix
// socket over; this socket reads the segment the listener passes next, checks and maps it,
// and only then reports on_connected. From there data is copied into the data ring (a
// buffer completes once copied) and replies are lent in place from the reply ring, at most
// the ReplyWindow's credits at a time (ShmConnection).
//
// Loop thread only, except that lent replies may be given back on any thread.
#pragma once

#include "backends/posix/fd_registration.hpp"
#include "backends/posix/posix_send_socket.hpp"
#include "backends/posix/stream_family.hpp"
#include "backends/shm/shm_connection.hpp"
#include "netio/backend/backend.hpp"
#include "netio/backend/event_loop.hpp"

#include <deque>
#include <limits>
#include <memory>

namespace netio::shm {

class ShmSendSocket final : public LowLevelSendSocket {
 public:
  ShmSendSocket(EventLoop& loop, std::shared_ptr<const posix::StreamFamily> family);
  ~ShmSendSocket() override { close(); }

  void accept_replies(ReplyWindow window) override;
  void connect(const Endpoint& remote, std::span<const std::byte> hello, Callbacks callbacks) override;
  // Copies the buffer into the data ring, or references it there when it is a page of the
  // send area (queued while the ring is full, or before the segment came); it completes once
  // copied, or once the receiver gave the page back. Never throws: a buffer larger than the peer
  // takes fails the connection with Error(message_too_large), from inside this call.
  void send(Buffer* buffer) override;
  // Plain memory, copied: nothing to register, and no size slower than another.
  MemoryRegistrar* registrar() noexcept override { return nullptr; }
  // The socket's SendArea (made on the first call; nullptr when that fails, logged): pages
  // from it go by reference, without a copy.
  std::shared_ptr<BufferMemory> send_memory() noexcept override;
  void use_send_memory(std::shared_ptr<BufferMemory> memory) noexcept override;
  bool sends_unregistered_memory() const noexcept override { return true; }
  std::size_t efficient_buffer_size() const noexcept override { return std::numeric_limits<std::size_t>::max(); }
  // Shuts the socket for writing once every buffer is in the ring; the receiver delivers
  // them and closes. Its close is clean when it took every entry, else ECONNRESET.
  bool end_stream() override;
  void close() noexcept override;

 private:
  enum class State { idle, handshaking, awaiting_segment, connected, closed };

  void on_accepted(posix::SocketFd fd, ConnectionInfo info);
  void on_segment_readable();
  void on_peer_closed(int error_number);
  void fail_connect(Errc code, const std::string& why);
  void fail_connected(const Error& error);

  EventLoop& loop_;
  std::unique_ptr<posix::PosixSendSocket> handshake_;
  Callbacks callbacks_;
  ReplyWindow window_;
  Endpoint remote_;
  State state_ = State::idle;
  posix::SocketFd fd_;  // between the accept and the segment
  posix::FdRegistration registration_;
  ConnectionInfo info_;
  std::deque<Buffer*> early_;  // sent before the segment came
  std::shared_ptr<SendArea> area_;
  std::unique_ptr<ShmConnection> connection_;
  bool stream_ended_ = false;
};

}  // namespace netio::shm
