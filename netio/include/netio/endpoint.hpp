// SPDX-License-Identifier: MIT
// Endpoint strings: where a socket listens or connects.
//
//   tcp://HOST:PORT                      the POSIX TCP back-end
//   fabric://HOST:PORT[?provider=NAME]   the libfabric back-end (FI_EP_MSG)
//
// HOST is an IPv4 address, an IPv6 address in brackets ([::1]) or a host name. PORT 0 on a
// listening socket means "pick a free port"; the socket reports the port it bound.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace netio {

enum class Transport { tcp, fabric };

struct Endpoint {
  Transport transport = Transport::tcp;
  std::string host;
  std::uint16_t port = 0;
  std::string provider;  // fabric only; empty: NETIO_FABRIC_PROVIDER, else libfabric's choice

  // Throws netio::Error(Errc::malformed_endpoint) naming the string and what is wrong.
  static Endpoint parse(std::string_view text);

  std::string to_string() const;
  // The scheme the endpoint was written with: picks its back-end from the registry.
  std::string_view scheme() const noexcept;
  Endpoint with_port(std::uint16_t new_port) const;
  Endpoint with_host(std::string new_host) const;

  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

std::string_view to_string(Transport transport) noexcept;

}  // namespace netio
