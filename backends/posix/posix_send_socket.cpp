#include "backends/posix/posix_send_socket.hpp"

#include "address.hpp"
#include "backends/posix/gather_list.hpp"
#include "backends/posix/wire.hpp"
#include "kernel_tcp.hpp"
#include "little_endian.hpp"
#include "netio/log.hpp"

#include <fmt/format.h>

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>

namespace netio::posix {
namespace {
constexpr std::size_t max_iovecs = 64;  // per sendmsg(): well under IOV_MAX
}  // namespace

void PosixSendSocket::connect(const Endpoint& remote, std::span<const std::byte> hello, Callbacks callbacks) {
  callbacks_ = std::move(callbacks);
  remote_ = remote;
  hello_frame_ = encode_frame(hello);
  const auto address = detail::resolve(remote, false);
  fd_ = SocketFd(::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd_) throw system_error(errno, fmt::format("{}: socket() failed", remote.to_string()));
  set_no_delay(fd_.get());
  state_ = State::connecting;
  if (::connect(fd_.get(), address.get(), address.length) != 0 && errno != EINPROGRESS) {
    const int err = errno;
    // Report asynchronously, like every other connect outcome.
    loop_.add_fd(fd_.get(), 0, [](std::uint32_t) {});
    // The socket may be closed and destroyed (on the loop thread) before the task runs.
    loop_.post([this, err, alive = std::weak_ptr<int>(alive_)] {
      if (!alive.expired() && state_ == State::connecting) {
        fail_connect(err == ECONNREFUSED ? Errc::connection_refused : Errc::backend_error,
                     fmt::format("connect to {} failed: {}", remote_.to_string(), errno_text(err)));
      }
    });
    return;
  }
  loop_.add_fd(fd_.get(), EPOLLOUT, [this](std::uint32_t events) { on_events(events); });
}

void PosixSendSocket::on_events(std::uint32_t events) {
  switch (state_) {
    case State::connecting:
      on_connect_completed();
      break;
    case State::handshaking:
      if (hello_written_ < hello_frame_.size() && (events & EPOLLOUT)) on_connect_completed();
      if (state_ == State::handshaking && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) on_reply_readable();
      break;
    case State::connected:
      if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_peer_readable();
      if (state_ == State::connected && (events & EPOLLOUT)) write_queued();
      break;
    case State::idle:
    case State::closed:
      break;
  }
}

void PosixSendSocket::on_connect_completed() {
  if (state_ == State::connecting) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      fail_connect(err == ECONNREFUSED ? Errc::connection_refused : Errc::backend_error,
                   fmt::format("connect to {} failed: {}", remote_.to_string(), errno_text(err)));
      return;
    }
    state_ = State::handshaking;
  }
  while (hello_written_ < hello_frame_.size()) {
    const ssize_t n = ::send(fd_.get(), hello_frame_.data() + hello_written_, hello_frame_.size() - hello_written_,
                             MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      fail_connect(Errc::backend_error,
                   fmt::format("sending the handshake to {} failed: {}", remote_.to_string(), errno_text(errno)));
      return;
    }
    hello_written_ += static_cast<std::size_t>(n);
  }
  loop_.modify_fd(fd_.get(), hello_written_ < hello_frame_.size() ? EPOLLOUT | EPOLLIN : EPOLLIN);
}

void PosixSendSocket::on_reply_readable() {
  switch (reply_reader_.read_from(fd_.get())) {
    case HandshakeReader::Status::need_more:
      return;
    case HandshakeReader::Status::closed:
      fail_connect(Errc::handshake_rejected,
                   fmt::format("{} closed the connection during the handshake (not a netio receive socket?)",
                               remote_.to_string()));
      return;
    case HandshakeReader::Status::failed:
      fail_connect(Errc::handshake_rejected,
                   fmt::format("handshake with {} failed: {}", remote_.to_string(), reply_reader_.error()));
      return;
    case HandshakeReader::Status::complete:
      break;
  }
  const auto reply = decode_reply(reply_reader_.payload());
  if (!reply) {
    fail_connect(Errc::handshake_rejected, fmt::format("{} sent a malformed handshake reply", remote_.to_string()));
    return;
  }
  if (!reply->accepted) {
    fail_connect(Errc::handshake_rejected, fmt::format("{} rejected the connection: {}", remote_.to_string(), reply->reason));
    return;
  }
  state_ = State::connected;
  update_interest();
  if (callbacks_.on_connected) callbacks_.on_connected(ConnectionInfo{remote_, reply->max_buffer_size});
  if (state_ == State::connected && !queue_.empty()) write_queued();
}

void PosixSendSocket::on_peer_readable() {
  // The receiver never sends after its reply: readable means closed, reset, or junk.
  std::byte scratch[256];
  const ssize_t n = ::recv(fd_.get(), scratch, sizeof scratch, 0);
  if (n > 0) {
    fail_connected(Errc::protocol_error, fmt::format("{} sent unexpected data on a send-only connection", remote_.to_string()));
  } else if (n == 0) {
    fail_connected(Errc::disconnected, fmt::format("{} closed the connection", remote_.to_string()));
  } else if (errno != EAGAIN && errno != EINTR) {
    fail_connected(Errc::disconnected, fmt::format("connection to {} lost: {}", remote_.to_string(), errno_text(errno)));
  }
}

void PosixSendSocket::send(Buffer* buffer) {
  if (state_ == State::closed) return;
  Pending pending{buffer, {}};
  detail::store_le<std::uint64_t>(pending.header.data(), buffer->size);
  queue_.push_back(pending);
  if (state_ == State::connected && !want_write_) write_queued();
}

void PosixSendSocket::write_queued() {
  if (writing_) return;  // a completion callback sent more: the outer call picks it up
  writing_ = true;
  std::array<iovec, max_iovecs> iov{};
  while (state_ == State::connected && !queue_.empty()) {
    GatherList gather(iov, head_offset_, detail::kernel_tcp_write_limit);
    for (const auto& p : queue_) {
      if (!gather.add(p.header.data(), p.header.size()) || !gather.add(p.buffer->data, p.buffer->size)) break;
    }
    msghdr msg{};
    msg.msg_iov = gather.data();
    msg.msg_iovlen = gather.count();
    const ssize_t n = gather.count() == 0 ? 0 : ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      fail_connected(Errc::disconnected, fmt::format("sending to {} failed: {}", remote_.to_string(), errno_text(errno)));
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
    for (std::size_t i = 0; i < completed_.size() && state_ == State::connected; ++i) {
      if (callbacks_.on_send_completed) callbacks_.on_send_completed(completed_[i]);
    }
    completed_.clear();
  }
  writing_ = false;
  if (state_ == State::connected) update_interest();
}

void PosixSendSocket::update_interest() {
  const bool want = !queue_.empty();
  if (want == want_write_ && state_ == State::connected) return;
  want_write_ = want;
  loop_.modify_fd(fd_.get(), EPOLLIN | (want ? EPOLLOUT : 0u));
}

void PosixSendSocket::fail_connect(Errc code, const std::string& why) {
  log(LogLevel::info, "send socket: {}", why);
  auto callback = callbacks_.on_connect_failed;
  close();
  if (callback) callback(Error(code, why));
}

void PosixSendSocket::fail_connected(Errc code, const std::string& why) {
  log(LogLevel::info, "send socket: {}", why);
  auto callback = callbacks_.on_disconnected;
  close();
  if (callback) callback(Error(code, why));
}

void PosixSendSocket::close() noexcept {
  if (state_ == State::closed) return;
  state_ = State::closed;
  if (fd_) {
    loop_.remove_fd(fd_.get());
    fd_.reset();
  }
  queue_.clear();
  // callbacks_ stay: close() may run inside one of them. The state check keeps them silent.
}

}  // namespace netio::posix
