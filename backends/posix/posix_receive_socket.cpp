// SPDX-License-Identifier: MIT
#include "backends/posix/posix_receive_socket.hpp"

#include "netio/log.hpp"
#include "rejection_log.hpp"

#include <fmt/format.h>

#include <sys/epoll.h>

#include <utility>

namespace netio::posix {

PosixReceiveSocket::PosixReceiveSocket(EventLoop& loop, SocketFd fd, Endpoint local, Endpoint peer,
                                       std::size_t max_buffer_size, std::size_t credits, std::size_t max_reply_size,
                                       std::chrono::nanoseconds progress_timeout, bool peek_reads)
    : loop_(loop),
      fd_(std::move(fd)),
      local_(std::move(local)),
      peer_(std::move(peer)),
      max_reply_size_(max_reply_size),
      registration_(loop),
      reader_(loop, max_buffer_size, credits, peer_.to_string(),
              fmt::format("from {} to {}", peer_.to_string(), local_.to_string())),
      progress_timeout_(progress_timeout) {
  if (!peek_reads) reader_.stop_peeking();
}

PosixReceiveSocket::~PosixReceiveSocket() { close(); }

void PosixReceiveSocket::start(Callbacks callbacks) {
  callbacks_ = std::move(callbacks);
  started_ = true;
  FrameReader::Callbacks reader_callbacks;
  reader_callbacks.on_frame = [this](ReceivedBuffer buffer) {
    if (callbacks_.on_data) callbacks_.on_data(std::move(buffer));
  };
  reader_callbacks.on_stall_changed = [this](bool stalled) {
    held_back_since_check_ |= stalled;
    update_interest();
  };
  reader_callbacks.on_failed = [this](Errc code, const std::string& why) { fail(code, why); };
  reader_.start(fd_.get(), std::move(reader_callbacks));
  if (progress_timeout_ > std::chrono::nanoseconds::zero()) {
    progress_timer_ = loop_.add_timer(progress_timeout_, progress_timeout_, [this] { check_progress(); });
  }
  registration_.add(fd_.get(), EPOLLIN, [this](std::uint32_t events) { on_events(events); });
  registration_.spin(EPOLLIN | EPOLLOUT);  // a read or write that finds nothing returns at once
  if (!replies_.empty()) write_replies();
}

void PosixReceiveSocket::on_events(std::uint32_t events) {
  if ((events & EPOLLOUT) && !closed_) write_replies();
  if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !closed_) {
    if (reader_.stalled()) {
      registration_.suspend();  // a hang-up while not reading: see FdRegistration
      return;
    }
    reader_.on_readable();
  }
}

void PosixReceiveSocket::check_progress() {
  if (closed_) return;
  // Read what is there first: a loop held up by a long callback runs its timers before it
  // polls, and bytes waiting in the kernel are the peer's progress, not its stall.
  if (!reader_.stalled()) reader_.on_readable();
  if (closed_) return;
  const bool progressed = reader_.frames_delivered() != frames_at_check_;
  if (reader_.mid_frame() && !progressed && !held_back_since_check_ && !reader_.stalled()) {
    fail(Errc::protocol_error,
         fmt::format("{} stalled in the middle of a frame to {}: none completed in {} ms (progress timeout)",
                     peer_.to_string(), local_.to_string(),
                     std::chrono::duration_cast<std::chrono::milliseconds>(progress_timeout_).count()));
    return;
  }
  frames_at_check_ = reader_.frames_delivered();
  held_back_since_check_ = reader_.stalled();
}

void PosixReceiveSocket::send_reply(Buffer* buffer) {
  if (closed_) return;
  if (buffer->size > max_reply_size_) {
    fail(Errc::message_too_large,
         max_reply_size_ == 0
             ? fmt::format("a {}-byte reply to {} on {}: that sender takes no replies", buffer->size, peer_.to_string(),
                           local_.to_string())
             : fmt::format("a {}-byte reply to {} on {}: that sender takes replies of at most {} bytes", buffer->size,
                           peer_.to_string(), local_.to_string(), max_reply_size_));
    return;
  }
  replies_.push(buffer);
  reader_.stop_peeking();  // replies carry the ACKs of what this socket reads
  if (started_ && !registration_.wants_output()) write_replies();
}

void PosixReceiveSocket::write_replies() {
  std::string failure;
  const auto result = replies_.write(
      fd_.get(),
      [this](Buffer* buffer) {
        if (callbacks_.on_reply_completed) callbacks_.on_reply_completed(buffer);
      },
      [this] { return !closed_; }, failure);
  if (closed_) return;
  if (result == FrameWriter::Result::failed) {
    fail(Errc::disconnected,
         fmt::format("replying to {} from {} failed: {}", peer_.to_string(), local_.to_string(), failure));
    return;
  }
  update_interest();
}

void PosixReceiveSocket::update_interest() {
  if (closed_ || !started_) return;
  registration_.update(!reader_.stalled(), !replies_.empty());
}

void PosixReceiveSocket::fail(Errc code, const std::string& why) {
  if (closed_) return;
  if (code == Errc::disconnected)
    log(LogLevel::info, "receive socket: {}", why);
  else
    DroppedConnectionLog::instance().dropped(why);  // rate-limited: a peer may reconnect without end
  auto callback = callbacks_.on_disconnected;
  // Silent from now on, but the descriptor stays open until the owner's close(): a sender
  // that ended its stream (LowLevelSendSocket::end_stream) waits for this side's close, and
  // must see it only once the owner has taken what came before the end (a decorator may
  // still hold some, as the emulated network's receive side does).
  silence();
  if (callback) callback(Error(code, why));
}

void PosixReceiveSocket::silence() noexcept {
  if (closed_) return;
  closed_ = true;
  if (progress_timer_ != 0) loop_.cancel_timer(std::exchange(progress_timer_, 0));
  reader_.close();
  replies_.clear();
  registration_.remove();
  // callbacks_ stay: this may run inside one of them. The state check keeps them silent.
}

void PosixReceiveSocket::close() noexcept {
  silence();
  fd_.reset();
}

}  // namespace netio::posix
