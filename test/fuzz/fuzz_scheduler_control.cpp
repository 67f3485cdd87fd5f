// SPDX-License-Identifier: MIT
// The DFS control messages (scheduler/include/netio/scheduler/control_messages.hpp):
// meta-data reports, proposal requests and proposals between input nodes and DDEs. What
// decodes must encode back to the same bytes.
#include "netio/scheduler/control_messages.hpp"

#include "fuzz_check.hpp"
#include "netio/error.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

namespace {
template <typename Array>
bool same(const Array& encoded, std::span<const std::byte> bytes) {
  return encoded.size() == bytes.size() && std::equal(encoded.begin(), encoded.end(), bytes.begin());
}
template <typename Decode>
void refused_or_decoded(Decode decode) {
  try {
    decode();
  } catch (const netio::Error&) {
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace s = netio::scheduler;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  refused_or_decoded([&] { s::message_type(bytes); });
  refused_or_decoded([&] { FUZZ_CHECK(same(s::encode(s::decode_metadata_report(bytes)), bytes)); });
  refused_or_decoded([&] { FUZZ_CHECK(same(s::encode(s::decode_proposal_request(bytes)), bytes)); });
  refused_or_decoded([&] { FUZZ_CHECK(same(s::encode(s::decode_proposal(bytes)), bytes)); });
  return 0;
}
