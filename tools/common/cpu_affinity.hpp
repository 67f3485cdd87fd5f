// SPDX-License-Identifier: MIT
// Pinning threads to CPUs (--cpu), with errors that say which CPUs would have worked: the
// library's own (netio/internal/cpu_affinity.hpp), which pins the event-loop thread too.
//   cpu_unavailable_reason(cpu)  why `cpu` cannot be used by this process, or nullopt
//   allowed_cpus_text()          the CPUs this process may run on, as a list like "0-3,8"
//   pin_current_thread(cpu)      pins the calling thread; throws netio::Error naming the CPU
#pragma once

#include "netio/internal/cpu_affinity.hpp"

namespace netio::tools {

using netio::detail::allowed_cpus_text;
using netio::detail::cpu_unavailable_reason;
using netio::detail::pin_current_thread;

}  // namespace netio::tools
