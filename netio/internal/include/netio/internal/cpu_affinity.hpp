// SPDX-License-Identifier: MIT
// Pinning threads to CPUs, with errors that say which CPUs would have worked: the event-loop
// thread (ContextOptions::cpu) and the tools' threads (--cpu).
#pragma once

#include "netio/error.hpp"
#include "netio/internal/reject.hpp"

#include <fmt/format.h>

#include <pthread.h>
#include <sched.h>

#include <optional>
#include <string>
#include <string_view>

namespace netio::detail {

// The CPUs this process may run on (its affinity mask: taskset, a container's cpuset).
inline cpu_set_t allowed_cpus() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    // Should not happen for our own process; then claim nothing is known and let the
    // pinning call itself report the error.
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) CPU_SET(cpu, &set);
  }
  return set;
}

// The CPUs this process may run on, as a list like "0-3,8".
inline std::string allowed_cpus_text() {
  const cpu_set_t set = allowed_cpus();
  std::string text;
  for (int cpu = 0; cpu < CPU_SETSIZE;) {
    if (!CPU_ISSET(cpu, &set)) {
      ++cpu;
      continue;
    }
    int last = cpu;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    if (!text.empty()) text += ',';
    text += last == cpu ? fmt::format("{}", cpu) : fmt::format("{}-{}", cpu, last);
    cpu = last + 1;
  }
  return text;
}

// Why `cpu` cannot be used by this process (negative, beyond CPU_SETSIZE, or outside the
// process's affinity mask), or nullopt.
inline std::optional<std::string> cpu_unavailable_reason(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) {
    return fmt::format("CPU {} does not exist (this process may use CPUs {})", cpu, allowed_cpus_text());
  }
  const cpu_set_t set = allowed_cpus();
  if (!CPU_ISSET(cpu, &set)) {
    return fmt::format("CPU {} is not available to this process (it may use CPUs {})", cpu, allowed_cpus_text());
  }
  return std::nullopt;
}

// Pins the calling thread to `cpu`. A CPU this process may not use is
// Error(Errc::invalid_option, "<option>: <reason>"), `option` naming the setting that gave it
// ("ContextOptions::cpu"; empty: the reason alone); a failing pthread_setaffinity_np is a
// system error.
inline void pin_current_thread(int cpu, std::string_view option = {}) {
  if (auto reason = cpu_unavailable_reason(cpu)) reject(Errc::invalid_option, option, *reason);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  // pthread_* functions return the error number instead of setting errno.
  if (const int error = pthread_setaffinity_np(pthread_self(), sizeof(set), &set); error != 0) {
    throw system_error(error, fmt::format("cannot pin thread to CPU {}", cpu));
  }
}

}  // namespace netio::detail
