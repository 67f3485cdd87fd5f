// SPDX-License-Identifier: MIT
// shm://NAME:PORT as a stream family (posix::StreamFamily): abstract Unix-domain sockets
// named "netio-shm/NAME:PORT", peers checked by their credentials (SO_PEERCRED) against
// ShmPeers on both sides, accepted peers named shm://pidPID:N (PID the peer's process, N a
// per-listener count that tells its connections apart); a listener on the unspecified host
// (0.0.0.0, ::) is named shm://pidPID:PORT after its own process.
#pragma once

#include "backends/posix/stream_family.hpp"
#include "netio/backends/shm.hpp"

#include <sys/socket.h>
#include <sys/un.h>

#include <atomic>
#include <memory>
#include <string>

namespace netio::shm {

// The abstract socket address of `endpoint`. Throws Error(Errc::resolve_failed) for a NAME
// that is not one (see netio/backends/shm.hpp).
detail::SocketAddress abstract_address(const Endpoint& endpoint);

// Why the process with credentials `peer` is not trusted under `peers`, or empty.
std::string distrust(const ucred& peer, const ShmPeers& peers);

class UnixFamily final : public posix::StreamFamily {
 public:
  explicit UnixFamily(ShmPeers peers) : peers_(std::move(peers)) {}

  std::vector<detail::SocketAddress> connect_addresses(const Endpoint& remote) const override;
  posix::SocketFd listen_on(const Endpoint& local, Endpoint& bound) const override;
  void prepare(int) const override {}
  Admission admit(int fd, const detail::SocketAddress& address, const Endpoint& local) const override;
  std::string check_listener(int fd, const Endpoint& remote) const override;
  // The data path: the connection's shared segment (ShmReceiveSocket).
  std::unique_ptr<LowLevelReceiveSocket> make_receive_socket(EventLoop& loop, posix::SocketFd fd, const Endpoint& local,
                                                             const Endpoint& peer, std::size_t max_buffer_size,
                                                             std::size_t credits, std::size_t max_reply_size,
                                                             std::chrono::nanoseconds progress_timeout) const override;
  int descriptors_to_set_up() const noexcept override { return 1; }    // the segment's memfd
  bool peers_are_processes() const noexcept override { return true; }  // "pid123", from SO_PEERCRED
  // No stream reads (the data is in the segment).
  bool peek_reads() const noexcept override { return false; }

 private:
  ShmPeers peers_;
  mutable std::atomic<std::uint16_t> next_peer_{0};  // N of shm://pidPID:N
};

}  // namespace netio::shm
