// SPDX-License-Identifier: MIT
/// @file
/// What publishers and subscribers agree on: tags, the two delivery modes and the
/// back-pressure policies of a subscription.
#pragma once

#include "netio/endpoint.hpp"
#include "netio/peer.hpp"
#include "netio/socket_options.hpp"

#include <cstdint>
#include <string>

namespace netio::pubsub {

/// Every published message carries a 64-bit tag (a detector link, a channel); subscribers
/// receive exactly the tags they subscribed to.
using Tag = std::uint64_t;

/// A subscription's mode: low-latency (a callback on the subscriber's loop thread) or
/// high-throughput (the subscriber takes messages with recv()); netio::to_string names it.
using Mode = SendMode;

/// What the publisher does when a subscriber cannot take a message now (its connection's
/// buffers or its share of the page pool are all in flight).
enum class Backpressure : std::uint8_t {
  publisher_default = 0,  ///< whatever PublishOptions::backpressure says (block unless changed)
  block = 1,              ///< publish() waits (up to send_timeout): nothing is lost
  drop = 2,               ///< the message is dropped for that subscriber only and counted on both sides
};

std::string_view to_string(Backpressure backpressure) noexcept;

/// Who a data connection of a publisher goes to: for try_publish's list of skipped
/// subscribers, and for logs.
struct SubscriberInfo {
  /// The subscriber's control connection into the publisher: who it is, as every remote is
  /// named (Peer::connection() is unique in the process and stable while the subscriber stays).
  Peer peer;
  Identity identity;  ///< what the subscriber declared (its SubscribeOptions::identity; peer.identity())
  Endpoint endpoint;  ///< where its data connection goes
  Mode mode = Mode::high_throughput;
};

}  // namespace netio::pubsub
