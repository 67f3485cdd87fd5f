// SPDX-License-Identifier: MIT
#include "netio/scheduler/assignment_messages.hpp"

#include "netio/error.hpp"
#include "netio/internal/wire_codec.hpp"

#include <string>

namespace netio::scheduler {
namespace {

constexpr std::uint8_t version = 1;
constexpr std::size_t header_bytes = 4;

// The header, then the count of what follows; checks the size against the count.
std::uint32_t read_count(detail::WireReader& r, std::size_t fixed, std::size_t per_node) {
  const auto count = r.get<std::uint32_t>("count");
  if (count > max_assignment_nodes) {
    r.fail("names " + std::to_string(count) + " compute nodes, more than " + std::to_string(max_assignment_nodes));
  }
  if (r.remaining() != count * per_node) {
    r.fail(std::to_string(fixed + count * per_node) + " bytes expected for " + std::to_string(count) +
           " compute nodes");
  }
  return count;
}

}  // namespace

std::size_t encoded_size_of_load_report(std::uint32_t compute_count) noexcept {
  return header_bytes + 4 + 8 + 4 + 2 * std::size_t{compute_count};
}

std::size_t encoded_size_of_assignment(std::uint32_t compute_count) noexcept {
  return header_bytes + 8 + 4 + 4 * std::size_t{compute_count};
}

std::vector<std::byte> encode(const LoadReport& m) {
  detail::WireWriter w;
  w.put_header(load_report_type, version, 0);
  w.put<std::uint32_t>(m.input);
  w.put<std::uint64_t>(m.interval);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(m.in_use.size()));
  for (const auto use : m.in_use) w.put<std::uint16_t>(use);
  return w.take();
}

std::vector<std::byte> encode(const IntervalAssignment& m) {
  detail::WireWriter w;
  w.put_header(assignment_type, version, 0);
  w.put<std::uint64_t>(m.interval);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(m.shares.size()));
  for (const auto share : m.shares) w.put<std::uint32_t>(share);
  return w.take();
}

LoadReport decode_load_report(std::span<const std::byte> bytes) {
  detail::WireReader r(bytes, "load report");
  (void)r.get_header(load_report_type, version, 0);
  LoadReport m;
  m.input = r.get<std::uint32_t>("input");
  m.interval = r.get<std::uint64_t>("interval");
  m.in_use.resize(read_count(r, encoded_size_of_load_report(0), 2));
  for (auto& use : m.in_use) use = r.get<std::uint16_t>("in_use");
  return m;
}

IntervalAssignment decode_assignment(std::span<const std::byte> bytes) {
  detail::WireReader r(bytes, "assignment");
  (void)r.get_header(assignment_type, version, 0);
  IntervalAssignment m;
  m.interval = r.get<std::uint64_t>("interval");
  m.shares.resize(read_count(r, encoded_size_of_assignment(0), 4));
  for (auto& share : m.shares) share = r.get<std::uint32_t>("share");
  return m;
}

std::uint8_t control_message_type(std::span<const std::byte> bytes) {
  if (bytes.empty()) throw Error(Errc::protocol_error, "control message: empty");
  return static_cast<std::uint8_t>(bytes[0]);
}

}  // namespace netio::scheduler
