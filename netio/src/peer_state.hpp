// SPDX-License-Identifier: MIT
// What a Peer refers to: one accepted connection's id, address, declared identity and its
// reply path. Immutable after construction but for what ReplySender guards itself.
#pragma once

#include "netio/peer.hpp"
#include "reply_sender.hpp"

#include <memory>

namespace netio::detail {

struct PeerState {
  ConnectionId connection = 0;
  Endpoint address;
  Identity identity;
  std::shared_ptr<ReplySender> replies;
  // Reassembly room counted with the connection's receive buffers (its buffer size where
  // the receive socket asked for one: see ReceiveConnections).
  std::size_t reassembly_allowance = 0;
};

// A connection id unique in the process.
ConnectionId next_connection_id() noexcept;

}  // namespace netio::detail
