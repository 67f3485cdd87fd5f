#include "backends/posix/posix_listen_socket.hpp"

#include "address.hpp"
#include "backends/posix/posix_receive_socket.hpp"
#include "backends/posix/wire.hpp"
#include "netio/log.hpp"

#include <fmt/format.h>

#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>

namespace netio::posix {

void PosixListenSocket::listen(const Endpoint& local, Callbacks callbacks) {
  callbacks_ = std::move(callbacks);
  const auto address = detail::resolve(local, true);
  fd_ = SocketFd(::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd_) throw system_error(errno, fmt::format("{}: socket() failed", local.to_string()));
  const int one = 1;
  ::setsockopt(fd_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd_.get(), address.get(), address.length) != 0) {
    throw system_error(errno, fmt::format("cannot bind {}", local.to_string()));
  }
  if (::listen(fd_.get(), SOMAXCONN) != 0) {
    throw system_error(errno, fmt::format("cannot listen on {}", local.to_string()));
  }
  detail::SocketAddress bound;
  bound.length = sizeof bound.storage;
  ::getsockname(fd_.get(), bound.get(), &bound.length);
  local_ = detail::to_endpoint(bound, local);
  local_.host = local.host;  // keep the name the user gave; only the port may have changed
  loop_.add_fd(fd_.get(), EPOLLIN, [this](std::uint32_t) { on_acceptable(); });
}

void PosixListenSocket::on_acceptable() {
  for (int i = 0; i < 64 && !closed_; ++i) {
    detail::SocketAddress peer;
    peer.length = sizeof peer.storage;
    SocketFd fd(::accept4(fd_.get(), peer.get(), &peer.length, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd) {
      if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED) return;
      const auto error = system_error(errno, fmt::format("accept on {} failed", local_.to_string()));
      log(LogLevel::warn, "listen socket: {}", error.what());
      if (callbacks_.on_error) callbacks_.on_error(error);
      return;  // e.g. EMFILE: try again on the next wake-up rather than spin here
    }
    try {
      set_no_delay(fd.get());
    } catch (const Error& e) {
      log(LogLevel::warn, "listen socket {}: {}", local_.to_string(), e.what());
      continue;
    }
    auto pending = std::make_unique<PendingConnection>();
    const int raw = fd.get();
    pending->fd = std::move(fd);
    pending->peer = detail::to_endpoint(peer, local_);
    pending->timeout_timer = loop_.add_timer(handshake_timeout, {}, [this, raw] {
      drop_pending(raw, fmt::format("no handshake within {} s", handshake_timeout.count()));
    });
    pending_[raw] = std::move(pending);
    loop_.add_fd(raw, EPOLLIN, [this, raw](std::uint32_t) { on_hello_readable(raw); });
  }
}

void PosixListenSocket::on_hello_readable(int fd) {
  const auto it = pending_.find(fd);
  if (it == pending_.end()) return;
  auto& pending = *it->second;
  switch (pending.reader.read_from(fd)) {
    case HandshakeReader::Status::need_more:
      return;
    case HandshakeReader::Status::closed:
      drop_pending(fd, "closed before completing the handshake");
      return;
    case HandshakeReader::Status::failed:
      drop_pending(fd, pending.reader.error());
      return;
    case HandshakeReader::Status::complete:
      break;
  }
  loop_.remove_fd(fd);
  loop_.cancel_timer(pending.timeout_timer);
  auto owned = std::move(it->second);
  pending_.erase(it);
  answer(std::move(owned));
}

void PosixListenSocket::answer(std::unique_ptr<PendingConnection> pending) {
  AcceptDecision decision = AcceptDecision::reject("the listener takes no connections");
  const auto request = decode_request(pending->reader.payload());
  if (!request) {
    decision = AcceptDecision::reject("malformed connection request (not a netio peer, or an old version)");
  } else if (callbacks_.on_request) {
    try {
      decision = callbacks_.on_request(pending->peer, request->hello);
    } catch (const std::exception& e) {
      decision = AcceptDecision::reject(e.what());
    }
  }
  const auto reply = encode_reply({decision.accepted, decision.max_buffer_size, decision.reject_reason});
  // A fresh connection's send buffer is empty and the reply small: one send() takes it.
  const ssize_t n = ::send(pending->fd.get(), reply.data(), reply.size(), MSG_NOSIGNAL);
  if (n != static_cast<ssize_t>(reply.size())) {
    log(LogLevel::warn, "listen socket {}: could not answer {}: {}", local_.to_string(), pending->peer.to_string(),
        n < 0 ? errno_text(errno) : std::string("short write"));
    return;
  }
  if (!decision.accepted) {
    log(LogLevel::info, "listen socket {}: rejected {}: {}", local_.to_string(), pending->peer.to_string(),
        decision.reject_reason);
    return;  // closing the descriptor ends the connection after the reply
  }
  auto socket = std::make_unique<PosixReceiveSocket>(loop_, std::move(pending->fd), local_, pending->peer,
                                                     decision.max_buffer_size, decision.receive_credits,
                                                     request->max_reply_size);
  if (callbacks_.on_accepted) callbacks_.on_accepted(std::move(socket));
}

void PosixListenSocket::drop_pending(int fd, const std::string& why) {
  const auto it = pending_.find(fd);
  if (it == pending_.end()) return;
  log(LogLevel::warn, "listen socket {}: dropping connection from {}: {}", local_.to_string(),
      it->second->peer.to_string(), why);
  loop_.remove_fd(fd);
  loop_.cancel_timer(it->second->timeout_timer);
  pending_.erase(it);
}

void PosixListenSocket::close() noexcept {
  if (closed_) return;
  closed_ = true;
  for (auto& [fd, pending] : pending_) {
    loop_.remove_fd(fd);
    loop_.cancel_timer(pending->timeout_timer);
  }
  pending_.clear();
  if (fd_) {
    loop_.remove_fd(fd_.get());
    fd_.reset();
  }
  // callbacks_ stay: close() may run inside one of them. The state check keeps them silent.
}

}  // namespace netio::posix
