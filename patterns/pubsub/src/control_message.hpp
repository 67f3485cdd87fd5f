// SPDX-License-Identifier: MIT
// The control messages of publish/subscribe, with explicit encoding and checks.
//
// Subscriber → publisher, on the control connection (a low-latency message):
//   u32 magic "NPSC" | u8 version 2 | u8 kind (1 subscribe, 2 unsubscribe) | u8 mode |
//   u8 back-pressure | u64 request id | u16 tag count (1 … 256) | count × u64 tag |
//   u16 length | data endpoint (≤ 512 bytes)
// One request, one answer: the publisher applies all its tags at once.
// Publisher → subscriber, as replies on that connection:
//   answer:  magic | version | u8 kind 3 | u8 accepted (0/1) | u64 request id |
//            u16 length | reason (≤ 1024 bytes; empty when accepted)
//   drops:   magic | version | u8 kind 4 | u8 mode | u64 tag | u64 messages dropped since the last report
// Data messages (publisher → subscriber, on the data connections): u64 tag | payload.
// All integers little-endian. Decoding throws netio::Error(Errc::protocol_error) saying what
// is wrong; a wrong magic or version says so.
#pragma once

#include "netio/pubsub/subscription.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace netio::pubsub::detail {

inline constexpr std::uint32_t control_magic = 0x4353504E;  // "NPSC" read little-endian
inline constexpr std::uint8_t control_version = 2;
inline constexpr std::size_t max_endpoint_text = 512;
inline constexpr std::size_t max_reason_text = 1024;
inline constexpr std::size_t data_header_size = 8;
inline constexpr std::size_t max_tags_per_request = 256;
// The largest request: fits the publisher's control receive buffers.
inline constexpr std::size_t max_request_size =
    4 + 1 + 1 + 1 + 1 + 8 + 2 + 8 * max_tags_per_request + 2 + max_endpoint_text;

struct SubscriptionRequest {
  bool subscribe = true;  // false: unsubscribe
  Mode mode = Mode::high_throughput;
  Backpressure backpressure = Backpressure::publisher_default;
  std::uint64_t request_id = 0;
  std::vector<Tag> tags;      // 1 … max_tags_per_request
  std::string data_endpoint;  // where the subscriber's receive socket of `mode` listens
};

struct SubscriptionAnswer {
  bool accepted = false;
  std::uint64_t request_id = 0;
  std::string reason;  // why not, when refused
};

struct DropReport {
  Mode mode = Mode::high_throughput;
  Tag tag = 0;
  std::uint64_t dropped = 0;
};

std::vector<std::byte> encode(const SubscriptionRequest& request);
std::vector<std::byte> encode(const SubscriptionAnswer& answer);
std::vector<std::byte> encode(const DropReport& report);

SubscriptionRequest decode_request(std::span<const std::byte> bytes);
std::variant<SubscriptionAnswer, DropReport> decode_reply(std::span<const std::byte> bytes);

// Data messages: the tag in front of the payload.
void write_data_header(std::byte* out, Tag tag) noexcept;
// The tag, or nullopt for a message shorter than the header.
std::optional<Tag> read_data_header(std::span<const std::byte> message) noexcept;

}  // namespace netio::pubsub::detail
