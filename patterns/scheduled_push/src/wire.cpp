// SPDX-License-Identifier: MIT
#include "netio/scheduled_push/wire.hpp"

#include "netio/error.hpp"
#include "netio/internal/wire_codec.hpp"

#include <algorithm>
#include <cstring>

namespace netio::scheduled_push {
namespace {

using detail::WireReader;
using detail::WireWriter;

constexpr std::uint8_t version = 1;
constexpr std::uint8_t dfs_flag = 0x01;       // Hello: the input runs in DFS mode
constexpr std::uint8_t standby_flag = 0x02;   // Hello: the input is on standby
constexpr std::uint8_t complete_flag = 0x01;  // Credit: the time-slice was complete
constexpr std::uint8_t joins_flag = 0x01;     // Membership: the slot joins (else leaves)

// The 4-byte header (wire_codec.hpp), then the fields.
class Writer : public WireWriter {
 public:
  Writer(std::span<std::byte> out, WireType type, std::uint8_t flags) : WireWriter(out) {
    put_header(static_cast<std::uint8_t>(type), version, flags);
  }
};

// Checks the size (exact, or at least `size` when `at_least`) and the header.
class Reader : public WireReader {
 public:
  Reader(const char* message, std::span<const std::byte> bytes, WireType type, std::size_t size,
         std::uint8_t flags_allowed, bool at_least = false)
      : WireReader(bytes, message) {
    if (at_least) {
      expect_at_least(size);
    } else {
      expect_size(size);
    }
    flags_ = get_header(static_cast<std::uint8_t>(type), version, flags_allowed);
  }
  std::uint8_t flags() const { return flags_; }

 private:
  std::uint8_t flags_ = 0;
};

}  // namespace

std::array<std::byte, hello_size> encode(const Hello& hello) {
  std::array<std::byte, hello_size> out{};
  Writer w(out, WireType::hello, (hello.mode == Mode::dfs ? dfs_flag : 0) | (hello.standby ? standby_flag : 0));
  w.put<std::uint32_t>(hello.input);
  w.put<std::uint32_t>(hello.compute);
  w.put<std::uint32_t>(hello.input_count);
  w.put<std::uint32_t>(hello.compute_count);
  w.put<std::uint64_t>(hello.timeslices_per_interval);
  w.put<std::uint64_t>(hello.max_contribution_bytes);
  return out;
}

std::vector<std::byte> encode_contribution(InputIndex input, TimesliceIndex t, std::span<const std::byte> bytes,
                                           std::uint8_t attempt) {
  std::vector<std::byte> out(contribution_header_size + bytes.size());
  Writer w(out, WireType::contribution, attempt);
  w.put<std::uint32_t>(input);
  w.put<std::uint64_t>(t);
  w.put<std::uint64_t>(bytes.size());
  if (!bytes.empty()) std::memcpy(out.data() + contribution_header_size, bytes.data(), bytes.size());
  return out;
}

void set_contribution_attempt(std::span<std::byte> contribution, std::uint8_t attempt) {
  if (contribution.size() < contribution_header_size) {
    throw Error(Errc::invalid_option, "set_contribution_attempt: not an encoded contribution");
  }
  contribution[2] = static_cast<std::byte>(attempt);  // the header's flags byte
}

std::vector<std::byte> encode(const LostCompute& lost) {
  if (lost.built.size() > max_lost_built) {
    throw Error(Errc::invalid_option, "lost compute message: " + std::to_string(lost.built.size()) +
                                          " time-slices, at most " + std::to_string(max_lost_built));
  }
  std::vector<std::byte> out(lost_compute_header_size + 8 * lost.built.size());
  Writer w(out, WireType::lost_compute, 0);
  w.put<std::uint32_t>(lost.compute);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(lost.built.size()));
  for (const auto t : lost.built) w.put<std::uint64_t>(t);
  return out;
}

std::array<std::byte, welcome_size> encode(const Welcome& welcome) {
  std::array<std::byte, welcome_size> out{};
  Writer w(out, WireType::welcome, 0);
  w.put<std::uint32_t>(welcome.compute);
  w.put<std::uint32_t>(welcome.credits);
  return out;
}

std::vector<std::byte> encode_refusal(const std::string& reason) {
  const std::size_t length = std::min(reason.size(), max_refusal_text);
  std::vector<std::byte> out(6 + length);
  Writer w(out, WireType::refusal, 0);
  w.put<std::uint16_t>(length);
  std::memcpy(out.data() + 6, reason.data(), length);
  return out;
}

std::array<std::byte, acknowledgement_size> encode_acknowledgement(TimesliceIndex t) {
  std::array<std::byte, acknowledgement_size> out{};
  Writer w(out, WireType::acknowledgement, 0);
  w.put<std::uint64_t>(t);
  return out;
}

std::array<std::byte, credit_size> encode(const Credit& credit) {
  std::array<std::byte, credit_size> out{};
  Writer w(out, WireType::credit, credit.complete ? complete_flag : 0);
  w.put<std::uint64_t>(credit.timeslice);
  return out;
}

std::array<std::byte, membership_size> encode(const scheduler::MembershipChange& change) {
  std::array<std::byte, membership_size> out{};
  Writer w(out, WireType::membership, change.joins ? joins_flag : 0);
  w.put<std::uint32_t>(change.compute);
  w.put<std::uint64_t>(change.from);
  return out;
}

scheduler::MembershipChange decode_membership(std::span<const std::byte> bytes) {
  Reader r("scheduled push membership", bytes, WireType::membership, membership_size, joins_flag);
  scheduler::MembershipChange change;
  change.joins = (r.flags() & joins_flag) != 0;
  change.compute = static_cast<ComputeIndex>(r.get<std::uint32_t>("compute"));
  change.from = r.get<std::uint64_t>("from");
  return change;
}

std::array<std::byte, input_join_size> encode(const InputJoin& join) {
  std::array<std::byte, input_join_size> out{};
  Writer w(out, WireType::input_join, 0);
  w.put<std::uint32_t>(join.input);
  w.put<std::uint64_t>(join.from);
  return out;
}

InputJoin decode_input_join(std::span<const std::byte> bytes) {
  Reader r("scheduled push input join", bytes, WireType::input_join, input_join_size, 0);
  InputJoin join;
  join.input = static_cast<InputIndex>(r.get<std::uint32_t>("input"));
  join.from = r.get<std::uint64_t>("from");
  return join;
}

WireType wire_type(std::span<const std::byte> bytes) {
  WireReader r(bytes, "scheduled push message");
  if (bytes.empty()) r.fail("empty");
  const auto type = r.get<std::uint8_t>("type");
  if (type < static_cast<std::uint8_t>(WireType::hello) || type > static_cast<std::uint8_t>(WireType::input_join)) {
    r.fail("unknown type byte " + std::to_string(type));
  }
  return static_cast<WireType>(type);
}

Hello decode_hello(std::span<const std::byte> bytes) {
  Reader r("scheduled push hello", bytes, WireType::hello, hello_size, dfs_flag | standby_flag);
  Hello hello;
  hello.mode = (r.flags() & dfs_flag) != 0 ? Mode::dfs : Mode::best_effort;
  hello.standby = (r.flags() & standby_flag) != 0;
  hello.input = static_cast<InputIndex>(r.get<std::uint32_t>("input"));
  hello.compute = static_cast<ComputeIndex>(r.get<std::uint32_t>("compute"));
  hello.input_count = r.get<std::uint32_t>("input count");
  hello.compute_count = r.get<std::uint32_t>("compute count");
  hello.timeslices_per_interval = r.get<std::uint64_t>("timeslices per interval");
  hello.max_contribution_bytes = r.get<std::uint64_t>("max contribution bytes");
  return hello;
}

ContributionHeader decode_contribution(std::span<const std::byte> bytes) {
  Reader r("scheduled push contribution", bytes, WireType::contribution, contribution_header_size, max_attempt, true);
  ContributionHeader header;
  header.attempt = r.flags();
  header.input = static_cast<InputIndex>(r.get<std::uint32_t>("input"));
  header.timeslice = r.get<std::uint64_t>("timeslice");
  header.length = r.get<std::uint64_t>("length");
  if (header.length != bytes.size() - contribution_header_size) {
    r.fail("length field " + std::to_string(header.length) + " but " +
           std::to_string(bytes.size() - contribution_header_size) + " bytes follow");
  }
  return header;
}

Welcome decode_welcome(std::span<const std::byte> bytes) {
  Reader r("scheduled push welcome", bytes, WireType::welcome, welcome_size, 0);
  Welcome welcome;
  welcome.compute = static_cast<ComputeIndex>(r.get<std::uint32_t>("compute"));
  welcome.credits = r.get<std::uint32_t>("credits");
  if (welcome.credits == 0) r.fail("grants 0 credits");
  return welcome;
}

std::string decode_refusal(std::span<const std::byte> bytes) {
  Reader r("scheduled push refusal", bytes, WireType::refusal, 6, 0, true);
  const auto length = r.get<std::uint16_t>("text length");
  if (length > max_refusal_text || length != bytes.size() - 6) {
    r.fail("text length " + std::to_string(length) + " but " + std::to_string(bytes.size() - 6) + " bytes follow");
  }
  return {reinterpret_cast<const char*>(bytes.data() + 6), length};
}

TimesliceIndex decode_acknowledgement(std::span<const std::byte> bytes) {
  Reader r("scheduled push acknowledgement", bytes, WireType::acknowledgement, acknowledgement_size, 0);
  return r.get<std::uint64_t>("timeslice");
}

Credit decode_credit(std::span<const std::byte> bytes) {
  Reader r("scheduled push credit", bytes, WireType::credit, credit_size, complete_flag);
  Credit credit;
  credit.complete = (r.flags() & complete_flag) != 0;
  credit.timeslice = r.get<std::uint64_t>("timeslice");
  return credit;
}

LostCompute decode_lost_compute(std::span<const std::byte> bytes) {
  Reader r("scheduled push lost compute", bytes, WireType::lost_compute, lost_compute_header_size, 0, true);
  LostCompute lost;
  lost.compute = static_cast<ComputeIndex>(r.get<std::uint32_t>("compute"));
  const auto count = r.get<std::uint32_t>("count");
  if (count > max_lost_built || bytes.size() != lost_compute_header_size + 8 * std::size_t{count}) {
    r.fail(std::to_string(count) + " time-slices but " + std::to_string(bytes.size()) + " bytes");
  }
  lost.built.resize(count);
  for (auto& t : lost.built) t = r.get<std::uint64_t>("timeslice");
  return lost;
}

}  // namespace netio::scheduled_push
