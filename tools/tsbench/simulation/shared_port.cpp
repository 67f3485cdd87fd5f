// SPDX-License-Identifier: MIT
#include "tsbench/simulation/shared_port.hpp"

namespace netio::tools::tsbench::simulation {

const char* to_string(PortSharing sharing) noexcept { return sharing == PortSharing::fifo ? "fifo" : "fair"; }

}  // namespace netio::tools::tsbench::simulation
