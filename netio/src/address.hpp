// SPDX-License-Identifier: MIT
// Socket addresses for endpoints: shared by every back-end (all address by IP and port).
#pragma once

#include "netio/endpoint.hpp"

#include <sys/socket.h>

#include <string>
#include <vector>

namespace netio::detail {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  const sockaddr* get() const noexcept { return reinterpret_cast<const sockaddr*>(&storage); }
  sockaddr* get() noexcept { return reinterpret_cast<sockaddr*>(&storage); }
  int family() const noexcept { return storage.ss_family; }
  std::string host() const;  // numeric, IPv6 without brackets
  std::uint16_t port() const noexcept;
};

// Resolves the endpoint's host (numeric or a name) to its first address.
// Throws netio::Error(Errc::resolve_failed) naming the endpoint.
SocketAddress resolve(const Endpoint& endpoint, bool passive);
// Every address of the endpoint's host, in getaddrinfo()'s order of preference, each once
// (never empty). A connecting side tries them in turn: a name such as localhost often
// resolves to ::1 first, where a server listening on 0.0.0.0 is not.
// Throws as resolve().
std::vector<SocketAddress> resolve_all(const Endpoint& endpoint, bool passive);

// "127.0.0.1:5000", "[::1]:5000": an address as a user writes it, for messages.
std::string to_string(const SocketAddress& address);

// The endpoint for an address, with the transport (and provider) of `like`.
Endpoint to_endpoint(const SocketAddress& address, const Endpoint& like);

}  // namespace netio::detail
