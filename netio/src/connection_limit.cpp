// SPDX-License-Identifier: MIT
// The default connection limit, from the process's descriptor limit: a listener that takes
// as many connections as the process has descriptors leaves none for the accept that would
// let a newcomer in, nor for the rest of the process (issue 49).
#include "netio/socket_options.hpp"

#include <sys/resource.h>

#include <algorithm>

namespace netio {

std::size_t default_max_connections() noexcept {
  constexpr std::size_t ceiling = 1024;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return ceiling;
  const auto descriptors = static_cast<std::size_t>(limit.rlim_cur);
  const std::size_t headroom = std::max(connection_limit_headroom, descriptors / 8);
  return descriptors > headroom ? std::min(ceiling, descriptors - headroom) : 1;
}

}  // namespace netio
