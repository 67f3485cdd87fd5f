// SPDX-License-Identifier: MIT
// The DFS control messages: round trips, the exact byte layout, and rejection of truncated,
// extended and garbage input.
#include "netio/error.hpp"
#include "netio/scheduler/control_messages.hpp"

#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

using namespace netio::scheduler;
using namespace std::chrono_literals;

namespace {

template <std::size_t N>
std::vector<std::byte> bytes_of(const std::array<std::byte, N>& a) {
  return {a.begin(), a.end()};
}

std::vector<std::byte> bytes_of(std::initializer_list<int> values) {
  std::vector<std::byte> out;
  for (const int v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

template <typename Decode>
void require_bad_message(Decode decode, const std::vector<std::byte>& bytes, const std::string& text) {
  try {
    decode(std::span<const std::byte>(bytes));
    FAIL("decoded input that should fail with: " << text);
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::protocol_error);
    CHECK_THAT(e.what(), Catch::Contains(text));
  }
}

MetadataReport sample_report() {
  MetadataReport r;
  r.input = 7;
  r.interval = 123456789012ULL;
  r.start = Time{-5'000};  // times may be negative: the epoch is arbitrary
  r.duration = 2'500'000ns;
  r.median_ack_latency = 40'000ns;
  r.proposed_duration = 2'400'000ns;
  return r;
}

}  // namespace

TEST_CASE("scheduler messages: round trips", "[scheduler]") {
  MetadataReport report = sample_report();
  CHECK(decode_metadata_report(encode(report)) == report);
  report.proposed_duration.reset();
  CHECK(decode_metadata_report(encode(report)) == report);
  report.probe_acknowledged = 1'300'000ns;  // extension 10
  CHECK(decode_metadata_report(encode(report)) == report);

  const ProposalRequest request{3, 42};
  CHECK(decode_proposal_request(encode(request)) == request);

  const Proposal proposal{44, Time{1'700'000'000'000'000'000}, 1'234'567ns};
  CHECK(decode_proposal(encode(proposal)) == proposal);

  CHECK(message_type(encode(sample_report())) == MessageType::metadata_report);
  CHECK(message_type(encode(request)) == MessageType::proposal_request);
  CHECK(message_type(encode(proposal)) == MessageType::proposal);
}

TEST_CASE("scheduler messages: the byte layout is little-endian with a 4-byte header", "[scheduler]") {
  // type 2, version 1, flags 0, reserved 0 | input 2 (u32) | interval 0x0102030405060708 (u64)
  CHECK(bytes_of(encode(ProposalRequest{2, 0x0102030405060708ULL})) ==
        bytes_of({2, 1, 0, 0, 2, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1}));
  // type 3 | interval 1 | start -1 (all ones) | duration 256
  CHECK(bytes_of(encode(Proposal{1, Time{-1}, 256ns})) ==
        bytes_of({3, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,  //
                  0, 1, 0, 0, 0, 0, 0, 0}));
  const auto report = bytes_of(encode(sample_report()));
  REQUIRE(report.size() == 56);
  CHECK(report[2] == std::byte{1});  // the flag: a proposed duration follows
  // proposed duration 2,400,000 = 0x249F00 in bytes 40..47, then the probe's acknowledgement
  // (none: 0, its flag bit 1 clear)
  CHECK(std::vector<std::byte>(report.begin() + 40, report.end()) ==
        bytes_of({0x00, 0x9f, 0x24, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST_CASE("scheduler messages: truncated and extended buffers are rejected with their size", "[scheduler]") {
  const auto report = bytes_of(encode(sample_report()));
  for (std::size_t size = 0; size < report.size(); ++size) {
    require_bad_message(decode_metadata_report, std::vector<std::byte>(report.begin(), report.begin() + size),
                        std::to_string(size) + " bytes, expected 56");
  }
  auto longer = report;
  longer.push_back(std::byte{0});
  require_bad_message(decode_metadata_report, longer, "57 bytes, expected 56");

  const auto request = bytes_of(encode(ProposalRequest{1, 2}));
  for (std::size_t size = 0; size < request.size(); ++size) {
    require_bad_message(decode_proposal_request, std::vector<std::byte>(request.begin(), request.begin() + size),
                        "expected 16");
  }
  const auto proposal = bytes_of(encode(Proposal{1, Time{2}, 3ns}));
  for (std::size_t size = 0; size < proposal.size(); ++size) {
    require_bad_message(decode_proposal, std::vector<std::byte>(proposal.begin(), proposal.begin() + size),
                        "expected 28");
  }
}

TEST_CASE("scheduler messages: wrong type, version, flags, reserved byte and values are rejected", "[scheduler]") {
  const auto report = bytes_of(encode(sample_report()));
  auto bad = report;
  bad[0] = std::byte{3};
  require_bad_message(decode_metadata_report, bad, "type byte 3, expected 1");
  bad = report;
  bad[1] = std::byte{2};
  require_bad_message(decode_metadata_report, bad, "version 2");
  bad = report;
  bad[2] = std::byte{0x81};
  require_bad_message(decode_metadata_report, bad, "unknown flags 129");
  bad = report;
  bad[3] = std::byte{9};
  require_bad_message(decode_metadata_report, bad, "reserved byte is 9");
  bad = report;
  bad[31] = std::byte{0x80};  // the top byte of the duration (bytes 24..31): negative
  require_bad_message(decode_metadata_report, bad, "duration is negative");
  bad = report;
  bad[2] = std::byte{0};  // the flag cleared, the value still there
  require_bad_message(decode_metadata_report, bad, "a proposed duration of 2400000 ns without its flag");
  bad = report;
  bad[48] = std::byte{1};  // a probe acknowledgement without flag bit 1
  require_bad_message(decode_metadata_report, bad, "a probe acknowledgement of 1 ns without its flag");

  require_bad_message(decode_proposal, bytes_of(encode(Proposal{1, Time{2}, 0ns})), "duration is 0 ns");
  auto request = bytes_of(encode(ProposalRequest{1, 2}));
  request[2] = std::byte{1};
  require_bad_message(decode_proposal_request, request, "unknown flags 1");

  require_bad_message(message_type, {}, "empty");
  require_bad_message(message_type, bytes_of({0, 1, 0, 0}), "unknown type byte 0");
  require_bad_message(message_type, bytes_of({6}), "unknown type byte 6");
}

TEST_CASE("scheduler messages: random garbage decodes or fails with bad_message, never otherwise", "[scheduler]") {
  std::mt19937 random(17);
  int rejected = 0;
  for (int n = 0; n < 20'000; ++n) {
    std::vector<std::byte> bytes(random() % 60);
    for (auto& b : bytes) b = static_cast<std::byte>(random());
    if (!bytes.empty() && n % 2 == 0) bytes[0] = static_cast<std::byte>(1 + n % 5);  // reach the decoders' checks
    try {
      switch (message_type(bytes)) {
        case MessageType::metadata_report: (void)decode_metadata_report(bytes); break;
        case MessageType::proposal_request: (void)decode_proposal_request(bytes); break;
        case MessageType::proposal: (void)decode_proposal(bytes); break;
        case MessageType::clock_probe: (void)decode_clock_probe(bytes); break;
        case MessageType::clock_echo: (void)decode_clock_echo(bytes); break;
      }
    } catch (const netio::Error& e) {
      REQUIRE(e.code() == netio::Errc::protocol_error);
      ++rejected;
    }
  }
  CHECK(rejected > 19'000);  // sizes are exact and versions checked: almost everything is refused
}

TEST_CASE("scheduler control messages: the clock handshake's probe and echo", "[scheduler]") {
  const ClockProbe first{7, 0, Time{-123'456}, std::nullopt};
  const ClockProbe second{7, 1, Time{1'000'000}, 2'500ns};
  CHECK(decode_clock_probe(bytes_of(encode(first))) == first);
  CHECK(decode_clock_probe(bytes_of(encode(second))) == second);
  const ClockEcho echo{1, Time{1'000'000}, Time{-5}};
  CHECK(decode_clock_echo(bytes_of(encode(echo))) == echo);
  CHECK(message_type(bytes_of(encode(first))) == MessageType::clock_probe);
  CHECK(message_type(bytes_of(encode(echo))) == MessageType::clock_echo);
  // layout: [4][1][flags][0] u32 input, u32 sequence, i64 sent_at, i64 round trip
  const auto bytes = bytes_of(encode(second));
  REQUIRE(bytes.size() == clock_probe_size);
  CHECK(bytes[0] == std::byte{4});
  CHECK(bytes[2] == std::byte{1});
  CHECK(bytes[4] == std::byte{7});
  CHECK(bytes[8] == std::byte{1});
  auto bad = bytes;
  bad[2] = std::byte{0};  // a round trip without its flag
  require_bad_message(decode_clock_probe, bad, "without its flag");
  bad = bytes;
  bad[2] = std::byte{4};
  require_bad_message(decode_clock_probe, bad, "unknown flags 4");
  bad = bytes;
  bad[2] = std::byte{3};  // an interval-start sample carries no round trip
  require_bad_message(decode_clock_probe, bad, "a sample with a round trip");
  // an interval-start clock sample (extension 9): flag bit 1
  const ClockProbe sample{7, 12, Time{5'000}, std::nullopt, true};
  CHECK(bytes_of(encode(sample))[2] == std::byte{2});
  CHECK(decode_clock_probe(bytes_of(encode(sample))) == sample);
  bad = bytes;
  bad.pop_back();
  require_bad_message(decode_clock_probe, bad, "27 bytes, expected 28");
  auto echo_bytes = bytes_of(encode(echo));
  echo_bytes[8] = std::byte{1};  // the reserved u32
  require_bad_message(decode_clock_echo, echo_bytes, "reserved field is 1");
  require_bad_message(decode_clock_echo, bytes, "type byte 4, expected 5");
}
