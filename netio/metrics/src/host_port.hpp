// SPDX-License-Identifier: MIT
// host:port as the metrics options give it ("127.0.0.1:9464", "[::1]:9464", "node1:8089"),
// parsed and resolved with getaddrinfo.
#pragma once

#include <netdb.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace netio::metrics_detail {

struct HostPort {
  std::string host;  ///< without brackets
  std::uint16_t port = 0;
  std::string to_string() const;  ///< with brackets around an IPv6 address
};

/// Throws netio::Error(Errc::invalid_option) naming `what` and `text` when it does not parse.
HostPort parse_host_port(std::string_view text, std::string_view what);

struct AddrinfoDeleter {
  void operator()(addrinfo* list) const noexcept { freeaddrinfo(list); }
};
using Addresses = std::unique_ptr<addrinfo, AddrinfoDeleter>;

/// Resolves for `socktype` (SOCK_STREAM, SOCK_DGRAM); throws Errc::resolve_failed naming `what`.
Addresses resolve(const HostPort& address, int socktype, std::string_view what);

}  // namespace netio::metrics_detail
