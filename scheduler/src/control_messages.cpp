// SPDX-License-Identifier: MIT
#include "netio/scheduler/control_messages.hpp"

#include "netio/error.hpp"

#include <stdexcept>
#include <string>

namespace netio::scheduler {
namespace {

constexpr std::uint8_t kVersion = 1;
constexpr std::uint8_t kHasProposedDuration = 0x01;  // metadata report flag
constexpr std::uint8_t kHasRoundTrip = 0x01;         // clock probe flag
constexpr std::uint8_t kIsSample = 0x02;             // clock probe flag: an interval-start sample
constexpr std::uint8_t kBestEffort = 0x01;           // proposal flag: the fallback (extension 7)
constexpr std::size_t kHeaderSize = 4;

[[noreturn]] void reject(const char* message, const std::string& what) {
  throw Error(Errc::protocol_error, std::string(message) + ": " + what);
}

// Writes fields one after the other, little-endian.
template <std::size_t N>
class Writer {
 public:
  Writer(MessageType type, std::uint8_t flags) {
    put_byte(static_cast<std::uint8_t>(type));
    put_byte(kVersion);
    put_byte(flags);
    put_byte(0);
  }
  void u32(std::uint32_t value) { put(value, 4); }
  void u64(std::uint64_t value) { put(value, 8); }
  void i64(std::int64_t value) { put(static_cast<std::uint64_t>(value), 8); }
  // Every byte written, none beyond: a size constant that disagrees with the fields is a bug here.
  std::array<std::byte, N> finish() const {
    if (at_ != N) throw std::logic_error("control message encoder: wrote " + std::to_string(at_) + " of " + std::to_string(N) + " bytes");
    return bytes_;
  }

 private:
  void put_byte(std::uint8_t value) {
    if (at_ < N) bytes_[at_] = std::byte{value};
    ++at_;
  }
  void put(std::uint64_t value, int width) {
    for (int k = 0; k < width; ++k) put_byte(static_cast<std::uint8_t>(value >> (8 * k)));
  }
  std::array<std::byte, N> bytes_{};
  std::size_t at_ = 0;
};

// Reads what Writer wrote, after checking size, type, version and the reserved byte.
class Reader {
 public:
  Reader(const char* message, std::span<const std::byte> bytes, MessageType type, std::size_t size)
      : message_(message), bytes_(bytes) {
    if (bytes.size() != size) {
      reject(message, std::to_string(bytes.size()) + " bytes, expected " + std::to_string(size));
    }
    const auto found = static_cast<unsigned>(bytes[0]);
    if (found != static_cast<unsigned>(type)) {
      reject(message, "type byte " + std::to_string(found) + ", expected " + std::to_string(static_cast<unsigned>(type)));
    }
    if (static_cast<unsigned>(bytes[1]) != kVersion) {
      reject(message, "version " + std::to_string(static_cast<unsigned>(bytes[1])) + ", this side speaks " +
                          std::to_string(kVersion));
    }
    if (bytes[3] != std::byte{0}) reject(message, "reserved byte is " + std::to_string(static_cast<unsigned>(bytes[3])));
    at_ = kHeaderSize;
  }
  std::uint8_t flags() const { return static_cast<std::uint8_t>(bytes_[2]); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(get(4)); }
  std::uint64_t u64() { return get(8); }
  std::int64_t i64() { return static_cast<std::int64_t>(get(8)); }
  Duration duration(const char* field) {
    const Duration value{i64()};
    if (value < Duration::zero()) reject(message_, std::string(field) + " is negative (" + std::to_string(value.count()) + " ns)");
    return value;
  }

 private:
  std::uint64_t get(int width) {
    std::uint64_t value = 0;
    for (int k = 0; k < width; ++k) value |= std::uint64_t{static_cast<std::uint8_t>(bytes_[at_++])} << (8 * k);
    return value;
  }
  const char* message_;
  std::span<const std::byte> bytes_;
  std::size_t at_ = 0;
};

}  // namespace

std::array<std::byte, kMetadataReportSize> encode(const MetadataReport& m) {
  Writer<kMetadataReportSize> w(MessageType::metadata_report, m.proposed_duration ? kHasProposedDuration : 0);
  w.u32(m.input);
  w.u64(m.interval);
  w.i64(m.start.count());
  w.i64(m.duration.count());
  w.i64(m.median_ack_latency.count());
  w.i64(m.proposed_duration ? m.proposed_duration->count() : 0);
  return w.finish();
}

std::array<std::byte, kProposalRequestSize> encode(const ProposalRequest& m) {
  Writer<kProposalRequestSize> w(MessageType::proposal_request, 0);
  w.u32(m.input);
  w.u64(m.interval);
  return w.finish();
}

std::array<std::byte, kProposalSize> encode(const Proposal& m) {
  Writer<kProposalSize> w(MessageType::proposal, m.best_effort ? kBestEffort : 0);
  w.u64(m.interval);
  w.i64(m.start.count());
  w.i64(m.duration.count());
  return w.finish();
}

// Clock probe: u32 input, u32 sequence, i64 sent_at, i64 previous round trip (flag bit 0).
std::array<std::byte, kClockProbeSize> encode(const ClockProbe& m) {
  Writer<kClockProbeSize> w(MessageType::clock_probe, static_cast<std::uint8_t>((m.previous_round_trip ? kHasRoundTrip : 0) |
                                                                              (m.sample ? kIsSample : 0)));
  w.u32(m.input);
  w.u32(m.sequence);
  w.i64(m.sent_at.count());
  w.i64(m.previous_round_trip ? m.previous_round_trip->count() : 0);
  return w.finish();
}

// Clock echo: u32 sequence, u32 0, i64 probe_sent_at, i64 received_at.
std::array<std::byte, kClockEchoSize> encode(const ClockEcho& m) {
  Writer<kClockEchoSize> w(MessageType::clock_echo, 0);
  w.u32(m.sequence);
  w.u32(0);
  w.i64(m.probe_sent_at.count());
  w.i64(m.received_at.count());
  return w.finish();
}

MessageType message_type(std::span<const std::byte> bytes) {
  if (bytes.empty()) reject("DFS control message", "empty");
  const auto type = static_cast<unsigned>(bytes[0]);
  if (type < 1 || type > 5) reject("DFS control message", "unknown type byte " + std::to_string(type));
  return static_cast<MessageType>(type);
}

MetadataReport decode_metadata_report(std::span<const std::byte> bytes) {
  const char* name = "DFS meta-data report";
  Reader r(name, bytes, MessageType::metadata_report, kMetadataReportSize);
  if ((r.flags() & ~kHasProposedDuration) != 0) reject(name, "unknown flags " + std::to_string(r.flags()));
  MetadataReport m;
  m.input = r.u32();
  m.interval = r.u64();
  m.start = Time{r.i64()};
  m.duration = r.duration("duration");
  m.median_ack_latency = r.duration("median acknowledgement latency");
  const Duration proposed = r.duration("proposed duration");
  if (r.flags() & kHasProposedDuration) {
    m.proposed_duration = proposed;
  } else if (proposed != Duration::zero()) {
    reject(name, "a proposed duration of " + std::to_string(proposed.count()) + " ns without its flag");
  }
  return m;
}

ProposalRequest decode_proposal_request(std::span<const std::byte> bytes) {
  const char* name = "DFS proposal request";
  Reader r(name, bytes, MessageType::proposal_request, kProposalRequestSize);
  if (r.flags() != 0) reject(name, "unknown flags " + std::to_string(r.flags()));
  ProposalRequest m;
  m.input = r.u32();
  m.interval = r.u64();
  return m;
}

Proposal decode_proposal(std::span<const std::byte> bytes) {
  const char* name = "DFS proposal";
  Reader r(name, bytes, MessageType::proposal, kProposalSize);
  if ((r.flags() & ~kBestEffort) != 0) reject(name, "unknown flags " + std::to_string(r.flags()));
  Proposal m;
  m.best_effort = (r.flags() & kBestEffort) != 0;
  m.interval = r.u64();
  m.start = Time{r.i64()};
  m.duration = r.duration("duration");
  if (m.duration == Duration::zero()) reject(name, "duration is 0 ns");
  return m;
}

ClockProbe decode_clock_probe(std::span<const std::byte> bytes) {
  const char* name = "DFS clock probe";
  Reader r(name, bytes, MessageType::clock_probe, kClockProbeSize);
  if ((r.flags() & ~(kHasRoundTrip | kIsSample)) != 0) reject(name, "unknown flags " + std::to_string(r.flags()));
  if ((r.flags() & kHasRoundTrip) && (r.flags() & kIsSample)) reject(name, "a sample with a round trip");
  ClockProbe m;
  m.sample = (r.flags() & kIsSample) != 0;
  m.input = r.u32();
  m.sequence = r.u32();
  m.sent_at = Time{r.i64()};
  const Duration round_trip = r.duration("round trip");
  if (r.flags() & kHasRoundTrip) {
    m.previous_round_trip = round_trip;
  } else if (round_trip != Duration::zero()) {
    reject(name, "a round trip of " + std::to_string(round_trip.count()) + " ns without its flag");
  }
  return m;
}

ClockEcho decode_clock_echo(std::span<const std::byte> bytes) {
  const char* name = "DFS clock echo";
  Reader r(name, bytes, MessageType::clock_echo, kClockEchoSize);
  if (r.flags() != 0) reject(name, "unknown flags " + std::to_string(r.flags()));
  ClockEcho m;
  m.sequence = r.u32();
  if (const auto reserved = r.u32(); reserved != 0) reject(name, "reserved field is " + std::to_string(reserved));
  m.probe_sent_at = Time{r.i64()};
  m.received_at = Time{r.i64()};
  return m;
}

}  // namespace netio::scheduler
