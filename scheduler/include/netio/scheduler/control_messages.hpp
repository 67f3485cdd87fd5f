// SPDX-License-Identifier: MIT
/// @file
/// The DFS control messages and their wire encoding.
///
/// Three messages travel between Input Engines and DDEs: the meta-data report of a finished
/// interval (IE → every DDE), the request for a proposal (IE → every DDE, sent with the
/// report) and the proposal (DDE → the IE that asked). Times are in the sender's clock for a
/// report and in the receiving IE's clock for a proposal (the DDE converts).
///
/// Two more make the start handshake that gives a DDE each IE's clock offset before the first
/// report (no MPI needed): when its connection to a DDE is up, the IE sends a clock probe
/// (its send time, IE clock); the DDE answers with a clock echo (that send time and the DDE
/// time the probe arrived) as a reply on the same connection; the IE then sends a second
/// probe carrying the round trip it measured for the first, and the DDE takes
///   offset = arrival of probe 1 (DDE clock) - its send time (IE clock) - round trip / 2.
///
/// Encoding: little-endian, fixed size per message, a 4-byte header
///   [type u8][version u8 = 1][flags u8][reserved u8 = 0]
/// then the fields in declaration order (u32 / u64 unsigned, i64 for times and durations).
/// Decoders accept exactly the encoded size and throw netio::Error with code
/// Errc::protocol_error, naming the message and what was wrong, for a wrong size, type or
/// version, non-zero reserved bits, negative durations or a non-positive proposed duration.
#pragma once

#include "netio/scheduler/time.hpp"

#include <array>
#include <cstddef>
#include <optional>
#include <span>

namespace netio::scheduler {

enum class MessageType : std::uint8_t {
  metadata_report = 1,
  proposal_request = 2,
  proposal = 3,
  clock_probe = 4,
  clock_echo = 5,
};

/// The actual meta-data of interval j as input `input` measured it.
struct MetadataReport {
  InputIndex input = 0;
  IntervalIndex interval = 0;
  Time start{0};                              ///< tm_j: when the IE sent the interval's first contribution (IE clock)
  Duration duration{0};                       ///< durm_j: from tm_j to the interval's last acknowledgement
  Duration median_ack_latency{0};             ///< medlat: median of send → acknowledgement over the interval
  std::optional<Duration> proposed_duration;  ///< durp_j the IE paced by; none: it had no proposal
  /// From tm_j to the acknowledgement of the interval's probe time-slice
  /// (TimesliceLayout::probe_timeslice): the DDE reads the time-slice's spread off the IEs'
  /// reports (extension 10). None: not measured (an older IE, or the probe not acknowledged).
  std::optional<Duration> probe_acknowledged{};

  friend bool operator==(const MetadataReport&, const MetadataReport&) = default;
};

/// Input `input` asks for the proposal of interval `interval` (k ≥ j + 2).
struct ProposalRequest {
  InputIndex input = 0;
  IntervalIndex interval = 0;

  friend bool operator==(const ProposalRequest&, const ProposalRequest&) = default;
};

/// The proposed meta-data of one interval, in the receiving IE's clock.
struct Proposal {
  IntervalIndex interval = 0;
  Time start{0};         ///< tp_k
  Duration duration{0};  ///< durp_k, > 0
  /// The DDE's safety net (extension 7, fallback_guard.hpp): run interval k best-effort,
  /// unpaced and without waiting for θ of the interval before. Flag bit 0 on the wire.
  bool best_effort = false;
  /// With best_effort: the θ gate stays, as before the first proposal, and the interval is
  /// measured to its last acknowledgement (the spread rule, extension 10: best-effort for as
  /// long as its own spread is the narrower, run as the reference was measured). Flag bit 1.
  bool gated = false;

  friend bool operator==(const Proposal&, const Proposal&) = default;
};

/// IE → DDE, at connect: the IE's clock now, and the round trip of its previous probe (none
/// for the first).
struct ClockProbe {
  InputIndex input = 0;
  std::uint32_t sequence = 0;                   ///< 0, 1, ...
  Time sent_at{0};                              ///< IE clock
  std::optional<Duration> previous_round_trip;  ///< of probe sequence - 1, measured by the IE
  /// A clock sample sent as an interval starts (flag bit 1; extension 9, input_engine.hpp):
  /// not answered, `sequence` is the interval's low 32 bits, no round trip.
  bool sample = false;

  friend bool operator==(const ClockProbe&, const ClockProbe&) = default;
};

/// DDE → IE, a reply to a probe.
struct ClockEcho {
  std::uint32_t sequence = 0;
  Time probe_sent_at{0};  ///< the probe's sent_at, IE clock
  Time received_at{0};    ///< when the probe arrived, DDE clock

  friend bool operator==(const ClockEcho&, const ClockEcho&) = default;
};

inline constexpr std::size_t metadata_report_size = 56;
inline constexpr std::size_t proposal_request_size = 16;
inline constexpr std::size_t proposal_size = 28;
inline constexpr std::size_t clock_probe_size = 28;
inline constexpr std::size_t clock_echo_size = 28;

std::array<std::byte, metadata_report_size> encode(const MetadataReport& message);
std::array<std::byte, proposal_request_size> encode(const ProposalRequest& message);
std::array<std::byte, proposal_size> encode(const Proposal& message);
std::array<std::byte, clock_probe_size> encode(const ClockProbe& message);
std::array<std::byte, clock_echo_size> encode(const ClockEcho& message);

/// The type of an encoded message, for dispatch; throws netio::Error (Errc::protocol_error) for an empty buffer or
/// an unknown type. The decoders check everything else.
MessageType message_type(std::span<const std::byte> bytes);

MetadataReport decode_metadata_report(std::span<const std::byte> bytes);
ProposalRequest decode_proposal_request(std::span<const std::byte> bytes);
Proposal decode_proposal(std::span<const std::byte> bytes);
ClockProbe decode_clock_probe(std::span<const std::byte> bytes);
ClockEcho decode_clock_echo(std::span<const std::byte> bytes);

}  // namespace netio::scheduler
