// SPDX-License-Identifier: MIT
// When a FabricReceiveSocket tells its sender about re-posted receive buffers.
//
// A credit message costs each side about what a small data message costs (a send that does
// the transmit work, a receive, the provider's signalling), and in a request/response
// exchange it lands on the critical path of the next request. So credits are held back
// until the sender is down to a quarter of its window (at least one buffer): one credit
// message per 3 messages with 4 buffers, per 6 with 8, per 12 with 16. The quarter the
// sender still holds keeps a streaming sender busy while the credit message travels.
// (Announcing half a window at a time cost a busy-polling ping-pong over libfabric tcp
// 12-15 % here; docs/design/defaults.md, "libfabric credits".)
#pragma once

#include <algorithm>
#include <cstdint>

namespace netio::fabric {

// Credits the sender may have left when the receiver announces: a quarter of the window,
// at least one.
constexpr std::uint64_t credit_low_watermark(std::uint64_t window) noexcept {
  return std::max<std::uint64_t>(1, window / 4);
}

// `window`: the receive buffers announced in the accept; `announced`: the running total of
// returned buffers last sent to the sender; `returned`: buffers re-posted so far;
// `received`: data messages received so far. True when there is something to announce and
// the sender, counting what has arrived here, has at most the low watermark left. A sender
// out of credits always gets them back: once its last message has arrived it has 0 left.
constexpr bool should_announce_credits(std::uint64_t window, std::uint64_t announced, std::uint64_t returned,
                                       std::uint64_t received) noexcept {
  if (returned == announced) return false;
  const std::uint64_t sender_left = window + announced - received;
  return sender_left <= credit_low_watermark(window);
}

// Reply credits (a FabricSendSocket returning them to its receiver) follow the same idea, but
// most go back for free in the remote CQ data of the next user buffer: a control message of
// their own is sent only once the replier is down to a quarter of its window, and with a
// window under 4 only once it has none left. The usual request/reply exchange gives a reply
// back after sending the next request from inside on_reply, so that request carries the
// previous round's credit: with two credits or more it needs no control message while
// requests keep coming.
constexpr std::uint64_t reply_credit_low_watermark(std::uint64_t window) noexcept { return window / 4; }

// `announced`: reply credits last sent (in any message); `returned`: replies given back and
// their receives re-posted; `received`: replies received. All running totals.
constexpr bool should_return_reply_credits(std::uint64_t window, std::uint64_t announced, std::uint64_t returned,
                                           std::uint64_t received) noexcept {
  if (returned == announced) return false;
  const std::uint64_t replier_left = window + announced - received;
  return replier_left <= reply_credit_low_watermark(window);
}

}  // namespace netio::fabric
