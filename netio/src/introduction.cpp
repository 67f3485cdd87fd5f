// SPDX-License-Identifier: MIT
#include "introduction.hpp"

#include "netio/error.hpp"
#include "netio/internal/little_endian.hpp"
#include "netio/printable.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <array>
#include <cstring>

namespace netio::detail {

const std::string& default_name() {
  static const std::string name = [] {
    std::array<char, 256> host{};
    if (::gethostname(host.data(), host.size() - 1) != 0) std::strcpy(host.data(), "unknown-host");
    return fmt::format("{}:{}", host.data(), ::getpid());
  }();
  return name;
}

std::string identity_violation(std::string_view name, std::string_view endpoint) {
  if (name.empty()) return "its name is empty";
  if (name.size() > max_name_size) {
    return fmt::format("its name is {} bytes long, beyond the {} a name may have", name.size(), max_name_size);
  }
  if (!is_printable_utf8(name)) {
    return fmt::format("its name '{}' is not printable UTF-8 (control characters or invalid bytes)", printable(name));
  }
  if (!is_printable_utf8(endpoint)) return fmt::format("its endpoint '{}' is not printable", printable(endpoint));
  const std::size_t size = 4 + 1 + name.size() + 2 + endpoint.size();
  if (size > max_introduction_size) {
    return fmt::format("its introduction is {} bytes long (a {}-byte endpoint), beyond the {} an introduction may have",
                       size, endpoint.size(), max_introduction_size);
  }
  return {};
}

std::vector<std::byte> encode_introduction(const Identity& identity) {
  const std::string& name = identity.name.empty() ? default_name() : identity.name;
  const std::string endpoint = identity.endpoint ? identity.endpoint->to_string() : std::string();
  if (const std::string why = identity_violation(name, endpoint); !why.empty()) {
    throw Error(name.size() > max_name_size || endpoint.size() > max_introduction_size ? Errc::message_too_large
                                                                                       : Errc::invalid_option,
                fmt::format("the send socket's identity cannot be declared: {}", why));
  }
  const std::size_t size = 4 + 1 + name.size() + 2 + endpoint.size();
  std::vector<std::byte> bytes(size);
  std::byte* out = bytes.data();
  store_le<std::uint32_t>(out, introduction_magic);
  out[4] = static_cast<std::byte>(name.size());
  std::memcpy(out + 5, name.data(), name.size());
  out += 5 + name.size();
  store_le<std::uint16_t>(out, static_cast<std::uint16_t>(endpoint.size()));
  std::memcpy(out + 2, endpoint.data(), endpoint.size());
  return bytes;
}

Identity decode_introduction(std::span<const std::byte> bytes) {
  if (bytes.size() > max_introduction_size) {
    throw Error(Errc::protocol_error, fmt::format("the introduction is {} bytes long, beyond the {} it may have",
                                                  bytes.size(), max_introduction_size));
  }
  if (bytes.size() < 7 || load_le<std::uint32_t>(bytes.data()) != introduction_magic) {
    throw Error(Errc::protocol_error, "the connection did not start with an introduction (not a netio sender?)");
  }
  const std::size_t name_size = static_cast<std::uint8_t>(bytes[4]);
  if (bytes.size() < 5 + name_size + 2) {
    throw Error(Errc::protocol_error, "the introduction is cut short in its name");
  }
  Identity identity;
  identity.name.assign(reinterpret_cast<const char*>(bytes.data() + 5), name_size);
  const std::byte* rest = bytes.data() + 5 + name_size;
  const std::size_t endpoint_size = load_le<std::uint16_t>(rest);
  if (bytes.size() != 5 + name_size + 2 + endpoint_size) {
    throw Error(Errc::protocol_error, fmt::format("the introduction is {} bytes long, but its fields add up to {}",
                                                  bytes.size(), 5 + name_size + 2 + endpoint_size));
  }
  const std::string_view text(reinterpret_cast<const char*>(rest + 2), endpoint_size);
  if (const std::string why = identity_violation(identity.name, text); !why.empty()) {
    throw Error(Errc::protocol_error, fmt::format("the introduction is refused: {}", why));
  }
  if (endpoint_size != 0) {
    try {
      identity.endpoint = Endpoint::parse(text);
    } catch (const Error& e) {
      throw Error(Errc::protocol_error, fmt::format("the introduction declares a malformed endpoint: {}", e.what()));
    }
  }
  return identity;
}

}  // namespace netio::detail
