// SPDX-License-Identifier: MIT
#include "backends/posix/posix_listen_socket.hpp"

#include "address.hpp"
#include "backends/posix/posix_receive_socket.hpp"
#include "backends/posix/wire.hpp"
#include "netio/log.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

namespace netio::posix {

void PosixListenSocket::listen(const Endpoint& local, Callbacks callbacks, const ListenLimits& limits) {
  callbacks_ = std::move(callbacks);
  limits_ = limits;
  fd_ = family_->listen_on(local, local_);
  loop_.add_fd(fd_.get(), EPOLLIN, [this](std::uint32_t) { on_acceptable(); });
}

void PosixListenSocket::on_acceptable() {
  for (int i = 0; i < 64 && !closed_ && backoff_timer_ == 0; ++i) {
    detail::SocketAddress peer;
    peer.length = sizeof peer.storage;
    SocketFd fd(::accept4(fd_.get(), peer.get(), &peer.length, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd) {
      const int error = errno;
      if (error == EAGAIN) {
        end_pressure_episode();  // caught up with the queue
        return;
      }
      if (error == EINTR || error == ECONNABORTED) return;
      if (error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM) {
        // Linux takes the descriptor before it looks at the queue: the accept after the one
        // that took the last free descriptor fails so even when nobody else is waiting, and
        // making room then would drop the peer just taken in.
        if (!peer_waiting()) return;
        if (make_room_for_descriptors(error)) continue;
        return;
      }
      const auto failure = system_error(error, fmt::format("accept on {} failed", local_.to_string()));
      log(LogLevel::warn, "listen socket: {}", failure.what());
      if (callbacks_.on_error) callbacks_.on_error(failure);
      return;
    }
    try {
      family_->prepare(fd.get());
    } catch (const Error& e) {
      log(LogLevel::warn, "listen socket {}: {}", local_.to_string(), e.what());
      continue;
    }
    auto admission = family_->admit(fd.get(), peer, local_);
    if (!admission.refusal.empty()) {
      refuse(fd, admission.refusal);
      continue;
    }
    add_pending(std::move(fd), admission.peer);
  }
}

void PosixListenSocket::refuse(const SocketFd& fd, const std::string& why) {
  // Before its hello: nothing of the peer is read. The reject tells it why (a fresh
  // connection's send buffer takes it whole); the close that follows ends it.
  log(LogLevel::warn, "listen socket {}: refusing a connection: {}", local_.to_string(), why);
  const auto reply = encode_reply({false, 0, why, {}});
  [[maybe_unused]] const ssize_t n = ::send(fd.get(), reply.data(), reply.size(), MSG_NOSIGNAL);
}

bool PosixListenSocket::peer_waiting() const {
  pollfd listener{fd_.get(), POLLIN, 0};
  return ::poll(&listener, 1, 0) > 0 && (listener.revents & POLLIN) != 0;
}

void PosixListenSocket::make_room_to_set_up() {
  for (int needed = family_->descriptors_to_set_up(); needed > 0 && !closed_; --needed) {
    const int probe = ::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0);
    if (probe >= 0) {
      ::close(probe);
      continue;
    }
    if (errno != EMFILE && errno != ENFILE) return;  // the set-up reports what else went wrong
    if (!drop_oldest_pending("out of file descriptors, making room for new peers") &&
        !(callbacks_.on_out_of_descriptors && callbacks_.on_out_of_descriptors())) {
      return;
    }
  }
}

void PosixListenSocket::end_pressure_episode() {
  // An episode (out of descriptors, or evicting waiting connections) ends once a quiet
  // period passed without either (checked when the queue is drained and when pressure comes
  // back): under a sustained flood that is one warning, not one per connection.
  const auto now = std::chrono::steady_clock::now();
  if (out_of_descriptors_ && now - last_pressure_ >= episode_quiet_period) {
    out_of_descriptors_ = false;
    log(LogLevel::info, "listen socket {}: descriptors available again ({} failed accepts, {} back-off(s))",
        local_.to_string(), std::exchange(descriptor_failures_, 0), std::exchange(backoffs_, 0));
  }
  if (evicting_ && now - last_eviction_ >= episode_quiet_period) {
    evicting_ = false;
    log(LogLevel::info, "listen socket {}: no more connections waiting for their handshake ({} dropped)",
        local_.to_string(), std::exchange(evictions_, 0));
  }
}

bool PosixListenSocket::make_room_for_descriptors(int error) {
  end_pressure_episode();  // a quiet period since the last one: this is a new episode
  last_pressure_ = std::chrono::steady_clock::now();
  ++descriptor_failures_;
  if (!out_of_descriptors_) {
    out_of_descriptors_ = true;
    // Once per episode: a flood would otherwise write a line per connection attempt.
    const auto failure = system_error(
        error, fmt::format("accept on {} failed; dropping the oldest connections still in their handshake, then idle "
                           "ones, else pausing accepts for {} ms at a time, until descriptors are free again",
                           local_.to_string(),
                           std::chrono::duration_cast<std::chrono::milliseconds>(limits_.accept_backoff).count()));
    if (callbacks_.on_error)
      callbacks_.on_error(failure);  // which logs it
    else
      log(LogLevel::warn, "listen socket: {}", failure.what());
    if (closed_) return false;
  }
  if (drop_oldest_pending("out of file descriptors, making room for new peers")) return true;
  // An idle connection of the layer above goes for the newcomer (it logs which).
  if (callbacks_.on_out_of_descriptors && callbacks_.on_out_of_descriptors()) return !closed_;
  ++backoffs_;
  loop_.remove_fd(fd_.get());
  backoff_timer_ = loop_.add_timer(limits_.accept_backoff, {}, [this] { resume_accepting(); });
  return false;
}

void PosixListenSocket::resume_accepting() {
  backoff_timer_ = 0;
  if (closed_) return;
  loop_.add_fd(fd_.get(), EPOLLIN, [this](std::uint32_t) { on_acceptable(); });
  on_acceptable();
}

void PosixListenSocket::add_pending(SocketFd fd, const Endpoint& peer) {
  if (limits_.max_pending_handshakes != 0) {
    const auto why = fmt::format(
        "{} connections were waiting for their handshake, the most this listener keeps; "
        "the oldest goes",
        limits_.max_pending_handshakes);
    while (pending_.size() >= limits_.max_pending_handshakes && drop_oldest_pending(why)) {
    }
  }
  auto pending = std::make_unique<PendingConnection>();
  const int raw = fd.get();
  pending->fd = std::move(fd);
  pending->peer = peer;
  pending->arrival = next_arrival_++;
  if (limits_.handshake_timeout > std::chrono::nanoseconds::zero()) {
    pending->timeout_timer = loop_.add_timer(limits_.handshake_timeout, {}, [this, raw] {
      drop_pending(
          raw, fmt::format("no handshake within {} ms",
                           std::chrono::duration_cast<std::chrono::milliseconds>(limits_.handshake_timeout).count()));
    });
  }
  arrivals_.emplace_back(pending->arrival, raw);
  pending_[raw] = std::move(pending);
  if (arrivals_.size() > 2 * pending_.size() + 64) {
    // Handshakes that completed leave stale entries behind: sweep them, so that the queue
    // stays proportional to what waits, even while a stuck peer keeps it from emptying.
    std::erase_if(arrivals_, [this](const auto& entry) {
      const auto it = pending_.find(entry.second);
      return it == pending_.end() || it->second->arrival != entry.first;
    });
  }
  loop_.add_fd(raw, EPOLLIN, [this, raw](std::uint32_t) { on_hello_readable(raw); });
}

bool PosixListenSocket::drop_oldest_pending(const std::string& why) {
  while (!arrivals_.empty()) {
    const auto [arrival, fd] = arrivals_.front();
    arrivals_.pop_front();
    const auto it = pending_.find(fd);
    if (it == pending_.end() || it->second->arrival != arrival) continue;
    // A flood evicts thousands: one warning per episode (until nobody waits), the rest at debug.
    end_pressure_episode();
    last_eviction_ = std::chrono::steady_clock::now();
    ++evictions_;
    if (!evicting_) {
      evicting_ = true;
      log(LogLevel::warn,
          "listen socket {}: dropping connections still in their handshake, oldest first ({}); "
          "further drops until the pressure ends are logged at debug level",
          local_.to_string(), why);
    }
    log(LogLevel::debug, "listen socket {}: dropping connection from {}: {}", local_.to_string(),
        it->second->peer.to_string(), why);
    forget_pending(it);
    return true;
  }
  return false;
}

void PosixListenSocket::on_hello_readable(int fd) {
  const auto it = pending_.find(fd);
  if (it == pending_.end()) return;
  auto& pending = *it->second;
  switch (pending.reader.read_from(fd)) {
    case HandshakeReader::Status::need_more: return;
    case HandshakeReader::Status::closed: drop_pending(fd, "closed before completing the handshake"); return;
    case HandshakeReader::Status::failed: drop_pending(fd, pending.reader.error()); return;
    case HandshakeReader::Status::complete: break;
  }
  answer(forget_pending(it));
}

void PosixListenSocket::answer(std::unique_ptr<PendingConnection> pending) {
  AcceptDecision decision = AcceptDecision::reject("the listener takes no connections");
  const auto request = decode_request(pending->reader.payload());
  if (!request) {
    decision = AcceptDecision::reject(
        fmt::format("malformed connection request of {} bytes (not a netio peer, or an old version)",
                    pending->reader.payload().size()));
    // The layer above never sees it: the one line about it is here.
    rejections_.reject(local_.to_string(), pending->peer.to_string(), decision.reject_reason);
  } else if (callbacks_.on_request) {
    try {
      decision = callbacks_.on_request(pending->peer, request->hello);
    } catch (const std::exception& e) {
      decision = AcceptDecision::reject(e.what());
    }
  }
  auto reply =
      encode_reply({decision.accepted, decision.max_buffer_size, decision.reject_reason, decision.accept_data});
  if (!decision.accepted && decision.answer_after > std::chrono::nanoseconds::zero()) {
    hold_rejection(std::move(pending->fd), std::move(reply), decision.answer_after);
    return;
  }
  // A fresh connection's send buffer is empty and the reply small: one send() takes it.
  const ssize_t n = ::send(pending->fd.get(), reply.data(), reply.size(), MSG_NOSIGNAL);
  if (n != static_cast<ssize_t>(reply.size())) {
    log(LogLevel::warn, "listen socket {}: could not answer {}: {}", local_.to_string(), pending->peer.to_string(),
        n < 0 ? errno_text(errno) : std::string("short write"));
    return;
  }
  if (!decision.accepted) {
    // The layer above logged why (once), or the malformed request above; this is the
    // back-end's trace of it.
    log(LogLevel::debug, "listen socket {}: rejected {}: {}", local_.to_string(), pending->peer.to_string(),
        decision.reject_reason);
    return;  // closing the descriptor ends the connection after the reply
  }
  make_room_to_set_up();
  std::unique_ptr<LowLevelReceiveSocket> socket;
  try {
    socket = family_->make_receive_socket(loop_, std::move(pending->fd), local_, pending->peer,
                                          decision.max_buffer_size, decision.receive_credits,
                                          decision.reply_size_for(request->max_reply_size), limits_.progress_timeout);
  } catch (const Error& e) {
    log(LogLevel::warn, "listen socket {}: could not set up the connection from {}: {}", local_.to_string(),
        pending->peer.to_string(), e.what());
    return;  // the descriptor is closed: the connector's connect fails
  }
  if (callbacks_.on_accepted) callbacks_.on_accepted(std::move(socket));
}

void PosixListenSocket::hold_rejection(SocketFd fd, std::vector<std::byte> reply, std::chrono::nanoseconds delay) {
  // Bounded like the handshakes: beyond it the oldest goes unanswered (its peer sees the
  // connection close, as for any handshake dropped).
  const std::size_t limit = std::max<std::size_t>(limits_.max_pending_handshakes, 1);
  while (held_.size() >= limit) {
    const auto oldest = held_.begin();
    loop_.cancel_timer(oldest->second.timer);
    held_.erase(oldest);
  }
  const std::uint64_t id = next_held_++;
  auto& held = held_[id];
  held.fd = std::move(fd);
  held.reply = std::move(reply);
  held.timer = loop_.add_timer(delay, {}, [this, id] { answer_held(id); });
}

void PosixListenSocket::answer_held(std::uint64_t id) {
  const auto it = held_.find(id);
  if (it == held_.end()) return;
  // The peer may have gone meanwhile: nothing to report then (MSG_NOSIGNAL, the result unused).
  (void)::send(it->second.fd.get(), it->second.reply.data(), it->second.reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  held_.erase(it);  // closes it
}

std::unique_ptr<LowLevelReceiveSocket> StreamFamily::make_receive_socket(
    EventLoop& loop, SocketFd fd, const Endpoint& local, const Endpoint& peer, std::size_t max_buffer_size,
    std::size_t credits, std::size_t max_reply_size, std::chrono::nanoseconds progress_timeout) const {
  return std::make_unique<PosixReceiveSocket>(loop, std::move(fd), local, peer, max_buffer_size, credits,
                                              max_reply_size, progress_timeout, peek_reads());
}

void PosixListenSocket::drop_pending(int fd, const std::string& why) {
  const auto it = pending_.find(fd);
  if (it == pending_.end()) return;
  rejections_.reject(local_.to_string(), it->second->peer.to_string(), why);
  forget_pending(it);
}

std::unique_ptr<PosixListenSocket::PendingConnection> PosixListenSocket::forget_pending(
    std::map<int, std::unique_ptr<PendingConnection>>::iterator it) {
  loop_.remove_fd(it->first);
  if (it->second->timeout_timer != 0) loop_.cancel_timer(it->second->timeout_timer);
  auto owned = std::move(it->second);
  pending_.erase(it);
  if (pending_.empty()) arrivals_.clear();
  return owned;
}

void PosixListenSocket::close() noexcept {
  if (closed_) return;
  closed_ = true;
  for (auto& [fd, pending] : pending_) {
    loop_.remove_fd(fd);
    if (pending->timeout_timer != 0) loop_.cancel_timer(pending->timeout_timer);
  }
  pending_.clear();
  arrivals_.clear();
  for (auto& [id, held] : held_) loop_.cancel_timer(held.timer);
  held_.clear();
  if (backoff_timer_ != 0) {
    loop_.cancel_timer(std::exchange(backoff_timer_, 0));  // the descriptor is out of the loop already
  } else if (fd_) {
    loop_.remove_fd(fd_.get());
  }
  fd_.reset();
  // callbacks_ stay: close() may run inside one of them. The state check keeps them silent.
}

}  // namespace netio::posix
