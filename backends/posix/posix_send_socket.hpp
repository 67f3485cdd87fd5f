// POSIX send socket: a non-blocking TCP connection that writes whole buffers as frames,
// several per sendmsg() when they queue up, and tracks partial writes.
#pragma once

#include "backends/posix/handshake_reader.hpp"
#include "backends/posix/socket_fd.hpp"
#include "netio/backend.hpp"
#include "netio/event_loop.hpp"

#include <array>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

namespace netio::posix {

class PosixSendSocket final : public LowLevelSendSocket {
 public:
  explicit PosixSendSocket(EventLoop& loop) : loop_(loop) {}
  ~PosixSendSocket() override { close(); }

  void connect(const Endpoint& remote, std::span<const std::byte> hello, Callbacks callbacks) override;
  void send(Buffer* buffer) override;
  MemoryRegistrar* registrar() noexcept override { return nullptr; }
  bool sends_unregistered_memory() const noexcept override { return true; }
  // No limit: a large buffer is written in several calls (detail::kernel_tcp_write_limit).
  std::size_t efficient_buffer_size() const noexcept override { return std::numeric_limits<std::size_t>::max(); }
  void close() noexcept override;

 private:
  enum class State { idle, connecting, handshaking, connected, closed };
  struct Pending {
    Buffer* buffer;
    std::array<std::byte, 8> header;
  };

  void on_events(std::uint32_t events);
  void on_connect_completed();
  void on_reply_readable();
  void on_peer_readable();
  void write_queued();
  void fail_connect(Errc code, const std::string& why);
  void fail_connected(Errc code, const std::string& why);
  void update_interest();

  EventLoop& loop_;
  Callbacks callbacks_;
  Endpoint remote_;
  SocketFd fd_;
  State state_ = State::idle;
  std::vector<std::byte> hello_frame_;
  std::size_t hello_written_ = 0;
  HandshakeReader reply_reader_;
  std::deque<Pending> queue_;
  std::size_t head_offset_ = 0;  // bytes of queue_.front()'s frame already written
  bool want_write_ = false;      // EPOLLOUT armed
  bool writing_ = false;         // write_queued() is on the stack
  std::vector<Buffer*> completed_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // liveness token for posted tasks
};

}  // namespace netio::posix
