// SPDX-License-Identifier: MIT
/// @file
/// The messages of the scheduled-push pattern on its data connections, and their encoding.
///
/// Every input node opens one low-latency connection to every compute node (the data
/// connection). On it the input sends, in order:
///   Hello          once, first: who it is (input index), the system it belongs to (counts,
///                  interval length, mode) and the largest contribution it will send;
///   Contribution   one per time-slice of that compute node: header + the bytes; its flags
///                  byte is the delivery number (attempt: 0 on the time-slice's first node,
///                  +1 per reassignment away from a lost node);
///   LostCompute    when this input lost a compute node (sent to every other one, before
///                  any reassigned contribution): which node, and the time-slices that node
///                  credited this input last (built there: not to be built again).
///   Membership     a slot leaves or joins from time-slice T (scheduler/membership.hpp): to
///                  every other member as soon as this input took the change (before any
///                  contribution of the slot routed to it), and to the leaving slot itself
///                  once this input has sent it everything below T (its farewell).
///   InputJoin      a standby input joins (scheduler/input_membership.hpp): {x, 0} from input
///                  x to the lowest member compute node, its request; {x, T} from every input
///                  to every compute node once it heard the boundary, ahead of any of its
///                  contributions at or above T (the joiner's first contribution is at T).
///                  Under assignment by load the request goes to every DDE replica instead
///                  (on the control connections), which passes it on to every input as a
///                  reply there; the coordinator names T in its assignment (a compute node
///                  refuses {x, 0} then).
/// The compute node answers with replies on the same connection:
///   Welcome        to a Hello it accepts: its compute index and the credits this input gets;
///   Refusal        to a Hello it cannot accept (mismatched configuration), with the reason;
///   Acknowledgement (DFS mode) per contribution, when it arrived;
///   Credit         per contribution, when its buffer space was freed: the time-slice and
///                  whether it was complete (handed to the user) or given up as incomplete;
///   LostCompute    (no time-slices) to every input, when another input told this node it
///                  lost that compute node: so that every input gives it up, not only one;
///   Membership     to every input, when this node drains: it leaves from T on (T named by
///                  it, ordered before any credit it returns after naming it); under
///                  assignment by load a request instead, from 0 (to drain, or a standby slot
///                  to join): the coordinator names T in its assignment.
///   InputJoin      {x, T} to every input, when this node names standby input x's boundary
///                  (ordered before any credit it returns after naming it).
/// The DFS control messages (reports, requests, proposals) are scheduler/control_messages.hpp
/// on separate connections to the DDEs.
///
/// Encoding: little-endian, a 4-byte header [type u8][version u8 = 1][flags u8][reserved u8 = 0],
/// then fixed fields; a Contribution adds its u64 length and exactly that many bytes, a
/// Refusal a u16 length and its text. Decoders check the exact size, type, version, reserved
/// byte and flags, and throw netio::Error (Errc::protocol_error) naming what was wrong.
#pragma once

#include "netio/scheduler/input_node.hpp"
#include "netio/scheduler/time.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace netio::scheduled_push {

using scheduler::ComputeIndex;
using scheduler::InputIndex;
using scheduler::Mode;
using scheduler::TimesliceIndex;

enum class WireType : std::uint8_t {
  hello = 0x11,
  contribution = 0x12,
  welcome = 0x13,
  refusal = 0x14,
  acknowledgement = 0x15,
  credit = 0x16,
  lost_compute = 0x17,
  membership = 0x18,
  input_join = 0x19,
};

struct Hello {
  InputIndex input = 0;
  ComputeIndex compute = 0;  ///< which compute node the input believes it is talking to
  std::uint32_t input_count = 0;
  std::uint32_t compute_count = 0;
  std::uint64_t timeslices_per_interval = 0;
  std::uint64_t max_contribution_bytes = 0;
  Mode mode = Mode::best_effort;
  bool standby = false;  ///< the input is on standby (TimesliceSenderOptions::standby): it joins later
  friend bool operator==(const Hello&, const Hello&) = default;
};

struct ContributionHeader {
  InputIndex input = 0;
  TimesliceIndex timeslice = 0;
  std::uint64_t length = 0;
  std::uint8_t attempt = 0;  ///< the delivery number (the header's flags byte)
};

struct LostCompute {
  ComputeIndex compute = 0;
  std::vector<TimesliceIndex> built;  ///< credited by it last (at most max_lost_built)
  friend bool operator==(const LostCompute&, const LostCompute&) = default;
};

/// A standby input's request to join (from = 0) or its boundary (from > 0).
struct InputJoin {
  InputIndex input = 0;
  TimesliceIndex from = 0;
  friend bool operator==(const InputJoin&, const InputJoin&) = default;
};

struct Welcome {
  ComputeIndex compute = 0;
  std::uint32_t credits = 0;
  friend bool operator==(const Welcome&, const Welcome&) = default;
};

struct Credit {
  TimesliceIndex timeslice = 0;
  bool complete = true;
  friend bool operator==(const Credit&, const Credit&) = default;
};

inline constexpr std::size_t hello_size = 36;
inline constexpr std::size_t contribution_header_size = 24;
inline constexpr std::size_t welcome_size = 12;
inline constexpr std::size_t acknowledgement_size = 12;
inline constexpr std::size_t credit_size = 12;
inline constexpr std::size_t max_refusal_text = 1024;
inline constexpr std::size_t membership_size = 16;
inline constexpr std::size_t input_join_size = 16;
inline constexpr std::size_t lost_compute_header_size = 12;  ///< then 8 bytes per built time-slice
inline constexpr std::size_t max_lost_built = 65536;
inline constexpr std::uint8_t max_attempt = 255;

std::array<std::byte, hello_size> encode(const Hello& hello);
/// Header and bytes in one buffer, ready to send.
std::vector<std::byte> encode_contribution(InputIndex input, TimesliceIndex t, std::span<const std::byte> bytes,
                                           std::uint8_t attempt = 0);
/// Rewrites the delivery number of an encoded contribution in place.
void set_contribution_attempt(std::span<std::byte> contribution, std::uint8_t attempt);
std::vector<std::byte> encode(const LostCompute& lost);  ///< throws (invalid_option) beyond max_lost_built
std::array<std::byte, welcome_size> encode(const Welcome& welcome);
std::array<std::byte, membership_size> encode(const scheduler::MembershipChange& change);
std::array<std::byte, input_join_size> encode(const InputJoin& join);
std::vector<std::byte> encode_refusal(const std::string& reason);  ///< cut at max_refusal_text
std::array<std::byte, acknowledgement_size> encode_acknowledgement(TimesliceIndex t);
std::array<std::byte, credit_size> encode(const Credit& credit);

/// The type of a message; throws (protocol_error) for an empty buffer or an unknown type.
WireType wire_type(std::span<const std::byte> bytes);

Hello decode_hello(std::span<const std::byte> bytes);
/// The header; `bytes` must be exactly header + length. The payload is bytes.subspan(contribution_header_size).
ContributionHeader decode_contribution(std::span<const std::byte> bytes);
Welcome decode_welcome(std::span<const std::byte> bytes);
std::string decode_refusal(std::span<const std::byte> bytes);
TimesliceIndex decode_acknowledgement(std::span<const std::byte> bytes);
Credit decode_credit(std::span<const std::byte> bytes);
LostCompute decode_lost_compute(std::span<const std::byte> bytes);
scheduler::MembershipChange decode_membership(std::span<const std::byte> bytes);
InputJoin decode_input_join(std::span<const std::byte> bytes);

}  // namespace netio::scheduled_push
