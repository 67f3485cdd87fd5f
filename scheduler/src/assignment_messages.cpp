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
// IntervalAssignment: standby inputs joining follow the changes (input_joins), and a
// LoadReport's joining inputs follow its in_use: each behind a flag for the same reason.
constexpr std::uint8_t input_joins_flag = 0x02;
constexpr std::size_t input_join_bytes = 4 + 8;  // u32 input, u64 from
constexpr std::uint8_t joining_flag = 0x01;

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

std::size_t encoded_size_of_load_report(std::uint32_t compute_count, std::size_t joining_inputs) noexcept {
  return header_bytes + 4 + 8 + 4 + 2 * std::size_t{compute_count} + (joining_inputs > 0 ? 4 + 4 * joining_inputs : 0);
}

std::size_t encoded_size_of_assignment(std::uint32_t compute_count, std::size_t changes,
                                       std::size_t input_joins) noexcept {
  return header_bytes + 8 + 4 + 4 * std::size_t{compute_count} + (changes > 0 ? 4 + change_bytes * changes : 0) +
         (input_joins > 0 ? 4 + input_join_bytes * input_joins : 0);
}

std::vector<std::byte> encode(const LoadReport& m) {
  detail::WireWriter w;
  w.put_header(load_report_type, version, m.joining_inputs.empty() ? 0 : joining_flag);
  w.put<std::uint32_t>(m.input);
  w.put<std::uint64_t>(m.interval);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(m.in_use.size()));
  for (const auto use : m.in_use) w.put<std::uint16_t>(use);
  if (m.joining_inputs.empty()) return w.take();
  w.put<std::uint32_t>(static_cast<std::uint32_t>(m.joining_inputs.size()));
  for (const auto input : m.joining_inputs) w.put<std::uint32_t>(input);
  return w.take();
}

std::vector<std::byte> encode(const IntervalAssignment& m) {
  detail::WireWriter w;
  const auto flags = static_cast<std::uint8_t>((m.changes.empty() ? 0 : changes_flag) |
                                               (m.input_joins.empty() ? 0 : input_joins_flag));
  w.put_header(assignment_type, version, flags);
  w.put<std::uint64_t>(m.interval);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(m.shares.size()));
  for (const auto share : m.shares) w.put<std::uint32_t>(share);
  if (!m.changes.empty()) {
    w.put<std::uint32_t>(static_cast<std::uint32_t>(m.changes.size()));
    for (const auto& change : m.changes) {
      w.put<std::uint32_t>(change.compute);
      w.put<std::uint64_t>(change.from);
      w.put<std::uint8_t>(change.joins ? 1 : 0);
    }
  }
  if (!m.input_joins.empty()) {
    w.put<std::uint32_t>(static_cast<std::uint32_t>(m.input_joins.size()));
    for (const auto& join : m.input_joins) {
      w.put<std::uint32_t>(join.input);
      w.put<std::uint64_t>(join.from);
    }
  }
  return w.take();
}

LoadReport decode_load_report(std::span<const std::byte> bytes) {
  detail::WireReader r(bytes, "load report");
  const bool with_joining = r.get_header(load_report_type, version, joining_flag) != 0;
  LoadReport m;
  m.input = r.get<std::uint32_t>("input");
  m.interval = r.get<std::uint64_t>("interval");
  m.in_use.resize(read_count(r, encoded_size_of_load_report(0), 2, with_joining ? 4 : 0));
  for (auto& use : m.in_use) use = r.get<std::uint16_t>("in_use");
  if (!with_joining) return m;
  const auto count = r.get<std::uint32_t>("joining count");
  if (count == 0 || r.remaining() != 4 * std::size_t{count}) {
    r.fail(std::to_string(count) + " joining inputs in " + std::to_string(r.remaining()) + " bytes");
  }
  m.joining_inputs.resize(count);
  for (auto& input : m.joining_inputs) input = r.get<std::uint32_t>("joining input");
  return m;
}

IntervalAssignment decode_assignment(std::span<const std::byte> bytes) {
  detail::WireReader r(bytes, "assignment");
  const auto flags = r.get_header(assignment_type, version, changes_flag | input_joins_flag);
  const bool with_changes = (flags & changes_flag) != 0;
  const bool with_input_joins = (flags & input_joins_flag) != 0;
  IntervalAssignment m;
  m.interval = r.get<std::uint64_t>("interval");
  m.shares.resize(read_count(r, encoded_size_of_assignment(0), 4, with_changes || with_input_joins ? 4 : 0));
  for (auto& share : m.shares) share = r.get<std::uint32_t>("share");
  if (with_changes) {
    const auto count = r.get<std::uint32_t>("change count");
    // A change per compute node at most (check_assignment() checks the slots).
    if (count == 0 || count > m.shares.size()) {
      r.fail(std::to_string(count) + " membership changes for " + std::to_string(m.shares.size()) + " compute nodes");
    }
    const std::size_t after = with_input_joins ? 4 + input_join_bytes : 0;  // at least one input join follows
    if (with_input_joins ? r.remaining() < count * change_bytes + after : r.remaining() != count * change_bytes) {
      r.fail(std::to_string(encoded_size_of_assignment(static_cast<std::uint32_t>(m.shares.size()), count,
                                                       with_input_joins ? 1 : 0)) +
             " bytes" + (with_input_joins ? " at least" : "") + " expected for " + std::to_string(m.shares.size()) +
             " compute nodes and " + std::to_string(count) + " membership changes");
    }
    m.changes.resize(count);
    for (auto& change : m.changes) {
      change.compute = r.get<std::uint32_t>("changed compute");
      change.from = r.get<std::uint64_t>("change boundary");
      const auto joins = r.get<std::uint8_t>("joins");
      if (joins > 1) r.fail("joins byte is " + std::to_string(joins));
      change.joins = joins == 1;
    }
  }
  if (with_input_joins) {
    const auto count = r.get<std::uint32_t>("input join count");
    if (count == 0 || r.remaining() != count * input_join_bytes) {
      r.fail(std::to_string(count) + " input joins in " + std::to_string(r.remaining()) + " bytes");
    }
    m.input_joins.resize(count);
    for (auto& join : m.input_joins) {
      join.input = r.get<std::uint32_t>("joining input");
      join.from = r.get<std::uint64_t>("input join boundary");
    }
  }
  return m;
}

std::uint8_t control_message_type(std::span<const std::byte> bytes) {
  if (bytes.empty()) throw Error(Errc::protocol_error, "control message: empty");
  return static_cast<std::uint8_t>(bytes[0]);
}

}  // namespace netio::scheduler
