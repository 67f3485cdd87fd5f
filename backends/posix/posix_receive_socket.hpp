// SPDX-License-Identifier: MIT
// POSIX receive socket: reads data frames from one accepted TCP connection into pool buffers
// and lends each to the layer above as a ReceivedBuffer (FrameReader), and writes replies
// back on the same connection (FrameWriter).
//
// When every buffer is lent out the socket stops reading, TCP's window closes, and the
// sender feels back-pressure. A sender stuck in the middle of a frame (slowloris) fails the
// connection after `progress_timeout` without a complete frame, unless this side held it
// back meanwhile (checked by one periodic loop timer per connection; zero: never). Replies the sender does not read
// pile up in the kernel's send buffer and then here, in the queue of buffers the caller handed over: never more.
#pragma once

#include "backends/posix/fd_registration.hpp"
#include "backends/posix/frame_reader.hpp"
#include "backends/posix/frame_writer.hpp"
#include "backends/posix/socket_fd.hpp"
#include "netio/backend/backend.hpp"
#include "netio/backend/event_loop.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

namespace netio::posix {

class PosixReceiveSocket final : public LowLevelReceiveSocket {
 public:
  PosixReceiveSocket(EventLoop& loop, SocketFd fd, Endpoint local, Endpoint peer, std::size_t max_buffer_size,
                     std::size_t credits, std::size_t max_reply_size,
                     std::chrono::nanoseconds progress_timeout = std::chrono::nanoseconds::zero(),
                     bool peek_reads = true);
  ~PosixReceiveSocket() override;

  void start(Callbacks callbacks) override;
  const Endpoint& peer() const noexcept override { return peer_; }
  std::size_t bytes_held() const noexcept override { return reader_.bytes_held(); }
  std::size_t max_reply_size() const noexcept override { return max_reply_size_; }
  MemoryRegistrar* reply_registrar() noexcept override { return nullptr; }
  void send_reply(Buffer* buffer) override;
  void close() noexcept override;

 private:
  void on_events(std::uint32_t events);
  void write_replies();
  void update_interest();
  void fail(Errc code, const std::string& why);
  void silence() noexcept;  // no callback after it; the descriptor stays open
  void check_progress();

  EventLoop& loop_;
  SocketFd fd_;
  Endpoint local_;
  Endpoint peer_;
  std::size_t max_reply_size_;
  FdRegistration registration_;
  Callbacks callbacks_;
  FrameReader reader_;
  FrameWriter replies_;
  std::chrono::nanoseconds progress_timeout_;
  EventLoop::TimerId progress_timer_ = 0;
  std::uint64_t frames_at_check_ = 0;
  bool held_back_since_check_ = false;  // this side stopped reading since the last check
  bool started_ = false;
  bool closed_ = false;
};

}  // namespace netio::posix
