// Optional notifications a receive socket gives about its peers. Both run on the
// event-loop thread; keep them short and do not destroy the socket from them.
#pragma once

#include "netio/endpoint.hpp"
#include "netio/error.hpp"

#include <functional>

namespace netio {

struct ConnectionEvents {
  // A sender connected (after its handshake was accepted).
  std::function<void(const Endpoint& peer)> on_connected;
  // A sender went away: Errc::disconnected when it closed or vanished, Errc::protocol_error
  // when it was dropped for breaking the protocol (the error says how).
  std::function<void(const Endpoint& peer, const Error& why)> on_disconnected;
};

}  // namespace netio
