// POSIX listen socket: accepts TCP connections, reads each one's hello, asks the layer above
// to accept or reject it, answers, and hands accepted connections over as receive sockets.
// A connection that sends junk or nothing within the handshake timeout is closed and logged;
// the listener keeps serving everyone else.
#pragma once

#include "backends/posix/handshake_reader.hpp"
#include "backends/posix/socket_fd.hpp"
#include "netio/backend.hpp"
#include "netio/event_loop.hpp"

#include <chrono>
#include <map>
#include <memory>

namespace netio::posix {

class PosixListenSocket final : public LowLevelListenSocket {
 public:
  static constexpr std::chrono::seconds handshake_timeout{10};

  explicit PosixListenSocket(EventLoop& loop) : loop_(loop) {}
  ~PosixListenSocket() override { close(); }

  void listen(const Endpoint& local, Callbacks callbacks) override;
  Endpoint local_endpoint() const override { return local_; }
  void close() noexcept override;

 private:
  struct PendingConnection {
    SocketFd fd;
    Endpoint peer;
    HandshakeReader reader;
    EventLoop::TimerId timeout_timer = 0;
  };

  void on_acceptable();
  void on_hello_readable(int fd);
  void drop_pending(int fd, const std::string& why);
  void answer(std::unique_ptr<PendingConnection> pending);

  EventLoop& loop_;
  Callbacks callbacks_;
  Endpoint local_;
  SocketFd fd_;
  std::map<int, std::unique_ptr<PendingConnection>> pending_;
  bool closed_ = false;
};

}  // namespace netio::posix
