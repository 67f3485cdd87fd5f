// SPDX-License-Identifier: MIT
/// @file
/// A message a high-throughput subscription received: its tag, its payload and the publisher
/// it came from. Move-only (as Message); keeps the page it lies in alive (zero copy) until
/// destroyed.
#pragma once

#include "netio/message.hpp"
#include "netio/peer.hpp"
#include "netio/pubsub/subscription.hpp"

#include <cstddef>
#include <span>

namespace netio::pubsub {

class Publication {
 public:
  Publication(Tag tag, Message message, std::size_t header_size)
      : tag_(tag), message_(std::move(message)), header_size_(header_size) {}

  Tag tag() const noexcept { return tag_; }
  std::span<const std::byte> data() const noexcept { return message_.bytes().subspan(header_size_); }
  std::size_t size() const noexcept { return message_.size() - header_size_; }
  /// The publisher's data connection: identity() is its PublishOptions::identity (by default
  /// its name is "HOST:PID" and its endpoint the endpoint it publishes on).
  Peer publisher() const { return message_.peer(); }

 private:
  Tag tag_;
  Message message_;
  std::size_t header_size_;
};

}  // namespace netio::pubsub
