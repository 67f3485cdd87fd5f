// SPDX-License-Identifier: MIT
// Pinning threads to CPUs (--cpu), with errors that say which CPUs would have worked.
#pragma once

#include <optional>
#include <string>

namespace netio::tools {

// Why `cpu` cannot be used by this process (negative, beyond CPU_SETSIZE, or outside the
// process's affinity mask, e.g. under taskset or a container's cpuset), or nullopt.
std::optional<std::string> cpu_unavailable_reason(int cpu);

// The CPUs this process may run on, as a list like "0-3,8".
std::string allowed_cpus_text();

// Pins the calling thread to `cpu`. Throws std::runtime_error naming the CPU and the reason.
void pin_current_thread(int cpu);

}  // namespace netio::tools
