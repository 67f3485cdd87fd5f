// The libfabric back-end (fabric:// endpoints), FI_EP_MSG.
#pragma once

#include "netio/backend.hpp"
#include "netio/event_loop.hpp"

#include <memory>

namespace netio::fabric {

std::unique_ptr<netio::Backend> make_backend(netio::EventLoop& loop);

}  // namespace netio::fabric
