// POSIX receive socket: reads frames from one accepted TCP connection into pool buffers and
// lends each to the layer above as a ReceivedBuffer.
//
// Reading goes through a staging buffer, so one recv() picks up many small frames; the
// bulk of a large frame is read straight into its own buffer. When every buffer is lent
// out the socket stops reading, TCP's window closes, and the sender feels back-pressure.
#pragma once

#include "backends/posix/socket_fd.hpp"
#include "netio/backend.hpp"
#include "netio/event_loop.hpp"

#include <memory>
#include <vector>

namespace netio::posix {

class ReceiveBufferPool;

class PosixReceiveSocket final : public LowLevelReceiveSocket {
 public:
  PosixReceiveSocket(EventLoop& loop, SocketFd fd, Endpoint local, Endpoint peer, std::size_t max_buffer_size,
                     std::size_t credits);
  ~PosixReceiveSocket() override;

  void start(Callbacks callbacks) override;
  const Endpoint& peer() const noexcept override { return peer_; }
  void close() noexcept override;

 private:
  enum class Step { progress, would_block, stalled, done };

  void on_readable();
  Step read_once();
  // Takes `bytes` already peeked into staging from the kernel; false (and failed) if it
  // could not.
  bool discard_peeked(std::size_t bytes);
  bool consume_staged();  // false when stalled for lack of buffers or closed
  void deliver();
  void resume();
  void fail(Errc code, const std::string& why);

  EventLoop& loop_;
  SocketFd fd_;
  Endpoint local_;
  Endpoint peer_;
  std::size_t max_buffer_size_;
  Callbacks callbacks_;
  std::shared_ptr<ReceiveBufferPool> pool_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // liveness token for posted wake-ups
  bool closed_ = false;
  bool stalled_ = false;  // EPOLLIN off until a buffer comes back

  std::vector<std::byte> staging_;
  std::size_t staged_begin_ = 0;
  std::size_t staged_end_ = 0;
  Buffer* current_ = nullptr;  // the frame being filled
  std::size_t expected_ = 0;   // its length
  bool have_header_ = false;
};

}  // namespace netio::posix
