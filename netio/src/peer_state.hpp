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
};

// A connection id unique in the process.
ConnectionId next_connection_id() noexcept;

}  // namespace netio::detail
