// SPDX-License-Identifier: MIT
#include "netio/scheduler/control_messages.hpp"

#include "netio/internal/wire_codec.hpp"

#include <stdexcept>
#include <string>

namespace netio::scheduler {
namespace {

using detail::WireReader;
using detail::WireWriter;

constexpr std::uint8_t version = 1;
constexpr std::uint8_t has_proposed_duration = 0x01;  // metadata report flag
constexpr std::uint8_t has_probe = 0x02;              // metadata report flag: probe_acknowledged
constexpr std::uint8_t has_round_trip = 0x01;         // clock probe flag
constexpr std::uint8_t is_sample = 0x02;              // clock probe flag: an interval-start sample
constexpr std::uint8_t best_effort_flag = 0x01;       // proposal flag: the fallback (extension 7)
constexpr std::uint8_t gated_flag = 0x02;             // proposal flag: best-effort with the θ gate (extension 10)

// Fixed-size messages: the 4-byte header, then the fields (wire_codec.hpp).
template <std::size_t N>
class Writer {
 public:
  Writer(MessageType type, std::uint8_t flags) { w_.put_header(static_cast<std::uint8_t>(type), version, flags); }
  Writer(const Writer&) = delete;  // w_ writes into this object's bytes_
  Writer& operator=(const Writer&) = delete;
  void u32(std::uint32_t value) { w_.put(value); }
  void u64(std::uint64_t value) { w_.put(value); }
  void i64(std::int64_t value) { w_.put(value); }
  // Every byte written, none beyond: a size constant that disagrees with the fields is a bug here.
  std::array<std::byte, N> finish() const {
    if (w_.written() != N)
      throw std::logic_error("control message encoder: wrote " + std::to_string(w_.written()) + " of " +
                             std::to_string(N) + " bytes");
    return bytes_;
  }

 private:
  std::array<std::byte, N> bytes_{};
  WireWriter w_{bytes_};
};

// Reads what Writer wrote, after checking size and header.
class Reader {
 public:
  Reader(const char* message, std::span<const std::byte> bytes, MessageType type, std::size_t size,
         std::uint8_t flags_allowed)
      : r_(bytes, message) {
    r_.expect_size(size);
    flags_ = r_.get_header(static_cast<std::uint8_t>(type), version, flags_allowed);
  }
  std::uint8_t flags() const { return flags_; }
  std::uint32_t u32() { return r_.get<std::uint32_t>("u32"); }
  std::uint64_t u64() { return r_.get<std::uint64_t>("u64"); }
  std::int64_t i64() { return r_.get<std::int64_t>("i64"); }
  Duration duration(const char* field) {
    const Duration value{r_.get<std::int64_t>(field)};
    if (value < Duration::zero()) fail(std::string(field) + " is negative (" + std::to_string(value.count()) + " ns)");
    return value;
  }
  [[noreturn]] void fail(std::string_view reason) const { r_.fail(reason); }

 private:
  WireReader r_;
  std::uint8_t flags_ = 0;
};

}  // namespace

std::array<std::byte, metadata_report_size> encode(const MetadataReport& m) {
  Writer<metadata_report_size> w(MessageType::metadata_report,
                                 static_cast<std::uint8_t>((m.proposed_duration ? has_proposed_duration : 0) |
                                                           (m.probe_acknowledged ? has_probe : 0)));
  w.u32(m.input);
  w.u64(m.interval);
  w.i64(m.start.count());
  w.i64(m.duration.count());
  w.i64(m.median_ack_latency.count());
  w.i64(m.proposed_duration ? m.proposed_duration->count() : 0);
  w.i64(m.probe_acknowledged ? m.probe_acknowledged->count() : 0);
  return w.finish();
}

std::array<std::byte, proposal_request_size> encode(const ProposalRequest& m) {
  Writer<proposal_request_size> w(MessageType::proposal_request, 0);
  w.u32(m.input);
  w.u64(m.interval);
  return w.finish();
}

std::array<std::byte, proposal_size> encode(const Proposal& m) {
  Writer<proposal_size> w(MessageType::proposal, static_cast<std::uint8_t>((m.best_effort ? best_effort_flag : 0) |
                                                                           (m.gated ? gated_flag : 0)));
  w.u64(m.interval);
  w.i64(m.start.count());
  w.i64(m.duration.count());
  return w.finish();
}

// Clock probe: u32 input, u32 sequence, i64 sent_at, i64 previous round trip (flag bit 0).
std::array<std::byte, clock_probe_size> encode(const ClockProbe& m) {
  Writer<clock_probe_size> w(
      MessageType::clock_probe,
      static_cast<std::uint8_t>((m.previous_round_trip ? has_round_trip : 0) | (m.sample ? is_sample : 0)));
  w.u32(m.input);
  w.u32(m.sequence);
  w.i64(m.sent_at.count());
  w.i64(m.previous_round_trip ? m.previous_round_trip->count() : 0);
  return w.finish();
}

// Clock echo: u32 sequence, u32 0, i64 probe_sent_at, i64 received_at.
std::array<std::byte, clock_echo_size> encode(const ClockEcho& m) {
  Writer<clock_echo_size> w(MessageType::clock_echo, 0);
  w.u32(m.sequence);
  w.u32(0);
  w.i64(m.probe_sent_at.count());
  w.i64(m.received_at.count());
  return w.finish();
}

MessageType message_type(std::span<const std::byte> bytes) {
  WireReader r(bytes, "DFS control message");
  if (bytes.empty()) r.fail("empty");
  const auto type = r.get<std::uint8_t>("type");
  if (type < 1 || type > 5) r.fail("unknown type byte " + std::to_string(type));
  return static_cast<MessageType>(type);
}

MetadataReport decode_metadata_report(std::span<const std::byte> bytes) {
  const char* name = "DFS meta-data report";
  Reader r(name, bytes, MessageType::metadata_report, metadata_report_size, has_proposed_duration | has_probe);
  MetadataReport m;
  m.input = r.u32();
  m.interval = r.u64();
  m.start = Time{r.i64()};
  m.duration = r.duration("duration");
  m.median_ack_latency = r.duration("median acknowledgement latency");
  const Duration proposed = r.duration("proposed duration");
  if (r.flags() & has_proposed_duration) {
    m.proposed_duration = proposed;
  } else if (proposed != Duration::zero()) {
    r.fail("a proposed duration of " + std::to_string(proposed.count()) + " ns without its flag");
  }
  const Duration probe = r.duration("probe acknowledgement");
  if (r.flags() & has_probe) {
    m.probe_acknowledged = probe;
  } else if (probe != Duration::zero()) {
    r.fail("a probe acknowledgement of " + std::to_string(probe.count()) + " ns without its flag");
  }
  return m;
}

ProposalRequest decode_proposal_request(std::span<const std::byte> bytes) {
  const char* name = "DFS proposal request";
  Reader r(name, bytes, MessageType::proposal_request, proposal_request_size, 0);
  ProposalRequest m;
  m.input = r.u32();
  m.interval = r.u64();
  return m;
}

Proposal decode_proposal(std::span<const std::byte> bytes) {
  const char* name = "DFS proposal";
  Reader r(name, bytes, MessageType::proposal, proposal_size, best_effort_flag | gated_flag);
  Proposal m;
  m.best_effort = (r.flags() & best_effort_flag) != 0;
  m.gated = (r.flags() & gated_flag) != 0;
  if (m.gated && !m.best_effort) r.fail("the θ gate flag without best-effort's");
  m.interval = r.u64();
  m.start = Time{r.i64()};
  m.duration = r.duration("duration");
  if (m.duration == Duration::zero()) r.fail("duration is 0 ns");
  return m;
}

ClockProbe decode_clock_probe(std::span<const std::byte> bytes) {
  const char* name = "DFS clock probe";
  Reader r(name, bytes, MessageType::clock_probe, clock_probe_size, has_round_trip | is_sample);
  if ((r.flags() & has_round_trip) && (r.flags() & is_sample)) r.fail("a sample with a round trip");
  ClockProbe m;
  m.sample = (r.flags() & is_sample) != 0;
  m.input = r.u32();
  m.sequence = r.u32();
  m.sent_at = Time{r.i64()};
  const Duration round_trip = r.duration("round trip");
  if (r.flags() & has_round_trip) {
    m.previous_round_trip = round_trip;
  } else if (round_trip != Duration::zero()) {
    r.fail("a round trip of " + std::to_string(round_trip.count()) + " ns without its flag");
  }
  return m;
}

ClockEcho decode_clock_echo(std::span<const std::byte> bytes) {
  const char* name = "DFS clock echo";
  Reader r(name, bytes, MessageType::clock_echo, clock_echo_size, 0);
  ClockEcho m;
  m.sequence = r.u32();
  if (const auto reserved = r.u32(); reserved != 0) r.fail("reserved field is " + std::to_string(reserved));
  m.probe_sent_at = Time{r.i64()};
  m.received_at = Time{r.i64()};
  return m;
}

}  // namespace netio::scheduler
