// SPDX-License-Identifier: MIT
/// @file
/// The node-local back-end, `shm://NAME:PORT`: connections between processes of one host,
/// set up over abstract Unix-domain sockets, the data and replies through a memory segment
/// shared by the two processes (an anonymous memfd per connection: the receiver reads a
/// buffer in place; a high-throughput page, written into the sender's send area, is never
/// copied, other buffers are copied in once). No file is ever created: the name
/// and the segment vanish with the last descriptor, whichever way the process ends. NAME is a service name (letters,
/// digits, '.', '-', '_'; at most 64 characters), PORT tells its listeners apart; a listener
/// on port 0 picks a free one and reports it (LowLevelListenSocket::local_endpoint()). A
/// listener on the unspecified host (0.0.0.0 or ::) is named after its process,
/// shm://pidPID:PORT, which is also the name a listener sees that process's connections
/// come from (Peer::address(), with a number for PORT that tells them apart).
///
/// Security: both sides check the other's credentials (SO_PEERCRED) before anything is
/// exchanged. By default only processes of the same effective user are admitted, as
/// listener and as connector: abstract names are open to every user of the network
/// namespace, so a connector also refuses a listener of another user that took the name
/// first. A listener refuses a peer with a reject that names its user; the peer's
/// connect fails with Errc::handshake_rejected. ShmPeers widens who is trusted.
///
/// Built in under the scheme "shm" with the default ShmPeers; an application that trusts
/// more users registers its own factory (register_backend("shm", shm_backend_factory(peers)))
/// before its Contexts first use the scheme.
#pragma once

#include "netio/backend/registry.hpp"

#include <cstdint>
#include <vector>

namespace netio {

/// Whom a shm:// socket trusts besides processes of its own effective user id.
struct ShmPeers {
  std::vector<std::uint32_t> users;   ///< more user ids trusted
  std::vector<std::uint32_t> groups;  ///< a process whose effective group id is one of these is trusted
};

/// A factory for the shm back-end trusting `peers` (see register_backend()).
BackendFactory shm_backend_factory(ShmPeers peers = {});

}  // namespace netio
