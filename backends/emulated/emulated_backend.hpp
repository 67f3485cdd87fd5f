// SPDX-License-Identifier: MIT
// The emulated back-end: a decorator over any Backend whose send sockets delay and
// rate-limit what they hand to the real back-end, and whose receive sockets hand received
// buffers up at the node's incoming capacity. See netio/emulation.hpp.
#pragma once

#include "backends/emulated/network_state.hpp"
#include "netio/backend/backend.hpp"

#include <memory>

namespace netio::emulated {

std::unique_ptr<Backend> make_emulated_backend(std::unique_ptr<Backend> inner, std::shared_ptr<NetworkState> state,
                                               EventLoop& loop);

}  // namespace netio::emulated
