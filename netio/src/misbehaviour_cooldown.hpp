// SPDX-License-Identifier: MIT
// Peers a receive socket disconnected for misbehaving (a protocol error: a wake-up flood,
// malformed frames, a stalled frame, a bad introduction), held against their next
// connections for a while: a peer that reconnects at once after every drop would otherwise
// keep the listener setting connections up and tearing them down (an idle shm:// receiver
// spent 70-81 % of a core on one such peer). Keyed by the peer's endpoint host, which is one
// process only where the back-end says so (LowLevelListenSocket::peers_are_processes():
// shm://'s "pid123"); a TCP host is shared by every process on it, one of which must not
// lock the others out, so the receive socket records nothing there.
//
// The first offence holds a peer off for `base`; each one while it is held off, or within
// one more `base` × 2^strikes after, doubles it (at most 64 × base); a peer that behaves
// that long starts over. At most `capacity` peers are remembered: beyond it the one whose
// hold ends first is forgotten. Not thread-safe: one per receive socket, on its loop thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>

namespace netio::detail {

class MisbehaviourCooldown {
 public:
  using Clock = std::chrono::steady_clock;
  struct Hold {
    Clock::duration remaining;  ///< until the peer may connect again
    Clock::duration length;     ///< of the whole hold
    std::string why;            ///< what the peer did last
  };

  MisbehaviourCooldown(Clock::duration base, std::size_t capacity = 4096) noexcept : base_(base), capacity_(capacity) {}

  bool enabled() const noexcept { return base_ > Clock::duration::zero(); }
  /// `peer` was disconnected at `now` for `why`.
  void offended(const std::string& peer, std::string why, Clock::time_point now);
  /// Whether `peer` is held off at `now`, and for how much longer.
  std::optional<Hold> held(const std::string& peer, Clock::time_point now) const;
  std::size_t remembered() const noexcept { return peers_.size(); }

  static constexpr unsigned max_doublings = 6;  // 64 × base

 private:
  struct Record {
    Clock::time_point until;
    Clock::duration length{};
    unsigned strikes = 0;
    std::string why;
  };
  Clock::duration base_;
  std::size_t capacity_;
  std::map<std::string, Record> peers_;
};

}  // namespace netio::detail
