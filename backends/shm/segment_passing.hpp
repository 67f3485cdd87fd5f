// SPDX-License-Identifier: MIT
// Handing a connection's segment from the listener to the connector: right after the
// accept, one message on the Unix socket, the eight bytes "NETIOSEG" carrying the memfd
// (SCM_RIGHTS). The only other descriptor is the sender's send area, passed later beside a
// wake-up byte (ShmConnection).
#pragma once

#include "backends/posix/socket_fd.hpp"
#include "backends/shm/segment.hpp"

#include <span>
#include <string>
#include <vector>

#include <sys/socket.h>

namespace netio::shm {

// The segment message's bytes (the descriptor travels beside them).
inline constexpr char segment_message[8] = {'N', 'E', 'T', 'I', 'O', 'S', 'E', 'G'};

// Sends `segment`'s descriptor over the connected socket `fd` (non-blocking; a fresh
// connection's buffer has room). Throws Error.
void send_segment(int fd, const Segment& segment);

struct ReceivedSegment {
  enum class Status { received, need_more, closed, failed } status = Status::need_more;
  posix::SocketFd fd;  // when received
  std::string why;     // when failed
};
// Sends one message of `bytes` carrying `descriptor` over the connected socket `fd`
// (non-blocking). Returns 0, or the errno of the failure (EAGAIN: the socket is full).
int pass_descriptor(int fd, int descriptor, std::span<const char> bytes) noexcept;

// The descriptors a received message carries (SCM_RIGHTS), owned.
std::vector<posix::SocketFd> received_descriptors(msghdr& message);

// Reads the segment message from `fd`: its descriptor, or why there is none. A message
// with anything else (other bytes, no descriptor, several) fails; descriptors that came
// with it are closed.
ReceivedSegment receive_segment(int fd);

}  // namespace netio::shm
