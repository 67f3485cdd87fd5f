// SPDX-License-Identifier: MIT
// Anonymous memory files (memfd) as shm:// shares them: made by one process, sized and
// sealed against resizing before anyone else sees them (a peer that shrank a file under
// our mapping would turn a read into SIGBUS), mapped read-write and shared. The segment
// (segment.hpp) and the sender's area (send_area.hpp) are both made this way; nothing is
// named, so the memory lives exactly as long as a descriptor or a mapping of it.
#pragma once

#include "backends/posix/socket_fd.hpp"

#include <cstddef>
#include <string>

namespace netio::shm {

// A fresh file of `size` bytes, sealed, called `name` (in /proc/PID/maps as /memfd:NAME).
// Throws Error naming `what`.
posix::SocketFd create_sealed_file(const char* name, const char* what, std::size_t size);

// The size of a file a peer passed, when it is sealed against resizing; 0 (and `why`) when
// it is not, or its size is unknown.
std::size_t sealed_file_size(int fd, std::string& why);

// Maps `size` bytes of `fd` read-write and shared; nullptr on failure (errno set).
std::byte* map_shared(int fd, std::size_t size) noexcept;

}  // namespace netio::shm
