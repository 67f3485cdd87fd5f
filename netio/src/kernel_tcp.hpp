// SPDX-License-Identifier: MIT
// What the Linux TCP stack prefers, for every back-end whose bytes go through it (POSIX
// sockets, libfabric's tcp and sockets providers).
#pragma once

#include <cstddef>

namespace netio::detail {

// Bytes per sendmsg(). Inside one call Linux's TCP stops after every 16 new skbs to process
// the ACKs parked in the socket's backlog meanwhile (tcp_sendmsg_locked, sk_flush_backlog),
// which also transmits and delivers what the call queued so far. An skb carries one GSO
// segment, just under 64 KiB on loopback and TSO NICs, so a 1 MiB page and its header
// crossed that point in every call, and on loopback that pass cost the sender a fifth of its
// CPU (docs/design/defaults.md). Calls of 3/4 of it stay clear and cost one more syscall per page.
inline constexpr std::size_t kernel_tcp_write_limit = 768 * 1024;

}  // namespace netio::detail
