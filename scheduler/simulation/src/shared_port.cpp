// SPDX-License-Identifier: MIT
#include "netio/scheduler/simulation/shared_port.hpp"

namespace netio::scheduler::simulation {

std::string_view to_string(PortSharing sharing) noexcept { return sharing == PortSharing::fifo ? "fifo" : "fair"; }

}  // namespace netio::scheduler::simulation
