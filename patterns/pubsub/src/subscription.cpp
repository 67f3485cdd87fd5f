// SPDX-License-Identifier: MIT
#include "netio/pubsub/subscription.hpp"

namespace netio::pubsub {

std::string_view to_string(Backpressure backpressure) noexcept {
  switch (backpressure) {
    case Backpressure::block: return "block";
    case Backpressure::drop: return "drop";
    case Backpressure::publisher_default: break;
  }
  return "publisher's default";
}

}  // namespace netio::pubsub
