// SPDX-License-Identifier: MIT
#include "backends/posix/frame_writer.hpp"

#include "backends/posix/gather_list.hpp"
#include "backends/posix/socket_fd.hpp"
#include "backends/posix/wire.hpp"
#include "kernel_tcp.hpp"
#include "netio/internal/little_endian.hpp"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace netio::posix {
namespace {
constexpr std::size_t max_iovecs = 64;  // per sendmsg(): well under IOV_MAX
}  // namespace

void FrameWriter::push(Buffer* buffer) {
  Pending pending{buffer, {}};
  detail::store_le<std::uint64_t>(pending.header.data(), buffer->size);
  queue_.push_back(pending);
}

FrameWriter::Result FrameWriter::write(int fd, const std::function<void(Buffer*)>& on_written,
                                       const std::function<bool()>& keep_going, std::string& failure) {
  if (writing_) return Result::done;  // a completion callback pushed more: the outer call picks it up
  writing_ = true;
  Result result = Result::done;
  // Left uninitialised: GatherList writes each slot before sendmsg() reads it, and zeroing
  // the 1 KiB on every call cost as much as the rest of a small frame's write.
  std::array<iovec, max_iovecs> iov;
  while (!queue_.empty()) {
    ssize_t n = 0;
    const std::size_t front_frame = frame_header_size + queue_.front().buffer->size;
    if (queue_.size() == 1 && head_offset_ == 0 && front_frame <= small_frame_limit) {
      // One small frame, the round-trip case: a send() of one contiguous copy. sendmsg()
      // costs more per call than the copy (it imports the msghdr and the iovec array).
      const Pending& p = queue_.front();
      std::memcpy(stage_.data(), p.header.data(), p.header.size());
      if (p.buffer->size != 0) std::memcpy(stage_.data() + frame_header_size, p.buffer->data, p.buffer->size);
      n = ::send(fd, stage_.data(), front_frame, MSG_NOSIGNAL);
    } else {
      GatherList gather(iov, head_offset_, detail::kernel_tcp_write_limit);
      for (const auto& p : queue_) {
        if (!gather.add(p.header.data(), p.header.size()) || !gather.add(p.buffer->data, p.buffer->size)) break;
      }
      msghdr msg{};
      msg.msg_iov = gather.data();
      msg.msg_iovlen = gather.count();
      n = gather.count() == 0 ? 0 : ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        result = Result::would_block;
        break;
      }
      failure = errno_text(errno);
      result = Result::failed;
      break;
    }
    // Retire every frame the kernel took whole.
    std::size_t advanced = head_offset_ + static_cast<std::size_t>(n);
    while (!queue_.empty()) {
      const std::size_t frame = frame_header_size + queue_.front().buffer->size;
      if (advanced < frame) break;
      advanced -= frame;
      completed_.push_back(queue_.front().buffer);
      queue_.pop_front();
    }
    head_offset_ = advanced;
    bool going = true;
    for (std::size_t i = 0; i < completed_.size() && going; ++i) {
      on_written(completed_[i]);
      going = keep_going();
    }
    completed_.clear();
    if (!going) break;
  }
  writing_ = false;
  return result;
}

std::size_t FrameWriter::largest_queued() const noexcept {
  std::size_t largest = 0;
  for (const auto& p : queue_) largest = std::max(largest, p.buffer->size);
  return largest;
}

std::vector<Buffer*> FrameWriter::clear() {
  std::vector<Buffer*> buffers;
  buffers.reserve(queue_.size());
  for (const auto& p : queue_) buffers.push_back(p.buffer);
  queue_.clear();
  head_offset_ = 0;
  return buffers;
}

}  // namespace netio::posix
