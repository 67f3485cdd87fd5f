// SPDX-License-Identifier: MIT
#include "control_message.hpp"

#include "netio/internal/wire_codec.hpp"

#include <fmt/format.h>

namespace netio::pubsub::detail {

namespace {

using netio::detail::WireReader;
using netio::detail::WireWriter;

constexpr std::uint8_t kind_subscribe = 1;
constexpr std::uint8_t kind_unsubscribe = 2;
constexpr std::uint8_t kind_answer = 3;
constexpr std::uint8_t kind_drops = 4;

void put_preamble(WireWriter& out, std::uint8_t kind) {
  out.put(control_magic);
  out.put(control_version);
  out.put(kind);
}

std::uint8_t get_preamble(WireReader& in) {
  const auto magic = in.get<std::uint32_t>("magic");
  if (magic != control_magic) {
    in.fail(fmt::format("magic {:#010x} is not a pub/sub control message's", magic));
  }
  const auto version = in.get<std::uint8_t>("version");
  if (version != control_version) {
    in.fail(fmt::format("protocol version {}, but this side speaks version {}", version, control_version));
  }
  return in.get<std::uint8_t>("kind");
}

Mode get_mode(WireReader& in) {
  const auto mode = in.get<std::uint8_t>("mode");
  if (mode != static_cast<std::uint8_t>(Mode::low_latency) &&
      mode != static_cast<std::uint8_t>(Mode::high_throughput)) {
    in.fail(fmt::format("unknown mode {}", mode));
  }
  return static_cast<Mode>(mode);
}

}  // namespace

std::vector<std::byte> encode(const SubscriptionRequest& request) {
  WireWriter out;
  put_preamble(out, request.subscribe ? kind_subscribe : kind_unsubscribe);
  out.put(static_cast<std::uint8_t>(request.mode));
  out.put(static_cast<std::uint8_t>(request.backpressure));
  out.put(request.request_id);
  if (request.tags.empty() || request.tags.size() > max_tags_per_request) {
    throw Error(Errc::invalid_option, fmt::format("subscription request: {} tags; one request carries 1 to {}",
                                                  request.tags.size(), max_tags_per_request));
  }
  out.put(static_cast<std::uint16_t>(request.tags.size()));
  for (const Tag tag : request.tags) out.put(tag);
  out.put_string(request.data_endpoint, max_endpoint_text);
  return out.take();
}

std::vector<std::byte> encode(const SubscriptionAnswer& answer) {
  WireWriter out;
  put_preamble(out, kind_answer);
  out.put(static_cast<std::uint8_t>(answer.accepted ? 1 : 0));
  out.put(answer.request_id);
  out.put_string(std::string_view(answer.reason).substr(0, max_reason_text), max_reason_text);
  return out.take();
}

std::vector<std::byte> encode(const DropReport& report) {
  WireWriter out;
  put_preamble(out, kind_drops);
  out.put(static_cast<std::uint8_t>(report.mode));
  out.put(report.tag);
  out.put(report.dropped);
  return out.take();
}

SubscriptionRequest decode_request(std::span<const std::byte> bytes) {
  constexpr std::string_view what = "subscription request";
  WireReader in(bytes, what);
  const auto kind = get_preamble(in);
  if (kind != kind_subscribe && kind != kind_unsubscribe) {
    in.fail(fmt::format("kind {} is neither subscribe nor unsubscribe", kind));
  }
  SubscriptionRequest request;
  request.subscribe = kind == kind_subscribe;
  request.mode = get_mode(in);
  const auto backpressure = in.get<std::uint8_t>("back-pressure");
  if (backpressure > static_cast<std::uint8_t>(Backpressure::drop)) {
    in.fail(fmt::format("unknown back-pressure policy {}", backpressure));
  }
  request.backpressure = static_cast<Backpressure>(backpressure);
  request.request_id = in.get<std::uint64_t>("request id");
  const auto count = in.get<std::uint16_t>("tag count");
  if (count == 0 || count > max_tags_per_request) {
    in.fail(fmt::format("{} tags; one request carries 1 to {}", count, max_tags_per_request));
  }
  request.tags.reserve(count);
  for (std::uint16_t i = 0; i < count; ++i) request.tags.push_back(in.get<std::uint64_t>("tag"));
  request.data_endpoint = in.get_string("data endpoint", max_endpoint_text);
  in.expect_end();
  return request;
}

std::variant<SubscriptionAnswer, DropReport> decode_reply(std::span<const std::byte> bytes) {
  constexpr std::string_view what = "publisher's reply";
  WireReader in(bytes, what);
  const auto kind = get_preamble(in);
  if (kind == kind_answer) {
    SubscriptionAnswer answer;
    const auto accepted = in.get<std::uint8_t>("accepted");
    if (accepted > 1) in.fail(fmt::format("accepted flag {} is neither 0 nor 1", accepted));
    answer.accepted = accepted == 1;
    answer.request_id = in.get<std::uint64_t>("request id");
    answer.reason = in.get_string("reason", max_reason_text);
    in.expect_end();
    return answer;
  }
  if (kind == kind_drops) {
    DropReport report;
    report.mode = get_mode(in);
    report.tag = in.get<std::uint64_t>("tag");
    report.dropped = in.get<std::uint64_t>("dropped");
    in.expect_end();
    return report;
  }
  in.fail(fmt::format("unknown kind {}", kind));
}

void write_data_header(std::byte* out, Tag tag) noexcept { netio::detail::store_le<Tag>(out, tag); }

std::optional<Tag> read_data_header(std::span<const std::byte> message) noexcept {
  if (message.size() < data_header_size) return std::nullopt;
  return netio::detail::load_le<Tag>(message.data());
}

}  // namespace netio::pubsub::detail
