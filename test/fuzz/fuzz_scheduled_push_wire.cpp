// SPDX-License-Identifier: MIT
// The scheduled push's messages on its data connections
// (patterns/scheduled_push/include/netio/scheduled_push/wire.hpp): hello, contribution,
// welcome, refusal, acknowledgement, credit. Each decoder gets the bytes; what decodes must
// encode back to the same value.
#include "netio/scheduled_push/wire.hpp"

#include "fuzz_check.hpp"
#include "netio/error.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

namespace {
template <typename Decode>
void refused_or_decoded(Decode decode) {
  try {
    decode();
  } catch (const netio::Error&) {
  }
}
template <typename Array>
bool same(const Array& encoded, std::span<const std::byte> bytes) {
  return encoded.size() == bytes.size() && std::equal(encoded.begin(), encoded.end(), bytes.begin());
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace sp = netio::scheduled_push;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  refused_or_decoded([&] { sp::wire_type(bytes); });
  refused_or_decoded([&] { FUZZ_CHECK(same(sp::encode(sp::decode_hello(bytes)), bytes)); });
  refused_or_decoded([&] {
    const auto header = sp::decode_contribution(bytes);
    FUZZ_CHECK(bytes.size() >= sp::contribution_header_size);
    const auto payload = bytes.subspan(sp::contribution_header_size);
    FUZZ_CHECK(same(sp::encode_contribution(header.input, header.timeslice, payload), bytes));
  });
  refused_or_decoded([&] { FUZZ_CHECK(same(sp::encode(sp::decode_welcome(bytes)), bytes)); });
  refused_or_decoded([&] { FUZZ_CHECK(same(sp::encode_refusal(sp::decode_refusal(bytes)), bytes)); });
  refused_or_decoded([&] { FUZZ_CHECK(same(sp::encode_acknowledgement(sp::decode_acknowledgement(bytes)), bytes)); });
  refused_or_decoded([&] { FUZZ_CHECK(same(sp::encode(sp::decode_credit(bytes)), bytes)); });
  return 0;
}
