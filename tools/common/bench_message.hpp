// SPDX-License-Identifier: MIT
// The message format of the throughput benchmark (netio_throughput → netio_recv).
//
// A stream is a sequence of runs, one per message size, closed by an end-of-stream frame:
//
//   RUN_BEGIN(run, size, planned)  DATA × n  RUN_END(run, size, sent)  ...  END_OF_STREAM(runs)
//
// RUN_BEGIN, RUN_END and END_OF_STREAM are control frames (control_frame.hpp: 48 bytes,
// bit 63 of the first word set); their fields a, b, c are:
//   RUN_BEGIN      a = run index (0, 1, ...), b = message size, c = planned count (0: bounded by time)
//   RUN_END        a = run index,             b = message size, c = messages sent
//   END_OF_STREAM  a = number of runs
// Runs are announced rather than recognised by message size, so that even 8-byte messages
// carry a sequence number and a check, and one size may be run twice.
//
// A DATA message of `size` bytes (size >= 8), words little-endian:
//   bytes 0..7        header  = sequence << 16 | check16    (sequence < 2^47, so bit 63 is 0)
//   bytes 8..15       check64                               (only when size >= 16)
//   bytes B..size-1   pattern, B = 16 when size >= 16, else 8
// with
//   salt    = mix64(run << 32 ^ size)                  binds the message to its run
//   pattern = byte i is byte (i % 8) of mix64(salt + i / 8): depends on position, not sequence
//   check64 = mix64(checksum64(pattern) ^ mix64(sequence ^ salt))   checksum64: XXH3_64bits
//   check16 = check64 folded to 16 bits (XOR of its four 16-bit quarters)
// By default the pattern is fixed within a run, so the sender builds one message per run,
// hashes the pattern once, and per message patches only the first 16 bytes (two mix64 and
// two stores): cheap enough for the hot loop. With netio_throughput --verify the pattern
// also changes with every message (each word XORed with mix64(sequence ^ salt)), so that a
// transport delivering stale bytes of an earlier message in the right place is caught too;
// the sender then rewrites and hashes every message (CPU-bound: not for rate measurements).
// The receiver needs to know neither: it hashes the pattern bytes it gets, with --verify.
//
// What netio_recv --verify reports per run:
//   lost        sequence numbers never received, counted up to the RUN_END's sent count (so
//               losses at the very end are found); without a RUN_END (the stream was cut),
//               up to the highest sequence number seen;
//   duplicated  a sequence number received before;
//   corrupt     a size other than the run's, a failed check16/check64, or a message with bit
//               63 set that is not a valid control frame. The sequence number of a corrupt
//               message is not trusted, so its slot is also counted as lost.
// Strength of the check: at >= 16 bytes, 64 + 16 bits over every byte. At 8..15 bytes there
// is room for check16 only: it covers the sequence number and the pattern bytes, and a
// random corruption slips through with probability 2^-16 (a corrupted sequence number that
// slips through shows up as a lost and a duplicated or out-of-range message instead).
#pragma once

#include "control_frame.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace netio::tools {

inline constexpr std::size_t min_data_message_size = 8;
inline constexpr std::uint64_t max_sequence = (std::uint64_t{1} << 47) - 1;

// Identifies a run on both sides and derives its salt.
struct RunKey {
  std::uint64_t run = 0;
  std::uint64_t size = 0;

  std::uint64_t salt() const noexcept;
};

enum class PayloadMode {
  fixed_per_run,  // the default: stamp() patches 16 bytes
  per_message,    // netio_throughput --verify: stamp() rewrites and hashes the whole message
};

// Sender side: one pre-built message per run; stamp() patches the sequence number and
// the checks in place and returns the whole message. No allocation after construction.
class DataMessageBuilder {
 public:
  // Throws netio::Error (Errc::invalid_option) when key.size < min_data_message_size.
  explicit DataMessageBuilder(RunKey key, PayloadMode mode = PayloadMode::fixed_per_run);

  // `sequence` must be <= max_sequence. The span stays valid until the next stamp().
  std::span<const std::byte> stamp(std::uint64_t sequence) noexcept;
  std::size_t size() const noexcept { return buffer_.size(); }

 private:
  void rewrite_pattern(std::uint64_t sequence) noexcept;

  RunKey key_;
  PayloadMode mode_;
  std::uint64_t salt_;
  std::uint64_t pattern_checksum_;
  std::vector<std::byte> base_pattern_;  // per_message mode: the run's pattern to vary
  std::vector<std::byte> buffer_;
};

// Receiver side: the message's sequence number when it is an intact data message of the
// run `key`, nullopt when it is corrupt (see above).
std::optional<std::uint64_t> verify_data_message(std::span<const std::byte> message, const RunKey& key,
                                                 std::uint64_t salt) noexcept;

// Control frames of this protocol.
ControlFrameBytes encode_run_begin(const RunKey& key, std::uint64_t planned_messages) noexcept;
ControlFrameBytes encode_run_end(const RunKey& key, std::uint64_t sent_messages) noexcept;
ControlFrameBytes encode_end_of_stream(std::uint64_t runs) noexcept;

}  // namespace netio::tools
