// The DFS control messages and their wire encoding.
//
// Three messages travel between Input Engines and DDEs: the meta-data report of a finished
// interval (IE → every DDE), the request for a proposal (IE → every DDE, sent with the
// report) and the proposal (DDE → the IE that asked). Times are in the sender's clock for a
// report and in the receiving IE's clock for a proposal (the DDE converts).
//
// Encoding: little-endian, fixed size per message, a 4-byte header
//   [type u8][version u8 = 1][flags u8][reserved u8 = 0]
// then the fields in declaration order (u32 / u64 unsigned, i64 for times and durations).
// Decoders accept exactly the encoded size and throw netio::Error with code
// std::errc::bad_message, naming the message and what was wrong, for a wrong size, type or
// version, non-zero reserved bits, negative durations or a non-positive proposed duration.
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
};

// The actual meta-data of interval j as input `input` measured it.
struct MetadataReport {
  InputIndex input = 0;
  IntervalIndex interval = 0;
  Time start{0};                // tm_j: when the IE sent the interval's first contribution (IE clock)
  Duration duration{0};         // durm_j: from tm_j to the interval's last acknowledgement
  Duration median_ack_latency{0};  // medlat: median of send → acknowledgement over the interval
  std::optional<Duration> proposed_duration;  // durp_j the IE paced by; none: it had no proposal

  friend bool operator==(const MetadataReport&, const MetadataReport&) = default;
};

// Input `input` asks for the proposal of interval `interval` (k ≥ j + 2).
struct ProposalRequest {
  InputIndex input = 0;
  IntervalIndex interval = 0;

  friend bool operator==(const ProposalRequest&, const ProposalRequest&) = default;
};

// The proposed meta-data of one interval, in the receiving IE's clock.
struct Proposal {
  IntervalIndex interval = 0;
  Time start{0};         // tp_k
  Duration duration{0};  // durp_k, > 0

  friend bool operator==(const Proposal&, const Proposal&) = default;
};

inline constexpr std::size_t kMetadataReportSize = 48;
inline constexpr std::size_t kProposalRequestSize = 16;
inline constexpr std::size_t kProposalSize = 28;

std::array<std::byte, kMetadataReportSize> encode(const MetadataReport& message);
std::array<std::byte, kProposalRequestSize> encode(const ProposalRequest& message);
std::array<std::byte, kProposalSize> encode(const Proposal& message);

// The type of an encoded message, for dispatch; throws (bad_message) for an empty buffer or
// an unknown type. The decoders check everything else.
MessageType message_type(std::span<const std::byte> bytes);

MetadataReport decode_metadata_report(std::span<const std::byte> bytes);
ProposalRequest decode_proposal_request(std::span<const std::byte> bytes);
Proposal decode_proposal(std::span<const std::byte> bytes);

}  // namespace netio::scheduler
