// SPDX-License-Identifier: MIT
// The receive buffer of a TimesliceReceiver: sized by credits per input–compute pair (16
// unless set) or by bytes, never both, and never with fewer than 2 credits per pair.
#include "netio/context.hpp"
#include "netio/error.hpp"
#include "netio/scheduled_push/timeslice_receiver.hpp"
#include "netio/scheduler/credits.hpp"
#include "support/test_context.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace netio;
namespace sp = netio::scheduled_push;
namespace ns = netio::scheduler;

namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

sp::TimesliceReceiverOptions options_for(std::uint32_t inputs, std::uint32_t computes, std::uint64_t contribution) {
  sp::TimesliceReceiverOptions o;
  o.config.input_count = inputs;
  o.config.compute_count = computes;
  o.config.timeslices_per_interval = computes;
  o.max_contribution_bytes = contribution;
  return o;
}

struct Receiver {
  Context context{test::context_options()};
  sp::TimesliceReceiver receiver;
  explicit Receiver(sp::TimesliceReceiverOptions options)
      : receiver(
            context, Endpoint::parse("tcp://127.0.0.1:0"), [](const sp::TimesliceView&) {}, std::move(options)) {}
};

// The message of the netio::Error (Errc::invalid_option) constructing a receiver with `options`
// throws; fails the test when it constructs.
std::string refusal(sp::TimesliceReceiverOptions options) {
  try {
    Receiver r(std::move(options));
  } catch (const Error& e) {
    CHECK(e.code() == netio::Errc::invalid_option);
    return e.what();
  }
  FAIL("the receiver was constructed");
  return {};
}

}  // namespace

TEST_CASE("A receiver sizes its buffer by credits per input: 16 unless set", "[scheduled_push]") {
  SECTION("neither set: 16 credits, 16 × 48 × 16 KiB = 12 MiB at 48 inputs") {
    Receiver r(options_for(48, 48, 16 * KiB));
    CHECK(r.receiver.credits_per_input() == 16);
    CHECK(r.receiver.receive_buffer_bytes() == 12 * MiB);
  }
  SECTION("neither set at 4 inputs of 16 KiB: 1 MiB") {
    Receiver r(options_for(4, 4, 16 * KiB));
    CHECK(r.receiver.credits_per_input() == 16);
    CHECK(r.receiver.receive_buffer_bytes() == 1 * MiB);
  }
  SECTION("credits_per_input: the buffer follows") {
    auto o = options_for(48, 4, 16 * KiB);
    o.credits_per_input = 2;
    Receiver r(o);
    CHECK(r.receiver.credits_per_input() == 2);
    CHECK(r.receiver.receive_buffer_bytes() == 2 * 48 * 16 * KiB);
  }
  SECTION("receive_buffer_bytes: the credits follow, as before") {
    auto o = options_for(4, 4, 64 * KiB);
    o.receive_buffer_bytes = 1 * MiB;
    Receiver r(o);
    CHECK(r.receiver.credits_per_input() == 4);  // 1 MiB / 4 / 64 KiB
    CHECK(r.receiver.receive_buffer_bytes() == 1 * MiB);
  }
  SECTION("receive_buffer_bytes just large enough for 2 credits per input") {
    auto o = options_for(48, 48, 16 * KiB);
    o.receive_buffer_bytes = 2 * 48 * 16 * KiB;
    Receiver r(o);
    CHECK(r.receiver.credits_per_input() == 2);
  }
}

TEST_CASE("A receiver refuses fewer than 2 credits per input, saying why and what instead", "[scheduled_push]") {
  SECTION("credits_per_input = 1") {
    auto o = options_for(4, 4, 16 * KiB);
    o.credits_per_input = 1;
    const auto what = refusal(o);
    CHECK_THAT(what, Catch::StartsWith(
                         "scheduled push receiver: credits_per_input = 1 gives 1 credit per input–compute pair"));
    CHECK_THAT(what, Catch::Contains("at least 2 are needed"));
    CHECK_THAT(what, Catch::Contains("every send waits a full round trip for its credit"));
    CHECK_THAT(what, Catch::Contains("give credits_per_input = 2 or more"));
  }
  SECTION("credits_per_input = 0") {
    auto o = options_for(4, 4, 16 * KiB);
    o.credits_per_input = 0;
    CHECK_THAT(refusal(o), Catch::Contains("credits_per_input = 0 gives 0 credits per input–compute pair"));
  }
  SECTION("receive_buffer_bytes of 1 MiB at 48 inputs of 16 KiB: 1 credit") {
    auto o = options_for(48, 48, 16 * KiB);
    o.receive_buffer_bytes = 1 * MiB;
    const auto what = refusal(o);
    CHECK_THAT(what, Catch::Contains("receive_buffer_bytes = 1048576 (48 inputs, max_contribution_bytes 16384) gives 1 "
                                     "credit per input–compute pair"));
    CHECK_THAT(what, Catch::Contains("give receive_buffer_bytes = 1572864 or more (2 × 48 × 16384), or "
                                     "credits_per_input = 2 instead"));
  }
  SECTION("a receive buffer that holds no contribution per input") {
    auto o = options_for(48, 48, 16 * KiB);
    o.receive_buffer_bytes = 16 * KiB;
    CHECK_THAT(refusal(o), Catch::Contains("gives 0 credits per input–compute pair"));
  }
  SECTION("both set") {
    auto o = options_for(4, 4, 16 * KiB);
    o.receive_buffer_bytes = 4 * MiB;
    o.credits_per_input = 16;
    const auto what = refusal(o);
    CHECK_THAT(what, Catch::Contains("receive_buffer_bytes (4194304) and credits_per_input (16) both size the receive "
                                     "buffer"));
  }
}
