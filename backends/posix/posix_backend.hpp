// SPDX-License-Identifier: MIT
// The POSIX TCP back-end (tcp:// endpoints).
#pragma once

#include "netio/backend.hpp"
#include "netio/event_loop.hpp"

#include <memory>

namespace netio::posix {

std::unique_ptr<Backend> make_backend(EventLoop& loop);

}  // namespace netio::posix
