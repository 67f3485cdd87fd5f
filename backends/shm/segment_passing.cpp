// SPDX-License-Identifier: MIT
#include "backends/shm/segment_passing.hpp"

#include "netio/error.hpp"

#include <fmt/format.h>

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace netio::shm {
namespace {
constexpr int max_descriptors = 4;  // room to receive (and close) a few more than the one expected
}  // namespace

int pass_descriptor(int fd, int descriptor, std::span<const char> bytes) noexcept {
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(header), &descriptor, sizeof descriptor);
  const ssize_t n = ::sendmsg(fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n < 0) return errno;
  return n == static_cast<ssize_t>(bytes.size()) ? 0 : EAGAIN;
}

std::vector<posix::SocketFd> received_descriptors(msghdr& message) {
  std::vector<posix::SocketFd> descriptors;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr; header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int descriptor = -1;
      std::memcpy(&descriptor, CMSG_DATA(header) + i * sizeof(int), sizeof descriptor);
      descriptors.emplace_back(descriptor);
    }
  }
  return descriptors;
}

void send_segment(int fd, const Segment& segment) {
  if (const int error = pass_descriptor(fd, segment.fd(), segment_message); error != 0) {
    throw system_error(error, "passing the shared segment failed");
  }
}

ReceivedSegment receive_segment(int fd) {
  ReceivedSegment result;
  char payload[sizeof segment_message + 1];
  iovec iov{payload, sizeof payload};
  alignas(cmsghdr) char control[CMSG_SPACE(max_descriptors * sizeof(int))];
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  ssize_t n = 0;
  do {
    n = ::recvmsg(fd, &message, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN) return result;
    result.status = ReceivedSegment::Status::failed;
    result.why = posix::errno_text(errno);
    return result;
  }
  if (n == 0) {
    result.status = ReceivedSegment::Status::closed;
    return result;
  }
  // Every descriptor that came is owned (and closed) whatever else is wrong.
  std::vector<posix::SocketFd> descriptors = received_descriptors(message);
  if (n != static_cast<ssize_t>(sizeof segment_message) ||
      std::memcmp(payload, segment_message, sizeof segment_message) != 0 || descriptors.size() != 1 ||
      (message.msg_flags & MSG_CTRUNC) != 0) {
    result.status = ReceivedSegment::Status::failed;
    result.why =
        fmt::format("expected the segment message (8 bytes and one descriptor), got {} bytes and {} descriptor(s)", n,
                    descriptors.size());
    return result;
  }
  result.status = ReceivedSegment::Status::received;
  result.fd = std::move(descriptors.front());
  return result;
}

}  // namespace netio::shm
