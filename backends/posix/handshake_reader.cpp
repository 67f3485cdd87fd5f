// SPDX-License-Identifier: MIT
#include "backends/posix/handshake_reader.hpp"

#include "backends/posix/socket_fd.hpp"
#include "backends/posix/wire.hpp"
#include "netio/internal/little_endian.hpp"

#include <fmt/format.h>

#include <sys/socket.h>

#include <cerrno>

namespace netio::posix {

HandshakeReader::Status HandshakeReader::read_from(int fd) {
  for (;;) {
    const std::size_t want = expected_ == 0 ? frame_header_size : expected_;
    if (bytes_.size() == want && expected_ != 0) return Status::complete;
    const std::size_t have = bytes_.size();
    bytes_.resize(want);
    const ssize_t n = ::recv(fd, bytes_.data() + have, want - have, 0);
    if (n <= 0) {
      bytes_.resize(have);
      if (n == 0) return Status::closed;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::need_more;
      if (errno == EINTR) continue;
      error_ = errno_text(errno);
      return Status::failed;
    }
    bytes_.resize(have + static_cast<std::size_t>(n));
    if (expected_ == 0 && bytes_.size() == frame_header_size) {
      const auto length = detail::load_le<std::uint64_t>(bytes_.data());
      if (length > max_handshake_frame) {
        error_ = fmt::format("junk instead of a netio handshake (frame length {} > {})", length, max_handshake_frame);
        return Status::failed;
      }
      expected_ = frame_header_size + length;
    }
  }
}

std::span<const std::byte> HandshakeReader::payload() const noexcept {
  return std::span<const std::byte>(bytes_).subspan(frame_header_size);
}

}  // namespace netio::posix
