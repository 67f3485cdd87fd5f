// SPDX-License-Identifier: MIT
#include "cpu_affinity.hpp"

#include <fmt/format.h>

#include <pthread.h>
#include <sched.h>

#include <cstring>
#include <stdexcept>

namespace netio::tools {
namespace {

cpu_set_t allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    // Should not happen for our own process; then claim nothing is known and let the
    // pinning call itself report the error.
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) CPU_SET(cpu, &set);
  }
  return set;
}

}  // namespace

std::string allowed_cpus_text() {
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

std::optional<std::string> cpu_unavailable_reason(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) {
    return fmt::format("CPU {} does not exist (this process may use CPUs {})", cpu, allowed_cpus_text());
  }
  const cpu_set_t set = allowed_cpus();
  if (!CPU_ISSET(cpu, &set)) {
    return fmt::format("CPU {} is not available to this process (it may use CPUs {})", cpu, allowed_cpus_text());
  }
  return std::nullopt;
}

void pin_current_thread(int cpu) {
  if (auto reason = cpu_unavailable_reason(cpu)) throw std::runtime_error(*reason);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  // pthread_* functions return the error number instead of setting errno.
  if (const int error = pthread_setaffinity_np(pthread_self(), sizeof(set), &set); error != 0) {
    throw std::runtime_error(fmt::format("cannot pin thread to CPU {}: {}", cpu, std::strerror(error)));
  }
}

}  // namespace netio::tools
