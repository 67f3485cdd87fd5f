// SPDX-License-Identifier: MIT
/// @file
/// How a sender with a connection limit picks the connection to tear down when opening one
/// more would exceed the limit: LRU, and LRU-M of the Advanced Connection Tear-down Schemes
/// (ACTS) for Global Arrays/ARMCI.
#pragma once

#include <string_view>

namespace netio {

enum class ConnectionPolicy {
  /// Least recently used: the open connection whose last message is the oldest.
  lru,
  /// LRU-M: one LRU queue per number of earlier tear-downs of the peer; the victim is the
  /// least recently used connection of the peers torn down the fewest times. A peer that
  /// keeps coming back after being torn down is kept open longer than one met once.
  lru_m,
};

/// "lru" or "lru-m".
std::string_view to_string(ConnectionPolicy policy) noexcept;
/// Parses "lru" or "lru-m" (also "lru_m"); throws netio::Error(Errc::invalid_option)
/// naming the text.
ConnectionPolicy parse_connection_policy(std::string_view text);

}  // namespace netio
