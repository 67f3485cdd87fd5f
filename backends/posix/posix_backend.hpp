// SPDX-License-Identifier: MIT
// The POSIX stream back-end: tcp:// endpoints, and, with another StreamFamily, the
// Unix-domain connections of shm://.
#pragma once

#include "backends/posix/stream_family.hpp"
#include "netio/backend/backend.hpp"
#include "netio/backend/event_loop.hpp"

#include <memory>

namespace netio::posix {

std::unique_ptr<Backend> make_backend(EventLoop& loop);  // tcp://
std::unique_ptr<Backend> make_backend(EventLoop& loop, std::shared_ptr<const StreamFamily> family);

}  // namespace netio::posix
