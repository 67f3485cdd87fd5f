// SPDX-License-Identifier: MIT
// What netio_recv does with whatever a connection sends it (tools/common/run_tracker.hpp):
// control frames (run boundaries, end of stream), stamped data messages, and junk. The input
// is cut into messages; the tracker must count them all and never claim more than it got.
#include "common/run_tracker.hpp"

#include "fuzz_check.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  netio::tools::RunTracker tracker(in.ConsumeBool());
  std::uint64_t messages = 0;
  std::uint64_t bytes = 0;
  while (in.remaining_bytes() > 0) {
    const auto message = in.ConsumeBytes<std::uint8_t>(in.ConsumeIntegralInRange<std::size_t>(0, 256));
    tracker.on_message({reinterpret_cast<const std::byte*>(message.data()), message.size()});
    ++messages;
    bytes += message.size();
  }
  FUZZ_CHECK(tracker.live_messages() + tracker.stray_messages() <= messages);
  FUZZ_CHECK(tracker.live_bytes() <= bytes);
  // A stream that never began a run ends nothing, whatever control messages it sent.
  FUZZ_CHECK(tracker.began() || !tracker.end_of_stream());
  FUZZ_CHECK(tracker.ignored_controls() <= messages);
  std::uint64_t counted = 0;
  for (const auto& run : tracker.finish()) {
    counted += run.messages;
    if (run.verification) FUZZ_CHECK(run.verification->corrupt <= run.messages);
  }
  FUZZ_CHECK(counted == tracker.live_messages());
  return 0;
}
