// SPDX-License-Identifier: MIT
#include "deadline.hpp"

#include "units.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

namespace netio::tools {

Watchdog::Watchdog(std::string tool, std::chrono::nanoseconds timeout, std::chrono::nanoseconds grace) {
  if (timeout <= std::chrono::nanoseconds::zero()) return;
  thread_ = std::thread([this, tool = std::move(tool), timeout, grace] {
    std::unique_lock lock(mutex_);
    if (disarmed_cv_.wait_for(lock, timeout + grace, [this] { return disarmed_; })) return;
    fmt::print(stderr, "{}: still running {} after --timeout {}; giving up\n", tool, format_duration(grace),
               format_duration(timeout));
    std::fflush(stderr);
    // Destructors could block on the very call that is stuck: leave without them.
    std::_Exit(124);
  });
}

Watchdog::~Watchdog() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    disarmed_ = true;
  }
  disarmed_cv_.notify_all();
  thread_.join();
}

}  // namespace netio::tools
