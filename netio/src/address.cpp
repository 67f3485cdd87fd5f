// SPDX-License-Identifier: MIT
#include "address.hpp"

#include "netio/error.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace netio::detail {

std::string SocketAddress::host() const {
  char text[INET6_ADDRSTRLEN] = {};
  if (family() == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, text, sizeof text);
  } else if (family() == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, text, sizeof text);
  }
  return text;
}

std::uint16_t SocketAddress::port() const noexcept {
  if (family() == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  return 0;
}

SocketAddress resolve(const Endpoint& endpoint, bool passive) { return resolve_all(endpoint, passive).front(); }

std::vector<SocketAddress> resolve_all(const Endpoint& endpoint, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* found = nullptr;
  const auto service = std::to_string(endpoint.port);
  const int rc = ::getaddrinfo(endpoint.host.c_str(), service.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    throw Error(Errc::resolve_failed, fmt::format("{}: cannot resolve host '{}': {}", endpoint.to_string(),
                                                  endpoint.host, ::gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(found, &::freeaddrinfo);
  std::vector<SocketAddress> addresses;
  for (const addrinfo* entry = found; entry != nullptr; entry = entry->ai_next) {
    if (entry->ai_addr == nullptr || entry->ai_addrlen > sizeof(sockaddr_storage)) continue;
    SocketAddress address;
    std::memcpy(&address.storage, entry->ai_addr, entry->ai_addrlen);
    address.length = entry->ai_addrlen;
    const bool seen = std::any_of(addresses.begin(), addresses.end(), [&](const SocketAddress& a) {
      return a.length == address.length && std::memcmp(&a.storage, &address.storage, a.length) == 0;
    });
    if (!seen) addresses.push_back(address);
  }
  if (addresses.empty()) {
    throw Error(Errc::resolve_failed,
                fmt::format("{}: host '{}' resolved to no usable address", endpoint.to_string(), endpoint.host));
  }
  return addresses;
}

std::string to_string(const SocketAddress& address) {
  return address.family() == AF_INET6 ? fmt::format("[{}]:{}", address.host(), address.port())
                                      : fmt::format("{}:{}", address.host(), address.port());
}

Endpoint to_endpoint(const SocketAddress& address, const Endpoint& like) {
  Endpoint result = like;
  result.host = address.host();
  result.port = address.port();
  return result;
}

}  // namespace netio::detail
