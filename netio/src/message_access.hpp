// SPDX-License-Identifier: MIT
// The receive sockets' way to make a Message that points at its Peer without a reference
// count of its own (the Message constructor applications do not see).
#pragma once

#include "netio/message.hpp"

#include <memory>
#include <span>

namespace netio::detail {

struct MessageAccess {
  /// A view kept valid by `keep_alive`, which also keeps `*peer` alive.
  static Message make(std::span<const std::byte> view, std::shared_ptr<const void> keep_alive, const Peer* peer) {
    return Message(view, std::move(keep_alive), peer);
  }
};

}  // namespace netio::detail
