// SPDX-License-Identifier: MIT
// POSIX send socket: a non-blocking TCP connection that writes whole buffers as frames
// (FrameWriter), and reads the replies the receiver sends back on it (FrameReader), when it
// declared it takes them (accept_replies()).
#pragma once

#include "address.hpp"
#include "backends/posix/fd_registration.hpp"
#include "backends/posix/frame_reader.hpp"
#include "backends/posix/frame_writer.hpp"
#include "backends/posix/handshake_reader.hpp"
#include "backends/posix/socket_fd.hpp"
#include "backends/posix/stream_family.hpp"
#include "netio/backend/backend.hpp"
#include "netio/backend/event_loop.hpp"
#include "netio/log.hpp"

#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netio::posix {

// How loud a connected send socket's failure is: after end_stream() a clean close is what
// the caller waits for (debug), a clean close otherwise info, anything else a warning.
// Shared with the shm:// send socket.
inline LogLevel send_failure_level(const Error& error, bool stream_ended) noexcept {
  const bool clean = error.code() == Errc::disconnected;
  return stream_ended && clean ? LogLevel::debug : clean ? LogLevel::info : LogLevel::warn;
}

class PosixSendSocket final : public LowLevelSendSocket {
 public:
  PosixSendSocket(EventLoop& loop, std::shared_ptr<const StreamFamily> family)
      : loop_(loop), family_(std::move(family)), registration_(loop) {}
  ~PosixSendSocket() override { close(); }

  void accept_replies(ReplyWindow window) override { replies_window_ = window; }
  // Tries every address of the remote (StreamFamily::connect_addresses) in turn until one
  // accepts the connection; the handshake then happens on that one only.
  void connect(const Endpoint& remote, std::span<const std::byte> hello, Callbacks callbacks) override;
  // connect() to addresses resolved already (`remote` names them in messages). Not empty.
  void connect_to(std::vector<detail::SocketAddress> addresses, const Endpoint& remote,
                  std::span<const std::byte> hello, Callbacks callbacks);
  // Never throws: a buffer larger than the peer takes fails the connection with
  // Error(message_too_large) through on_disconnected (from inside this call).
  void send(Buffer* buffer) override;
  MemoryRegistrar* registrar() noexcept override { return nullptr; }
  bool sends_unregistered_memory() const noexcept override { return true; }
  // No limit: a large buffer is written in several calls (detail::kernel_tcp_write_limit).
  std::size_t efficient_buffer_size() const noexcept override { return std::numeric_limits<std::size_t>::max(); }
  // Half-closes the connection (shutdown for writing): the receiver reads everything, then
  // the end, and closes; reading that close is the on_disconnected this promises.
  bool end_stream() override;
  void close() noexcept override;
  // Once accepted, the connection's descriptor and what the accept said go to `take`
  // instead of on_connected, and this socket is closed, silently: the caller carries the
  // data some other way (shm://, through a shared segment). Before connect() only.
  void hand_over_on_accept(std::function<void(SocketFd, ConnectionInfo)> take) { hand_over_ = std::move(take); }

 private:
  enum class State { idle, connecting, handshaking, connected, closed };

  void on_events(std::uint32_t events);
  // Connects to addresses_[attempt_], and on to the next ones while they fail at once.
  void start_attempt();
  // The attempt failed with `error_number`: the next address is tried, or, after the last
  // (or for an error no other address can mend), the connect fails naming every address tried.
  void attempt_failed(int error_number);
  // When `error_number` is one another address may mend and one is left: records why the
  // address being tried failed (`what` first) and moves on to the next one.
  bool next_address(int error_number, std::string_view what);
  void on_connect_completed();
  void on_reply_readable();
  void on_reply_received();  // the listener's answer is in reply_reader_
  void on_peer_readable();
  void write_queued();
  bool refuse_if_too_large(const Buffer& buffer);  // fails the connection if so
  void fail_connect(Errc code, const std::string& why);
  void fail_connected(Errc code, const std::string& why);
  void fail_connected(const Error& error);
  // The connection broke with `error_number` (a reset, as a rule). After end_stream() that
  // is not the clean end the close waits for: reported with the system error, not
  // Errc::disconnected.
  void fail_broken(int error_number, const std::string& why);
  void update_interest();

  EventLoop& loop_;
  std::shared_ptr<const StreamFamily> family_;
  Callbacks callbacks_;
  Endpoint remote_;
  std::vector<detail::SocketAddress> addresses_;  // of remote_, tried in turn
  std::size_t attempt_ = 0;                       // the address being tried
  std::string failed_attempts_;                   // "[::1]:5000: Connection refused; "...
  SocketFd fd_;
  FdRegistration registration_;
  State state_ = State::idle;
  ReplyWindow replies_window_;
  std::vector<std::byte> hello_frame_;
  std::size_t hello_written_ = 0;
  HandshakeReader reply_reader_;          // the listener's answer to the hello
  std::unique_ptr<FrameReader> replies_;  // replies after that, if the socket takes any
  FrameWriter writer_;
  std::size_t peer_max_buffer_size_ = 0;                   // from the accept
  bool stream_ended_ = false;                              // end_stream() shut the writing half
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // for the task a failed connect() posts
  std::function<void(SocketFd, ConnectionInfo)> hand_over_;
};

}  // namespace netio::posix
