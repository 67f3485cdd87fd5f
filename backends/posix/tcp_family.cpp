// SPDX-License-Identifier: MIT
// tcp://: the stream family of the POSIX TCP back-end.
#include "backends/posix/stream_family.hpp"

#include "netio/error.hpp"

#include <fmt/format.h>

#include <sys/socket.h>

#include <cerrno>

namespace netio::posix {
namespace {

class TcpFamily final : public StreamFamily {
 public:
  std::vector<detail::SocketAddress> connect_addresses(const Endpoint& remote) const override {
    return detail::resolve_all(remote, false);
  }

  SocketFd listen_on(const Endpoint& local, Endpoint& bound) const override {
    const auto address = detail::resolve(local, true);
    SocketFd fd(::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) throw system_error(errno, fmt::format("{}: socket() failed", local.to_string()));
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), address.get(), address.length) != 0) {
      throw system_error(errno, fmt::format("cannot bind {}", local.to_string()));
    }
    if (::listen(fd.get(), SOMAXCONN) != 0)
      throw system_error(errno, fmt::format("cannot listen on {}", local.to_string()));
    detail::SocketAddress actual;
    actual.length = sizeof actual.storage;
    ::getsockname(fd.get(), actual.get(), &actual.length);
    bound = detail::to_endpoint(actual, local);
    bound.host = local.host;  // keep the name the user gave; only the port may have changed
    return fd;
  }

  void prepare(int fd) const override { set_no_delay(fd); }

  Admission admit(int, const detail::SocketAddress& address, const Endpoint& local) const override {
    return {detail::to_endpoint(address, local), {}};
  }

  std::string check_listener(int, const Endpoint&) const override { return {}; }

  bool peek_reads() const noexcept override { return true; }
};

}  // namespace

std::shared_ptr<const StreamFamily> tcp_family() {
  static const auto family = std::make_shared<const TcpFamily>();
  return family;
}

}  // namespace netio::posix
