// SPDX-License-Identifier: MIT
// The libfabric back-end (fabric:// endpoints): reliable connected endpoints (FI_EP_MSG)
// on any provider that offers them: verbs on InfiniBand, tcp and sockets anywhere.
// See backends/fabric/README.md for provider selection, memory registration and waiting.
#pragma once

#include "netio/backend/backend.hpp"
#include "netio/backend/event_loop.hpp"

#include <memory>

namespace netio::fabric {

// Called on the loop thread. Throws Error(provider_unavailable) when libfabric offers no
// provider with FI_EP_MSG at all.
std::unique_ptr<netio::Backend> make_backend(netio::EventLoop& loop);

}  // namespace netio::fabric
