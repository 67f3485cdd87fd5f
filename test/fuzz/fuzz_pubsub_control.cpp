// SPDX-License-Identifier: MIT
// Publish/subscribe control messages (patterns/pubsub/src/control_message.hpp): what a
// subscriber sends a publisher and the publisher's replies, plus the data header. Whatever
// decodes must encode back to the same bytes.
#include "control_message.hpp"

#include "fuzz_check.hpp"
#include "netio/error.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <variant>
#include <vector>

namespace {
bool same(const std::vector<std::byte>& encoded, std::span<const std::byte> bytes) {
  return encoded.size() == bytes.size() && std::equal(encoded.begin(), encoded.end(), bytes.begin());
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace d = netio::pubsub::detail;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    const auto request = d::decode_request(bytes);
    FUZZ_CHECK(request.data_endpoint.size() <= d::max_endpoint_text);
    FUZZ_CHECK(!request.tags.empty() && request.tags.size() <= d::max_tags_per_request);
    FUZZ_CHECK(bytes.size() <= d::max_request_size);
    FUZZ_CHECK(same(d::encode(request), bytes));
  } catch (const netio::Error&) {
  }
  try {
    const auto reply = d::decode_reply(bytes);
    if (const auto* answer = std::get_if<d::SubscriptionAnswer>(&reply)) {
      FUZZ_CHECK(answer->reason.size() <= d::max_reason_text);
      FUZZ_CHECK(same(d::encode(*answer), bytes));
    } else {
      FUZZ_CHECK(same(d::encode(std::get<d::DropReport>(reply)), bytes));
    }
  } catch (const netio::Error&) {
  }
  const auto tag = d::read_data_header(bytes);
  FUZZ_CHECK(tag.has_value() == (size >= d::data_header_size));
  return 0;
}
