// SPDX-License-Identifier: MIT
// A TCP port on 127.0.0.1 held for as long as the object lives, for tests that need a peer
// that does nothing:
// - Kind::refusing: bound and not listening, so every connection there is refused (both
//   back-ends);
// - Kind::silent: listening, so the kernel completes connections from the backlog, and
//   nobody ever reads or writes a byte (a handshake never answered).
// Held, not bound and closed again ("nobody listens there any more"): ctest runs test
// processes in parallel, and another one may bind a freed port and take the connection (a
// test then receives messages it never sent; seen as "destination 59 got message 99/0" in
// the connection-manager tests).
#pragma once

#include "netio/endpoint.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <utility>

namespace netio::test {

class LoopbackPort {
 public:
  enum class Kind { refusing, silent };

  explicit LoopbackPort(Kind kind) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    REQUIRE(fd_ >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    if (kind == Kind::silent) REQUIRE(::listen(fd_, 64) == 0);
    socklen_t length = sizeof address;
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    port_ = ntohs(address.sin_port);
  }
  ~LoopbackPort() { release(); }
  LoopbackPort(const LoopbackPort&) = delete;
  LoopbackPort& operator=(const LoopbackPort&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  // Lets go of the port, for a listener of the test to bind it now (a peer that starts
  // late); port() stays what it was.
  void release() {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  }
  // `base` (any scheme, on 127.0.0.1) with this port.
  Endpoint endpoint(const Endpoint& base) const { return base.with_port(port_); }

 private:
  int fd_;
  std::uint16_t port_ = 0;
};

}  // namespace netio::test
