// SPDX-License-Identifier: MIT
// The epoll registration of one connection's descriptor, shared by the reading and the
// writing half of a POSIX socket: it asks for input while the reader may read, for output
// while the writer has frames queued, and for nothing more.
//
// A reader that stalled (the caller holds every buffer it may) stops asking for input, yet
// epoll reports a hang-up regardless; suspend() then takes the descriptor out of the set, so
// the loop does not spin on it, until the reader may read again (and finds the end itself,
// after what the peer sent before it left).
//
// Loop thread only. The owner keeps the descriptor open while registered.
#pragma once

#include "netio/backend/event_loop.hpp"

#include <cstdint>

namespace netio::posix {

class FdRegistration {
 public:
  explicit FdRegistration(EventLoop& loop) noexcept : loop_(loop) {}
  ~FdRegistration() { remove(); }
  FdRegistration(const FdRegistration&) = delete;
  FdRegistration& operator=(const FdRegistration&) = delete;

  // Registers `fd` for `events`, calling `callback` with what epoll reports.
  void add(int fd, std::uint32_t events, EventLoop::FdCallback callback);
  // Asks for exactly `events` (re-registering after suspend()).
  void set(std::uint32_t events);
  // Input while `reading`, output while `writing`. After suspend() it registers again only
  // once `reading`.
  void update(bool reading, bool writing);
  void suspend();
  // While the loop busy-polls, it reports `events` without asking epoll (EventLoop::spin_fd),
  // now and after every re-registration. Only for a state whose callback takes an event
  // that finds nothing to do.
  void spin(std::uint32_t events);
  void remove() noexcept;
  // Whether output is asked for: a writer with this set waits for EPOLLOUT.
  bool wants_output() const noexcept;

 private:
  EventLoop& loop_;
  int fd_ = -1;
  std::uint32_t events_ = 0;
  std::uint32_t spin_events_ = 0;
  bool registered_ = false;
  EventLoop::FdCallback callback_;
};

}  // namespace netio::posix
