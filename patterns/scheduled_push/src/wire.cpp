// SPDX-License-Identifier: MIT
#include "netio/scheduled_push/wire.hpp"

#include "netio/error.hpp"

#include <algorithm>
#include <cstring>

namespace netio::scheduled_push {
namespace {

constexpr std::uint8_t kVersion = 1;
constexpr std::uint8_t kDfsFlag = 0x01;       // Hello: the input runs in DFS mode
constexpr std::uint8_t kCompleteFlag = 0x01;  // Credit: the time-slice was complete

[[noreturn]] void reject(const char* message, const std::string& what) {
  throw Error(Errc::protocol_error, std::string("scheduled push ") + message + ": " + what);
}

class Writer {
 public:
  Writer(std::span<std::byte> out, WireType type, std::uint8_t flags) : out_(out) {
    put(static_cast<std::uint8_t>(type), 1);
    put(kVersion, 1);
    put(flags, 1);
    put(0, 1);
  }
  void put(std::uint64_t value, int width) {
    for (int k = 0; k < width; ++k) out_[at_++] = std::byte{static_cast<std::uint8_t>(value >> (8 * k))};
  }

 private:
  std::span<std::byte> out_;
  std::size_t at_ = 0;
};

// Checks type, version, reserved byte and (unless `at_least`) the exact size.
class Reader {
 public:
  Reader(const char* message, std::span<const std::byte> bytes, WireType type, std::size_t size, std::uint8_t flags_allowed,
         bool at_least = false)
      : message_(message), bytes_(bytes) {
    if (at_least ? bytes.size() < size : bytes.size() != size) {
      reject(message, std::to_string(bytes.size()) + " bytes, expected " + (at_least ? "at least " : "") + std::to_string(size));
    }
    if (static_cast<std::uint8_t>(bytes[0]) != static_cast<std::uint8_t>(type)) {
      reject(message, "type byte " + std::to_string(static_cast<unsigned>(bytes[0])));
    }
    if (static_cast<std::uint8_t>(bytes[1]) != kVersion) {
      reject(message, "version " + std::to_string(static_cast<unsigned>(bytes[1])) + ", this side speaks 1");
    }
    if ((static_cast<std::uint8_t>(bytes[2]) & ~flags_allowed) != 0) {
      reject(message, "unknown flags " + std::to_string(static_cast<unsigned>(bytes[2])));
    }
    if (bytes[3] != std::byte{0}) reject(message, "reserved byte is " + std::to_string(static_cast<unsigned>(bytes[3])));
    at_ = 4;
  }
  std::uint8_t flags() const { return static_cast<std::uint8_t>(bytes_[2]); }
  std::uint64_t get(int width) {
    std::uint64_t value = 0;
    for (int k = 0; k < width; ++k) value |= std::uint64_t{static_cast<std::uint8_t>(bytes_[at_++])} << (8 * k);
    return value;
  }
  const char* message() const { return message_; }

 private:
  const char* message_;
  std::span<const std::byte> bytes_;
  std::size_t at_ = 0;
};

}  // namespace

std::array<std::byte, kHelloSize> encode(const Hello& hello) {
  std::array<std::byte, kHelloSize> out{};
  Writer w(out, WireType::hello, hello.mode == Mode::dfs ? kDfsFlag : 0);
  w.put(hello.input, 4);
  w.put(hello.compute, 4);
  w.put(hello.input_count, 4);
  w.put(hello.compute_count, 4);
  w.put(hello.timeslices_per_interval, 8);
  w.put(hello.max_contribution_bytes, 8);
  return out;
}

std::vector<std::byte> encode_contribution(InputIndex input, TimesliceIndex t, std::span<const std::byte> bytes) {
  std::vector<std::byte> out(kContributionHeaderSize + bytes.size());
  Writer w(out, WireType::contribution, 0);
  w.put(input, 4);
  w.put(t, 8);
  w.put(bytes.size(), 8);
  if (!bytes.empty()) std::memcpy(out.data() + kContributionHeaderSize, bytes.data(), bytes.size());
  return out;
}

std::array<std::byte, kWelcomeSize> encode(const Welcome& welcome) {
  std::array<std::byte, kWelcomeSize> out{};
  Writer w(out, WireType::welcome, 0);
  w.put(welcome.compute, 4);
  w.put(welcome.credits, 4);
  return out;
}

std::vector<std::byte> encode_refusal(const std::string& reason) {
  const std::size_t length = std::min(reason.size(), kMaxRefusalText);
  std::vector<std::byte> out(6 + length);
  Writer w(out, WireType::refusal, 0);
  w.put(length, 2);
  std::memcpy(out.data() + 6, reason.data(), length);
  return out;
}

std::array<std::byte, kAcknowledgementSize> encode_acknowledgement(TimesliceIndex t) {
  std::array<std::byte, kAcknowledgementSize> out{};
  Writer w(out, WireType::acknowledgement, 0);
  w.put(t, 8);
  return out;
}

std::array<std::byte, kCreditSize> encode(const Credit& credit) {
  std::array<std::byte, kCreditSize> out{};
  Writer w(out, WireType::credit, credit.complete ? kCompleteFlag : 0);
  w.put(credit.timeslice, 8);
  return out;
}

WireType wire_type(std::span<const std::byte> bytes) {
  if (bytes.empty()) reject("message", "empty");
  const auto type = static_cast<std::uint8_t>(bytes[0]);
  if (type < static_cast<std::uint8_t>(WireType::hello) || type > static_cast<std::uint8_t>(WireType::credit)) {
    reject("message", "unknown type byte " + std::to_string(type));
  }
  return static_cast<WireType>(type);
}

Hello decode_hello(std::span<const std::byte> bytes) {
  Reader r("hello", bytes, WireType::hello, kHelloSize, kDfsFlag);
  Hello hello;
  hello.mode = (r.flags() & kDfsFlag) != 0 ? Mode::dfs : Mode::best_effort;
  hello.input = static_cast<InputIndex>(r.get(4));
  hello.compute = static_cast<ComputeIndex>(r.get(4));
  hello.input_count = static_cast<std::uint32_t>(r.get(4));
  hello.compute_count = static_cast<std::uint32_t>(r.get(4));
  hello.timeslices_per_interval = r.get(8);
  hello.max_contribution_bytes = r.get(8);
  return hello;
}

ContributionHeader decode_contribution(std::span<const std::byte> bytes) {
  Reader r("contribution", bytes, WireType::contribution, kContributionHeaderSize, 0, true);
  ContributionHeader header;
  header.input = static_cast<InputIndex>(r.get(4));
  header.timeslice = r.get(8);
  header.length = r.get(8);
  if (header.length != bytes.size() - kContributionHeaderSize) {
    reject("contribution", "length field " + std::to_string(header.length) + " but " +
                               std::to_string(bytes.size() - kContributionHeaderSize) + " bytes follow");
  }
  return header;
}

Welcome decode_welcome(std::span<const std::byte> bytes) {
  Reader r("welcome", bytes, WireType::welcome, kWelcomeSize, 0);
  Welcome welcome;
  welcome.compute = static_cast<ComputeIndex>(r.get(4));
  welcome.credits = static_cast<std::uint32_t>(r.get(4));
  if (welcome.credits == 0) reject("welcome", "grants 0 credits");
  return welcome;
}

std::string decode_refusal(std::span<const std::byte> bytes) {
  Reader r("refusal", bytes, WireType::refusal, 6, 0, true);
  const auto length = r.get(2);
  if (length > kMaxRefusalText || length != bytes.size() - 6) {
    reject("refusal", "text length " + std::to_string(length) + " but " + std::to_string(bytes.size() - 6) + " bytes follow");
  }
  return {reinterpret_cast<const char*>(bytes.data() + 6), length};
}

TimesliceIndex decode_acknowledgement(std::span<const std::byte> bytes) {
  Reader r("acknowledgement", bytes, WireType::acknowledgement, kAcknowledgementSize, 0);
  return r.get(8);
}

Credit decode_credit(std::span<const std::byte> bytes) {
  Reader r("credit", bytes, WireType::credit, kCreditSize, kCompleteFlag);
  Credit credit;
  credit.complete = (r.flags() & kCompleteFlag) != 0;
  credit.timeslice = r.get(8);
  return credit;
}

}  // namespace netio::scheduled_push
