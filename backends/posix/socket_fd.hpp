// SPDX-License-Identifier: MIT
// An owned file descriptor and the few socket options the POSIX back-end sets.
#pragma once

#include <unistd.h>

#include <string>
#include <utility>

namespace netio::posix {

class SocketFd {
 public:
  SocketFd() = default;
  explicit SocketFd(int fd) noexcept : fd_(fd) {}
  SocketFd(SocketFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  SocketFd& operator=(SocketFd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~SocketFd() { reset(); }

  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }
  void reset() noexcept {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  }

 private:
  int fd_ = -1;
};

// TCP_NODELAY: the user-level sockets batch on their own; Nagle would only add delay.
void set_no_delay(int fd);
std::string errno_text(int errno_value);
// The socket's pending error (SO_ERROR: a failed connect, a reset), cleared by reading it;
// 0 when there is none (or it cannot be read).
int take_socket_error(int fd);

}  // namespace netio::posix
