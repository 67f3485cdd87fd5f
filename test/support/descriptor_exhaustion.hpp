// SPDX-License-Identifier: MIT
// Helpers for tests that run a receiver out of file descriptors (in a forked child, so that
// the rest of the suite keeps its own limit).
#pragma once

#include "netio/backend/event_loop.hpp"
#include "netio/error.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace netio::test {

// The descriptor limit that leaves `spare` descriptors free: new descriptors take the lowest
// free numbers, and a limit caps the numbers, not the count.
inline rlim_t limit_leaving(int spare) {
  std::set<int> open;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    open.insert(std::stoi(entry.path().filename().string()));
  }
  int limit = 0;
  for (int free = 0; free < spare; ++limit) {
    if (open.count(limit) == 0) ++free;
  }
  return static_cast<rlim_t>(limit);
}

// Lowers the descriptor limit to leave `spare` free, then takes them all (duplicates of
// `fd`): the duplicates, to close when descriptors should come free again; empty if the
// limit could not be set or the last one did not fail with EMFILE.
inline std::vector<int> take_every_descriptor(int fd, int spare) {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit_leaving(spare);
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) return {};
  std::vector<int> taken;
  for (int copy = ::dup(fd); copy >= 0; copy = ::dup(fd)) taken.push_back(copy);
  if (errno != EMFILE) taken.clear();
  return taken;
}

// Call while descriptors are still free, before running out of them on purpose.
//
// UBSan's vptr check (-fsanitize=vptr, part of our ASan+UBSan build) checks each pair of
// (vtable, static type) the first time it sees it, and to find out whether the vtable is
// readable it writes it into a pipe (IsAccessibleMemoryRange). With no descriptor left,
// pipe() fails with EMFILE and UBSan reports a perfectly valid object as "member access
// within address ... which does not point to an object of type 'Error' / object has invalid
// vptr / <memory cannot be printed>". That is what the listener's out-of-descriptors path
// did: the first netio::Error of the process was the one it builds for EMFILE, and the first
// fd handler the loop ever dropped (a shared_ptr's control block) the listen socket's. Once a
// pair passed, UBSan remembers it and opens no pipe: this goes through what that path uses
// while descriptors are free (errors; on `loop`, a watched descriptor dispatched and
// removed, a timer fired and one cancelled).
inline void prepare_for_descriptor_exhaustion(EventLoop& loop) {
  const Error error = system_error(EMFILE, "checking the types of this path while descriptors are free");
  const Error copy = error;  // the listener hands its error on (on_error) and logs what()
  static_cast<void>(copy.what());
  static_cast<void>(copy.code());

  const int fd = ::eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);  // readable from the start
  if (fd < 0) throw system_error(errno, "eventfd");
  std::atomic<bool> dispatched{false};
  std::atomic<bool> fired{false};
  loop.run_sync([&] { loop.add_fd(fd, EPOLLIN, [&dispatched](std::uint32_t) { dispatched = true; }); });
  while (!dispatched) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  loop.run_sync([&] {
    loop.remove_fd(fd);
    loop.add_timer(std::chrono::milliseconds(1), std::chrono::nanoseconds::zero(), [&fired] { fired = true; });
    loop.cancel_timer(loop.add_timer(std::chrono::hours(1), std::chrono::nanoseconds::zero(), [] {}));
  });
  ::close(fd);
  while (!fired) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace netio::test
