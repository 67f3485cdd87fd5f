// SPDX-License-Identifier: MIT
#include "backends/shm/unix_family.hpp"

#include "backends/shm/shm_receive_socket.hpp"
#include "netio/error.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>

namespace netio::shm {
namespace {

constexpr std::size_t max_name_size = 64;
constexpr std::string_view name_prefix = "netio-shm/";

bool name_character(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

ucred credentials_of(int fd) {
  ucred peer{};
  socklen_t length = sizeof peer;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0) {
    throw system_error(errno, "getsockopt(SO_PEERCRED) failed");
  }
  return peer;
}

}  // namespace

detail::SocketAddress abstract_address(const Endpoint& endpoint) {
  const auto& name = endpoint.host;
  if (name.empty() || name.size() > max_name_size || !std::all_of(name.begin(), name.end(), name_character)) {
    throw Error(Errc::resolve_failed,
                fmt::format("{}: '{}' is not a shm:// name (1 to {} letters, digits, '.', '-' or '_')",
                            endpoint.to_string(), name, max_name_size));
  }
  const auto path = fmt::format("{}{}:{}", name_prefix, name, endpoint.port);
  detail::SocketAddress address;
  auto* unix_address = reinterpret_cast<sockaddr_un*>(&address.storage);
  unix_address->sun_family = AF_UNIX;
  // Abstract: a leading NUL, and the name's exact length (no terminator), so no file exists.
  std::memcpy(unix_address->sun_path + 1, path.data(), path.size());
  address.length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + path.size());
  return address;
}

std::string distrust(const ucred& peer, const ShmPeers& peers) {
  if (peer.uid == ::geteuid()) return {};
  if (std::find(peers.users.begin(), peers.users.end(), peer.uid) != peers.users.end()) return {};
  if (std::find(peers.groups.begin(), peers.groups.end(), peer.gid) != peers.groups.end()) return {};
  return fmt::format(
      "process {} runs as user {} (group {}), which is neither this process's user ({}) nor "
      "trusted (netio::ShmPeers)",
      peer.pid, peer.uid, peer.gid, ::geteuid());
}

std::vector<detail::SocketAddress> UnixFamily::connect_addresses(const Endpoint& remote) const {
  return {abstract_address(remote)};
}

posix::SocketFd UnixFamily::listen_on(const Endpoint& local, Endpoint& bound) const {
  posix::SocketFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) throw system_error(errno, fmt::format("{}: socket() failed", local.to_string()));
  bound = local;
  // The unspecified host: the process's own name, under which its connections reach their
  // listeners (admit()). A pub/sub subscriber listens so, and its publisher connects to it
  // at the host its subscription came from, as over TCP.
  if (local.host == "0.0.0.0" || local.host == "::") bound.host = fmt::format("pid{}", ::getpid());
  if (bound.port != 0) {
    const auto address = abstract_address(bound);
    if (::bind(fd.get(), address.get(), address.length) != 0) {
      throw system_error(errno, fmt::format("cannot bind {}", bound.to_string()));
    }
  } else {
    // Port 0: the first free port from a start that differs between processes and calls,
    // so that concurrent listeners seldom try the same ones.
    const auto ticks = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    const auto start = static_cast<std::uint32_t>((ticks ^ (static_cast<std::uint64_t>(::getpid()) << 20)) % 65535);
    int error_number = EADDRINUSE;
    for (std::uint32_t i = 0; i < 65535 && error_number == EADDRINUSE; ++i) {
      bound.port = static_cast<std::uint16_t>((start + i) % 65535 + 1);
      const auto address = abstract_address(bound);
      error_number = ::bind(fd.get(), address.get(), address.length) == 0 ? 0 : errno;
    }
    if (error_number != 0) {
      throw system_error(error_number, fmt::format("cannot bind {} (any free port)", local.to_string()));
    }
  }
  if (::listen(fd.get(), SOMAXCONN) != 0)
    throw system_error(errno, fmt::format("cannot listen on {}", bound.to_string()));
  return fd;
}

posix::StreamFamily::Admission UnixFamily::admit(int fd, const detail::SocketAddress&, const Endpoint& local) const {
  Admission admission;
  ucred peer{};
  try {
    peer = credentials_of(fd);
  } catch (const Error& e) {
    admission.refusal = e.what();
    return admission;
  }
  admission.refusal = distrust(peer, peers_);
  admission.peer = local;
  admission.peer.host = fmt::format("pid{}", peer.pid);
  admission.peer.port = next_peer_.fetch_add(1, std::memory_order_relaxed);
  return admission;
}

std::string UnixFamily::check_listener(int fd, const Endpoint&) const {
  try {
    auto why = distrust(credentials_of(fd), peers_);
    return why.empty() ? why : fmt::format("the listener's {}", why);
  } catch (const Error& e) {
    return e.what();
  }
}

std::unique_ptr<LowLevelReceiveSocket> UnixFamily::make_receive_socket(EventLoop& loop, posix::SocketFd fd,
                                                                       const Endpoint& local, const Endpoint& peer,
                                                                       std::size_t max_buffer_size, std::size_t credits,
                                                                       std::size_t max_reply_size,
                                                                       std::chrono::nanoseconds) const {
  // No progress timeout: an entry is published whole, never half written.
  return std::make_unique<ShmReceiveSocket>(loop, std::move(fd), local, peer, max_buffer_size, credits, max_reply_size);
}

}  // namespace netio::shm
