// SPDX-License-Identifier: MIT
/// @file
/// The wire encoding of assignment by load's two messages (assigner.hpp), which travel on the
/// same connections as DFS's control messages (control_messages.hpp): the LoadReport (input →
/// every coordinator, i.e. DDE replica) and the IntervalAssignment (coordinator → every input,
/// a reply on that connection).
///
/// Encoding: little-endian, the control messages' 4-byte header
///   [type u8][version u8 = 1][flags u8 = 0][reserved u8 = 0]
/// then, LoadReport: u32 input, u64 interval, u32 count, count × u16 in_use, and with flag
/// 0x01 (only when it flags joining inputs, so that one without reads as before) u32 joining
/// (at least 1), joining × u32 input;
/// IntervalAssignment: u64 interval, u32 count, count × u32 shares, and with flag 0x01 (only
/// when it names membership changes, so that one without reads as before) u32 changes (1 to
/// count), changes × (u32 compute, u64 from, u8 joins 0 or 1), then with flag 0x02 (only when
/// it names input joins) u32 joins (at least 1), joins × (u32 input, u64 from). Their types follow
/// MessageType's (6 and 7). Decoders accept exactly the encoded size and throw netio::Error
/// (Errc::protocol_error) naming the message and what was wrong (size, type, version, a count
/// beyond max_assignment_nodes); whether the counts fit the configuration is the Assigner's
/// and check_assignment()'s to judge.
#pragma once

#include "netio/scheduler/assigner.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace netio::scheduler {

inline constexpr std::uint8_t load_report_type = 6;
inline constexpr std::uint8_t assignment_type = 7;
/// The most compute nodes a message names (a decoder refuses more).
inline constexpr std::uint32_t max_assignment_nodes = 65536;

/// The encoded sizes, for sizing buffers.
std::size_t encoded_size_of_load_report(std::uint32_t compute_count, std::size_t joining_inputs = 0) noexcept;
std::size_t encoded_size_of_assignment(std::uint32_t compute_count, std::size_t changes = 0,
                                       std::size_t input_joins = 0) noexcept;

std::vector<std::byte> encode(const LoadReport& message);
std::vector<std::byte> encode(const IntervalAssignment& message);
LoadReport decode_load_report(std::span<const std::byte> bytes);
IntervalAssignment decode_assignment(std::span<const std::byte> bytes);

/// The type byte of a control message (either family), without checking the rest; throws
/// (Errc::protocol_error) for an empty message.
std::uint8_t control_message_type(std::span<const std::byte> bytes);

}  // namespace netio::scheduler
