#include "netio/scheduler/control_messages.hpp"

#include "netio/error.hpp"

#include <string>

namespace netio::scheduler {
namespace {

constexpr std::uint8_t kVersion = 1;
constexpr std::uint8_t kHasProposedDuration = 0x01;  // metadata report flag
constexpr std::size_t kHeaderSize = 4;

[[noreturn]] void reject(const char* message, const std::string& what) {
  throw Error(std::make_error_code(std::errc::bad_message), std::string(message) + ": " + what);
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
  std::array<std::byte, N> finish() const { return bytes_; }  // every byte was written: sizes are constants

 private:
  void put_byte(std::uint8_t value) { bytes_[at_++] = std::byte{value}; }
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
  Writer<kProposalSize> w(MessageType::proposal, 0);
  w.u64(m.interval);
  w.i64(m.start.count());
  w.i64(m.duration.count());
  return w.finish();
}

MessageType message_type(std::span<const std::byte> bytes) {
  if (bytes.empty()) reject("DFS control message", "empty");
  const auto type = static_cast<unsigned>(bytes[0]);
  if (type < 1 || type > 3) reject("DFS control message", "unknown type byte " + std::to_string(type));
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
  if (r.flags() != 0) reject(name, "unknown flags " + std::to_string(r.flags()));
  Proposal m;
  m.interval = r.u64();
  m.start = Time{r.i64()};
  m.duration = r.duration("duration");
  if (m.duration == Duration::zero()) reject(name, "duration is 0 ns");
  return m;
}

}  // namespace netio::scheduler
