// SPDX-License-Identifier: MIT
// Whether a sender that went away has also gone quiet. What it sent before leaving may still
// be on its way: pages in a receive queue, bytes in a data connection read after its control
// connection's end, a slow link. A sender that ends its streams and leaves at once must not
// look cut short, so the receiver keeps reading until nothing more comes for a grace period.
// Not thread-safe: one supervising thread per watch.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>

namespace netio::tools {

class GoneWatch {
 public:
  using Clock = std::chrono::steady_clock;

  // messages: what has come from the sender so far; gone_at: when it went away. True once
  // nothing more came for `grace` since then or since the last message that did.
  bool quiet(std::uint64_t messages, Clock::time_point gone_at, Clock::time_point now, std::chrono::nanoseconds grace) {
    if (!since_ || messages != messages_) {
      messages_ = messages;
      since_ = std::max(now, gone_at);
    }
    return now - *since_ >= grace;
  }

 private:
  std::uint64_t messages_ = 0;
  std::optional<Clock::time_point> since_;
};

}  // namespace netio::tools
