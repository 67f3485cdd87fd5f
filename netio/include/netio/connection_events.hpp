// SPDX-License-Identifier: MIT
/// @file
/// Optional notifications a receive socket gives about its peers. Both run on the
/// event-loop thread; keep them short.
#pragma once

#include "netio/error.hpp"
#include "netio/peer.hpp"

#include <functional>

namespace netio {

struct ConnectionEvents {
  /// A sender connected: its handshake was accepted and it introduced itself (Peer: its
  /// connection id, address and declared identity; it can be answered at once).
  std::function<void(const Peer& peer)> on_connected;
  /// A sender went away: Errc::disconnected when it closed or vanished, Errc::protocol_error
  /// when it was dropped for breaking the protocol (the error says how). Only for senders
  /// that on_connected reported.
  std::function<void(const Peer& peer, const Error& why)> on_disconnected;
};

}  // namespace netio
