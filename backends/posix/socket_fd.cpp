// SPDX-License-Identifier: MIT
#include "backends/posix/socket_fd.hpp"

#include "netio/error.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace netio::posix {

void set_no_delay(int fd) {
  const int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
    throw system_error(errno, "setsockopt(TCP_NODELAY) failed");
  }
}

std::string errno_text(int errno_value) { return std::strerror(errno_value); }

int take_socket_error(int fd) {
  int error_number = 0;
  socklen_t length = sizeof error_number;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error_number, &length) != 0) return 0;
  return error_number;
}

}  // namespace netio::posix
