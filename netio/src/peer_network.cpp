// SPDX-License-Identifier: MIT
#include "netio/error.hpp"
#include "netio/socket_options.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>

#include <charconv>
#include <cstring>

namespace netio {

namespace {

struct NumericAddress {
  bool ipv6 = false;
  std::array<std::uint8_t, 16> bytes{};
};

// A numeric IPv4 or IPv6 address (brackets allowed around IPv6); an IPv4-mapped IPv6
// address comes back as the IPv4 address it maps.
std::optional<NumericAddress> parse_address(std::string_view text) {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') text = text.substr(1, text.size() - 2);
  if (text.empty() || text.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  char buffer[INET6_ADDRSTRLEN] = {};
  std::memcpy(buffer, text.data(), text.size());
  NumericAddress address;
  if (::inet_pton(AF_INET, buffer, address.bytes.data()) == 1) return address;
  if (::inet_pton(AF_INET6, buffer, address.bytes.data()) != 1) return std::nullopt;
  static constexpr std::uint8_t mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(address.bytes.data(), mapped_prefix, sizeof mapped_prefix) == 0) {
    std::memmove(address.bytes.data(), address.bytes.data() + 12, 4);
    std::memset(address.bytes.data() + 4, 0, 12);
    return address;
  }
  address.ipv6 = true;
  return address;
}

bool same_prefix(const std::array<std::uint8_t, 16>& a, const std::array<std::uint8_t, 16>& b, unsigned bits) {
  const unsigned whole = bits / 8;
  if (std::memcmp(a.data(), b.data(), whole) != 0) return false;
  const unsigned rest = bits % 8;
  if (rest == 0) return true;
  const auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
  return (a[whole] & mask) == (b[whole] & mask);
}

}  // namespace

PeerNetwork PeerNetwork::parse(std::string_view cidr) {
  const auto fail = [cidr](std::string_view why) {
    return Error(Errc::invalid_option, fmt::format("'{}' is not a network: {} (expected ADDRESS or ADDRESS/PREFIX, "
                                                   "e.g. 10.0.0.0/8 or fd00::/8)",
                                                   cidr, why));
  };
  const auto slash = cidr.find('/');
  const auto address_text = cidr.substr(0, slash);
  const auto address = parse_address(address_text);
  if (!address) throw fail(fmt::format("'{}' is not a numeric IPv4 or IPv6 address", address_text));
  PeerNetwork network;
  network.ipv6_ = address->ipv6;
  network.bytes_ = address->bytes;
  const unsigned max_prefix = address->ipv6 ? 128 : 32;
  network.prefix_ = max_prefix;
  if (slash != std::string_view::npos) {
    const auto prefix_text = cidr.substr(slash + 1);
    unsigned prefix = 0;
    const auto [end, error] = std::from_chars(prefix_text.data(), prefix_text.data() + prefix_text.size(), prefix);
    if (prefix_text.empty() || error != std::errc() || end != prefix_text.data() + prefix_text.size()) {
      throw fail(fmt::format("the prefix length '{}' is not a number", prefix_text));
    }
    if (prefix > max_prefix) throw fail(fmt::format("the prefix length {} exceeds {}", prefix, max_prefix));
    network.prefix_ = prefix;
  }
  // Host bits set below the prefix are a typo more often than not, but harmless: clear them.
  std::array<std::uint8_t, 16> masked{};
  for (unsigned bit = 0; bit < network.prefix_; ++bit) masked[bit / 8] |= network.bytes_[bit / 8] & (0x80 >> (bit % 8));
  network.bytes_ = masked;
  return network;
}

bool PeerNetwork::contains(std::string_view address_text) const noexcept {
  const auto address = parse_address(address_text);
  if (!address || address->ipv6 != ipv6_) return false;
  return same_prefix(address->bytes, bytes_, prefix_);
}

std::string PeerNetwork::to_string() const {
  char buffer[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(ipv6_ ? AF_INET6 : AF_INET, bytes_.data(), buffer, sizeof buffer);
  return fmt::format("{}/{}", buffer, prefix_);
}

std::vector<PeerNetwork> parse_peer_networks(std::string_view list) {
  const auto whole = list;
  std::vector<PeerNetwork> networks;
  while (true) {
    const auto comma = list.find(',');
    auto item = list.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty()) {
      throw Error(Errc::invalid_option, fmt::format("'{}': an empty entry in a list of networks", whole));
    }
    networks.push_back(PeerNetwork::parse(item));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return networks;
}

}  // namespace netio
