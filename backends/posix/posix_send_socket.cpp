// SPDX-License-Identifier: MIT
#include "backends/posix/posix_send_socket.hpp"

#include "address.hpp"
#include "backends/posix/wire.hpp"
#include "netio/log.hpp"

#include <fmt/format.h>

#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>
#include <system_error>

namespace netio::posix {

void PosixSendSocket::connect(const Endpoint& remote, std::span<const std::byte> hello, Callbacks callbacks) {
  connect_to(family_->connect_addresses(remote), remote, hello, std::move(callbacks));
}

void PosixSendSocket::connect_to(std::vector<detail::SocketAddress> addresses, const Endpoint& remote,
                                 std::span<const std::byte> hello, Callbacks callbacks) {
  callbacks_ = std::move(callbacks);
  remote_ = remote;
  hello_frame_ = encode_request(replies_window_.max_size, hello);
  addresses_ = std::move(addresses);
  attempt_ = 0;
  state_ = State::connecting;
  start_attempt();
}

namespace {

// Connect errors that are the address's, not the service's: another address of the same
// host may still reach it (an IPv6 address where the server listens on IPv4 only, say).
bool another_address_may_work(int error_number) {
  switch (error_number) {
    case ECONNREFUSED:
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ENETDOWN:
    case EHOSTDOWN:
    case EADDRNOTAVAIL:
    case EAFNOSUPPORT:
    case ETIMEDOUT: return true;
    default: return false;
  }
}

}  // namespace

void PosixSendSocket::start_attempt() {
  for (;;) {
    const auto& address = addresses_[attempt_];
    fd_ = SocketFd(::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd_) {
      const int err = errno;
      if (next_address(err, "socket() failed: ")) continue;
      throw system_error(err, fmt::format("{}: socket() failed", remote_.to_string()));
    }
    family_->prepare(fd_.get());
    if (::connect(fd_.get(), address.get(), address.length) == 0 || errno == EINPROGRESS) {
      registration_.add(fd_.get(), EPOLLOUT, [this](std::uint32_t events) { on_events(events); });
      return;
    }
    const int err = errno;
    if (next_address(err, "")) {
      fd_.reset();
      continue;
    }
    // Report asynchronously, like every other connect outcome. The task may outlive the
    // socket (destroyed on the loop thread before it runs): it checks first.
    loop_.post([this, err, alive = std::weak_ptr<int>(alive_)] {
      if (!alive.expired() && state_ == State::connecting) attempt_failed(err);
    });
    return;
  }
}

bool PosixSendSocket::next_address(int error_number, std::string_view what) {
  if (!another_address_may_work(error_number) || attempt_ + 1 >= addresses_.size()) return false;
  failed_attempts_ +=
      fmt::format("{}: {}{}; ", detail::to_string(addresses_[attempt_]), what, errno_text(error_number));
  ++attempt_;
  return true;
}

void PosixSendSocket::attempt_failed(int error_number) {
  if (next_address(error_number, "")) {
    registration_.remove();
    fd_.reset();
    try {
      start_attempt();
    } catch (const Error& e) {
      fail_connect(Errc::backend_error,
                   fmt::format("connect to {} failed: {}{}", remote_.to_string(), failed_attempts_, e.what()));
    }
    return;
  }
  const Errc code = error_number == ECONNREFUSED ? Errc::connection_refused : Errc::backend_error;
  if (addresses_.size() == 1) {
    fail_connect(code, fmt::format("connect to {} failed: {}", remote_.to_string(), errno_text(error_number)));
    return;
  }
  // Several addresses: each one tried, and why it failed (an error no other address can mend
  // ends the attempts early).
  const auto tried =
      fmt::format("{}{}: {}", failed_attempts_, detail::to_string(addresses_[attempt_]), errno_text(error_number));
  if (attempt_ + 1 == addresses_.size()) {
    fail_connect(code, fmt::format("connect to {} failed at each of its {} addresses: {}", remote_.to_string(),
                                   addresses_.size(), tried));
  } else {
    fail_connect(code, fmt::format("connect to {} failed: {}", remote_.to_string(), tried));
  }
}

void PosixSendSocket::on_events(std::uint32_t events) {
  switch (state_) {
    case State::connecting: on_connect_completed(); break;
    case State::handshaking:
      if (hello_written_ < hello_frame_.size() && (events & EPOLLOUT)) on_connect_completed();
      if (state_ == State::handshaking && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) on_reply_readable();
      break;
    case State::connected:
      if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_peer_readable();
      if (state_ == State::connected && (events & EPOLLOUT)) write_queued();
      break;
    case State::idle:
    case State::closed: break;
  }
}

void PosixSendSocket::on_connect_completed() {
  if (state_ == State::connecting) {
    const int err = take_socket_error(fd_.get());
    if (err != 0) {
      attempt_failed(err);
      return;
    }
    if (auto distrust = family_->check_listener(fd_.get(), remote_); !distrust.empty()) {
      fail_connect(Errc::handshake_rejected, fmt::format("connect to {} refused: {}", remote_.to_string(), distrust));
      return;
    }
    state_ = State::handshaking;
  }
  while (hello_written_ < hello_frame_.size()) {
    const ssize_t n =
        ::send(fd_.get(), hello_frame_.data() + hello_written_, hello_frame_.size() - hello_written_, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      const int error_number = errno;
      // A listener that refuses a peer before reading its hello (shm://, by its user)
      // answers and closes: its answer, when it is there, says why.
      if ((error_number == EPIPE || error_number == ECONNRESET) &&
          reply_reader_.read_from(fd_.get()) == HandshakeReader::Status::complete) {
        on_reply_received();
        return;
      }
      fail_connect(Errc::backend_error, fmt::format("sending the handshake to {} failed: {}", remote_.to_string(),
                                                    errno_text(error_number)));
      return;
    }
    hello_written_ += static_cast<std::size_t>(n);
  }
  registration_.set(hello_written_ < hello_frame_.size() ? EPOLLOUT | EPOLLIN : EPOLLIN);
}

void PosixSendSocket::on_reply_readable() {
  switch (reply_reader_.read_from(fd_.get())) {
    case HandshakeReader::Status::need_more: return;
    case HandshakeReader::Status::closed:
      fail_connect(Errc::handshake_rejected,
                   fmt::format("{} closed the connection during the handshake (not a netio receive socket?)",
                               remote_.to_string()));
      return;
    case HandshakeReader::Status::failed:
      fail_connect(Errc::handshake_rejected,
                   fmt::format("handshake with {} failed: {}", remote_.to_string(), reply_reader_.error()));
      return;
    case HandshakeReader::Status::complete: break;
  }
  on_reply_received();
}

void PosixSendSocket::on_reply_received() {
  auto reply = decode_reply(reply_reader_.payload());
  if (!reply) {
    fail_connect(Errc::handshake_rejected, fmt::format("{} sent a malformed handshake reply", remote_.to_string()));
    return;
  }
  if (!reply->accepted) {
    fail_connect(Errc::handshake_rejected,
                 fmt::format("{} rejected the connection: {}", remote_.to_string(), reply->reason));
    return;
  }
  if (hand_over_) {
    auto take = std::move(hand_over_);
    registration_.remove();
    auto fd = std::move(fd_);
    close();
    take(std::move(fd), ConnectionInfo{remote_, reply->max_buffer_size, std::move(reply->accept_data)});
    return;
  }
  state_ = State::connected;
  if (replies_window_.max_size != 0) {
    replies_ = std::make_unique<FrameReader>(loop_, replies_window_.max_size, replies_window_.credits,
                                             remote_.to_string(), fmt::format("to {} (replies)", remote_.to_string()));
    FrameReader::Callbacks reader_callbacks;
    reader_callbacks.on_frame = [this](ReceivedBuffer buffer) {
      if (callbacks_.on_reply) callbacks_.on_reply(std::move(buffer));
    };
    reader_callbacks.on_stall_changed = [this](bool) { update_interest(); };
    reader_callbacks.on_failed = [this](Errc code, const std::string& why) {
      if (replies_->failure_errno() != 0)
        fail_broken(replies_->failure_errno(), why);
      else
        fail_connected(code, why);
    };
    replies_->start(fd_.get(), std::move(reader_callbacks));
    replies_->stop_peeking();  // the data this socket sends carries the ACKs of its replies
  }
  peer_max_buffer_size_ = reply->max_buffer_size;
  // Connected, a read or write that finds nothing returns at once. Without replies the
  // socket reads only to notice the peer leave: not worth a recv() every round.
  registration_.spin(replies_ ? EPOLLIN | EPOLLOUT : EPOLLOUT);
  update_interest();
  if (callbacks_.on_connected) {
    callbacks_.on_connected(ConnectionInfo{remote_, reply->max_buffer_size, std::move(reply->accept_data)});
  }
  // Buffers queued before the connection was up meet the receiver's limit only now.
  if (state_ == State::connected && writer_.largest_queued() > peer_max_buffer_size_) {
    fail_connected(Errc::message_too_large,
                   fmt::format("a buffer of {} bytes is larger than the {} bytes {} takes", writer_.largest_queued(),
                               peer_max_buffer_size_, remote_.to_string()));
    return;
  }
  if (state_ == State::connected && !writer_.empty()) write_queued();
}

void PosixSendSocket::on_peer_readable() {
  if (replies_) {
    if (!replies_->stalled()) {
      replies_->on_readable();
      return;
    }
    if (stream_ended_) {
      // A hang-up after the end of the stream. A reset means the receiver closed with bytes
      // unread (or vanished); else it has read everything and closed. The close waits for
      // nothing more, and replies the caller is not taking stay untaken (reading on would
      // need buffers the caller holds).
      if (const int error_number = take_socket_error(fd_.get()); error_number != 0) {
        fail_broken(error_number, fmt::format("connection to {} lost after the end of the stream: {}",
                                              remote_.to_string(), errno_text(error_number)));
        return;
      }
      fail_connected(Errc::disconnected,
                     fmt::format("{} closed the connection after the end of the stream (replies still on their way "
                                 "were not read: every reply buffer was held)",
                                 remote_.to_string()));
      return;
    }
    registration_.suspend();  // a hang-up while not reading replies: see FdRegistration
    return;
  }
  // This socket takes no replies: readable means closed, reset, or junk.
  std::byte scratch[256];
  const ssize_t n = ::recv(fd_.get(), scratch, sizeof scratch, 0);
  if (n > 0) {
    fail_connected(Errc::protocol_error,
                   fmt::format("{} sent data on a connection that takes no replies", remote_.to_string()));
  } else if (n == 0) {
    fail_connected(Errc::disconnected, fmt::format("{} closed the connection", remote_.to_string()));
  } else if (errno != EAGAIN && errno != EINTR) {
    fail_broken(errno, fmt::format("connection to {} lost: {}", remote_.to_string(), errno_text(errno)));
  }
}

bool PosixSendSocket::refuse_if_too_large(const Buffer& buffer) {
  if (buffer.size <= peer_max_buffer_size_) return false;
  fail_connected(Errc::message_too_large, fmt::format("a buffer of {} bytes is larger than the {} bytes {} takes",
                                                      buffer.size, peer_max_buffer_size_, remote_.to_string()));
  return true;
}

void PosixSendSocket::send(Buffer* buffer) {
  if (state_ == State::closed) return;
  if (state_ == State::connected && refuse_if_too_large(*buffer)) return;
  writer_.push(buffer);
  if (state_ == State::connected && !registration_.wants_output()) write_queued();
}

void PosixSendSocket::write_queued() {
  std::string failure;
  const auto result = writer_.write(
      fd_.get(),
      [this](Buffer* buffer) {
        if (callbacks_.on_send_completed) callbacks_.on_send_completed(buffer);
      },
      [this] { return state_ == State::connected; }, failure);
  if (state_ != State::connected) return;
  if (result == FrameWriter::Result::failed) {
    fail_connected(Errc::disconnected, fmt::format("sending to {} failed: {}", remote_.to_string(), failure));
    return;
  }
  update_interest();
}

bool PosixSendSocket::end_stream() {
  if (state_ != State::connected || !writer_.empty() || stream_ended_) return false;
  if (::shutdown(fd_.get(), SHUT_WR) != 0) {
    fail_connected(Errc::disconnected,
                   fmt::format("ending the stream to {} failed: {}", remote_.to_string(), errno_text(errno)));
    return true;  // on_disconnected has run: the end this promised, if not the clean one
  }
  stream_ended_ = true;
  // What is left to notice is the receiver's close. A busy-polling loop would keep the
  // descriptor out of epoll, where that hang-up shows while replies are not being read.
  registration_.spin(0);
  update_interest();
  return true;
}

void PosixSendSocket::update_interest() {
  if (state_ != State::connected) return;
  if (stream_ended_ && replies_ && replies_->stalled()) {
    // Registered even while the reader waits for buffers: the receiver's close (a hang-up,
    // both directions being shut) ends what end_stream() began (see on_peer_readable()).
    registration_.set(writer_.empty() ? 0u : std::uint32_t{EPOLLOUT});
    return;
  }
  registration_.update(!replies_ || !replies_->stalled(), !writer_.empty());
}

void PosixSendSocket::fail_connect(Errc code, const std::string& why) {
  log(LogLevel::debug, "send socket: {}", why);  // the layer above reports it (once, or rate-limited while retrying)
  auto callback = callbacks_.on_connect_failed;
  close();
  if (callback) callback(Error(code, why));
}

void PosixSendSocket::fail_connected(Errc code, const std::string& why) { fail_connected(Error(code, why)); }

void PosixSendSocket::fail_broken(int error_number, const std::string& why) {
  if (!stream_ended_) {
    fail_connected(Errc::disconnected, why);
    return;
  }
  fail_connected(Error(std::error_code(error_number, std::system_category()), why));
}

void PosixSendSocket::fail_connected(const Error& error) {
  if (state_ == State::closed) return;
  log(send_failure_level(error, stream_ended_), "send socket: {}", error.what());
  auto callback = callbacks_.on_disconnected;
  close();
  if (callback) callback(error);
}

void PosixSendSocket::close() noexcept {
  if (state_ == State::closed) return;
  state_ = State::closed;
  alive_.reset();
  if (replies_) replies_->close();
  if (fd_) {
    registration_.remove();
    fd_.reset();
  }
  writer_.clear();
  // callbacks_ stay: close() may run inside one of them. The state check keeps them silent.
}

}  // namespace netio::posix
