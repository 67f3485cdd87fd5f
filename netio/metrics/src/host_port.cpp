// SPDX-License-Identifier: MIT
#include "host_port.hpp"

#include "netio/error.hpp"

#include <fmt/format.h>

#include <charconv>

namespace netio::metrics_detail {

std::string HostPort::to_string() const {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

HostPort parse_host_port(std::string_view text, std::string_view what) {
  auto bad = [&](std::string_view why) {
    return Error(Errc::invalid_option,
                 fmt::format("{} '{}': {} (expected HOST:PORT, e.g. 127.0.0.1:9464)", what, text, why));
  };
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) throw bad("no port");
  std::string_view host = text.substr(0, colon);
  const std::string_view port = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  else if (host.find(':') != std::string_view::npos)
    throw bad("an IPv6 address needs brackets");
  if (host.empty()) throw bad("no host");
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || value > 65535) throw bad("bad port");
  return {std::string(host), static_cast<std::uint16_t>(value)};
}

Addresses resolve(const HostPort& address, int socktype, std::string_view what) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = socktype;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* list = nullptr;
  const std::string port = std::to_string(address.port);
  if (const int rc = getaddrinfo(address.host.c_str(), port.c_str(), &hints, &list); rc != 0)
    throw Error(Errc::resolve_failed, fmt::format("{} {}: {}", what, address.to_string(), gai_strerror(rc)));
  return Addresses(list);
}

}  // namespace netio::metrics_detail
