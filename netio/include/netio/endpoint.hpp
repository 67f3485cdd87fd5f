// SPDX-License-Identifier: MIT
/// @file
/// Endpoint strings: where a socket listens or connects.
///
///   tcp://HOST:PORT                      the POSIX TCP back-end
///   fabric://HOST:PORT[?provider=NAME]   the libfabric back-end (FI_EP_MSG)
///   SCHEME://HOST:PORT                   a back-end registered for SCHEME (register_backend)
///
/// The scheme picks the back-end from the registry (netio/backend/registry.hpp): parse()
/// accepts every scheme registered when it is called, built-in or not, including a built-in
/// one this netio was built without (fabric without libfabric), which fails with its reason
/// when a socket uses it.
/// HOST is an IPv4 address, an IPv6 address in brackets ([::1]) or a host name. PORT 0 on a
/// listening socket means "pick a free port"; the socket reports the port it bound.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace netio {

struct Endpoint {
  std::string scheme = "tcp";  ///< the back-end's name in the registry: "tcp", "fabric", ...
  std::string host;
  std::uint16_t port = 0;
  /// The query (?KEY=VALUE&...): options of the scheme's back-end, keys as it registered
  /// them (e.g. fabric's provider), each with a non-empty value.
  std::map<std::string, std::string, std::less<>> options;

  /// Throws netio::Error(Errc::malformed_endpoint) naming the string and what is wrong (an
  /// unregistered scheme: naming the registered ones).
  static Endpoint parse(std::string_view text);

  /// The value of option `key`, empty when the endpoint does not set it.
  std::string option(std::string_view key) const;

  /// SCHEME://HOST:PORT, the options after '?' in key order.
  std::string to_string() const;
  Endpoint with_port(std::uint16_t new_port) const;
  Endpoint with_host(std::string new_host) const;

  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

}  // namespace netio
