// SPDX-License-Identifier: MIT
#include "netio/endpoint.hpp"

#include "netio/backend/registry.hpp"
#include "netio/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>

namespace netio {
namespace {

[[noreturn]] void malformed(std::string_view text, std::string_view why) {
  throw Error(Errc::malformed_endpoint, fmt::format("malformed endpoint '{}': {}", text, why));
}

std::uint16_t parse_port(std::string_view text, std::string_view port) {
  if (port.empty()) malformed(text, "missing port after ':'");
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value > 65535) {
    malformed(text, fmt::format("port '{}' is not a number from 0 to 65535", port));
  }
  return static_cast<std::uint16_t>(value);
}

}  // namespace

Endpoint Endpoint::parse(std::string_view text) {
  Endpoint endpoint;
  const auto scheme_end = text.find("://");
  if (scheme_end == std::string_view::npos)
    malformed(text, "expected tcp://HOST:PORT (or SCHEME://HOST:PORT of another registered back-end)");
  const auto scheme = text.substr(0, scheme_end);
  if (scheme.empty()) malformed(text, "missing scheme before '://'");
  if (!backend_registered(scheme)) {
    malformed(text, fmt::format("unknown scheme '{}' (registered: {})", scheme,
                                fmt::join(registered_backend_schemes(), ", ")));
  }
  endpoint.scheme = std::string(scheme);

  auto rest = text.substr(scheme_end + 3);
  std::string_view query;
  if (const auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }

  std::string_view host;
  std::string_view port;
  if (!rest.empty() && rest.front() == '[') {
    const auto close = rest.find(']');
    if (close == std::string_view::npos) malformed(text, "IPv6 address without closing ']'");
    host = rest.substr(1, close - 1);
    const auto after = rest.substr(close + 1);
    if (after.empty() || after.front() != ':') malformed(text, "missing ':PORT' after the IPv6 address");
    port = after.substr(1);
  } else {
    const auto colon = rest.rfind(':');
    if (colon == std::string_view::npos) malformed(text, "missing ':PORT'");
    host = rest.substr(0, colon);
    if (host.find(':') != std::string_view::npos)
      malformed(text, "IPv6 addresses must be written in brackets, e.g. [::1]:5000");
    port = rest.substr(colon + 1);
  }
  // How the scheme's back-end writes its endpoints: what the field before ':PORT' is called
  // (shm://NAME:PORT), which options it takes.
  const EndpointForm form = endpoint_form(scheme);
  const std::string_view field = form.host_field;
  if (host.empty()) malformed(text, fmt::format("missing {}", field));
  if (host.find_first_of(" /\t") != std::string_view::npos) {
    malformed(text, fmt::format("invalid {} '{}': no spaces, tabs or '/'", field, host));
  }
  endpoint.host = std::string(host);
  endpoint.port = parse_port(text, port);

  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const auto eq = item.find('=');
    const auto key = item.substr(0, eq);
    const auto value = eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
    if (std::find(form.options.begin(), form.options.end(), key) == form.options.end()) {
      malformed(text, fmt::format("unknown option '{}' for {}://", key, scheme));
    }
    if (value.empty()) malformed(text, fmt::format("empty {} (write {}=VALUE)", key, key));
    endpoint.options.insert_or_assign(std::string(key), std::string(value));
  }
  return endpoint;
}

std::string Endpoint::to_string() const {
  const bool ipv6 = host.find(':') != std::string::npos;
  std::string text =
      ipv6 ? fmt::format("{}://[{}]:{}", scheme, host, port) : fmt::format("{}://{}:{}", scheme, host, port);
  char separator = '?';
  for (const auto& [key, value] : options) {
    text += fmt::format("{}{}={}", separator, key, value);
    separator = '&';
  }
  return text;
}

std::string Endpoint::option(std::string_view key) const {
  const auto it = options.find(key);
  return it == options.end() ? std::string() : it->second;
}

Endpoint Endpoint::with_port(std::uint16_t new_port) const {
  Endpoint copy = *this;
  copy.port = new_port;
  return copy;
}

Endpoint Endpoint::with_host(std::string new_host) const {
  Endpoint copy = *this;
  copy.host = std::move(new_host);
  return copy;
}

}  // namespace netio
