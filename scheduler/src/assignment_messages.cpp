// SPDX-License-Identifier: MIT
#include "netio/scheduler/assignment_messages.hpp"

#include "netio/error.hpp"
#include "netio/internal/wire_codec.hpp"

#include <string>

namespace netio::scheduler {
namespace {

constexpr std::uint8_t version = 1;
constexpr std::size_t header_bytes = 4;
// IntervalAssignment: membership changes follow the shares. Without it the layout is the one
// before changes existed, so a decision that changes nothing reads as it always did.
constexpr std::uint8_t changes_flag = 0x01;
constexpr std::size_t change_bytes = 4 + 8 + 1;  // u32 compute, u64 from, u8 joins

// The header, then the count of what follows; checks the size against the count.
// `trailing`: the bytes that follow the per-node fields at least.
std::uint32_t read_count(detail::WireReader& r, std::size_t fixed, std::size_t per_node, std::size_t trailing = 0) {
  const auto count = r.get<std::uint32_t>("count");
  if (count > max_assignment_nodes) {
    r.fail("names " + std::to_string(count) + " compute nodes, more than " + std::to_string(max_assignment_nodes));
  }
  if (trailing > 0) {
    if (r.remaining() < count * per_node + trailing) {
      r.fail(std::to_string(fixed + trailing + count * per_node) + " bytes at least expected for " +
             std::to_string(count) + " compute nodes");
    }
  } else if (r.remaining() != count * per_node) {
    r.fail(std::to_string(fixed + count * per_node) + " bytes expected for " + std::to_string(count) +
           " compute nodes");
  }
  return count;
}

}  // namespace

std::size_t encoded_size_of_load_report(std::uint32_t compute_count) noexcept {
  return header_bytes + 4 + 8 + 4 + 2 * std::size_t{compute_count};
}

std::size_t encoded_size_of_assignment(std::uint32_t compute_count, std::size_t changes) noexcept {
  return header_bytes + 8 + 4 + 4 * std::size_t{compute_count} + (changes > 0 ? 4 + change_bytes * changes : 0);
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
  w.put_header(assignment_type, version, m.changes.empty() ? 0 : changes_flag);
  w.put<std::uint64_t>(m.interval);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(m.shares.size()));
  for (const auto share : m.shares) w.put<std::uint32_t>(share);
  if (m.changes.empty()) return w.take();
  w.put<std::uint32_t>(static_cast<std::uint32_t>(m.changes.size()));
  for (const auto& change : m.changes) {
    w.put<std::uint32_t>(change.compute);
    w.put<std::uint64_t>(change.from);
    w.put<std::uint8_t>(change.joins ? 1 : 0);
  }
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
  const bool with_changes = r.get_header(assignment_type, version, changes_flag) != 0;
  IntervalAssignment m;
  m.interval = r.get<std::uint64_t>("interval");
  m.shares.resize(read_count(r, encoded_size_of_assignment(0), 4, with_changes ? 4 : 0));
  for (auto& share : m.shares) share = r.get<std::uint32_t>("share");
  if (!with_changes) return m;
  const auto count = r.get<std::uint32_t>("change count");
  // A change per compute node at most (check_assignment() checks the slots).
  if (count == 0 || count > m.shares.size()) {
    r.fail(std::to_string(count) + " membership changes for " + std::to_string(m.shares.size()) + " compute nodes");
  }
  if (r.remaining() != count * change_bytes) {
    r.fail(std::to_string(encoded_size_of_assignment(static_cast<std::uint32_t>(m.shares.size()), count)) +
           " bytes expected for " + std::to_string(m.shares.size()) + " compute nodes and " + std::to_string(count) +
           " membership changes");
  }
  m.changes.resize(count);
  for (auto& change : m.changes) {
    change.compute = r.get<std::uint32_t>("changed compute");
    change.from = r.get<std::uint64_t>("change boundary");
    const auto joins = r.get<std::uint8_t>("joins");
    if (joins > 1) r.fail("joins byte is " + std::to_string(joins));
    change.joins = joins == 1;
  }
  return m;
}

std::uint8_t control_message_type(std::span<const std::byte> bytes) {
  if (bytes.empty()) throw Error(Errc::protocol_error, "control message: empty");
  return static_cast<std::uint8_t>(bytes[0]);
}

}  // namespace netio::scheduler
