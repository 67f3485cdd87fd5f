// SPDX-License-Identifier: MIT
// What distinguishes one kind of stream socket from another for the POSIX sockets: TCP
// (tcp://) and Unix-domain sockets (shm://) share the sockets, the handshake, the admission
// and the framing (PosixSendSocket, PosixListenSocket, PosixReceiveSocket); a family says
// how an endpoint becomes an address, what a fresh connection is set up with, and which
// peers may connect at all.
//
// Immutable once made; the sockets share it (std::shared_ptr), so it outlives every socket
// of its back-end. Any thread.
#pragma once

#include "address.hpp"
#include "backends/posix/socket_fd.hpp"
#include "netio/backend/backend.hpp"
#include "netio/backend/event_loop.hpp"
#include "netio/endpoint.hpp"

#include <chrono>

#include <memory>
#include <string>
#include <vector>

namespace netio::posix {

class StreamFamily {
 public:
  virtual ~StreamFamily() = default;

  // The addresses to try, in turn, to reach `remote` (never empty).
  // Throws Error(Errc::resolve_failed) naming the endpoint.
  virtual std::vector<detail::SocketAddress> connect_addresses(const Endpoint& remote) const = 0;
  // A non-blocking listening descriptor bound to `local` (port 0: one the family picks);
  // sets `bound` to the endpoint it is bound to. Throws Error naming the endpoint.
  virtual SocketFd listen_on(const Endpoint& local, Endpoint& bound) const = 0;
  // Options of a connected descriptor, on either side (TCP_NODELAY). Throws Error.
  virtual void prepare(int fd) const = 0;

  // An accepted connection: who it is (`refusal` empty) or why it may not connect at all,
  // decided before its hello is read (the refusal is sent to it as a reject).
  struct Admission {
    Endpoint peer;
    std::string refusal;
  };
  virtual Admission admit(int fd, const detail::SocketAddress& address, const Endpoint& local) const = 0;
  // The connecting side's check of the listener it reached: empty, or why it is not to be
  // trusted with the data (the connect then fails with Errc::handshake_rejected).
  virtual std::string check_listener(int fd, const Endpoint& remote) const = 0;

  // The receive socket of a connection whose accept was just sent. The default: the POSIX
  // receive socket, data and replies as frames on the stream. Throws Error.
  virtual std::unique_ptr<LowLevelReceiveSocket> make_receive_socket(EventLoop& loop, SocketFd fd,
                                                                     const Endpoint& local, const Endpoint& peer,
                                                                     std::size_t max_buffer_size, std::size_t credits,
                                                                     std::size_t max_reply_size,
                                                                     std::chrono::nanoseconds progress_timeout) const;

  // Descriptors make_receive_socket() opens besides the connection's (shm://: its segment's
  // memfd, for a moment): the listener makes room for them as for an accept.
  virtual int descriptors_to_set_up() const noexcept { return 0; }

  // Whether admit()'s peer endpoint names one process (LowLevelListenSocket::peers_are_processes()).
  virtual bool peers_are_processes() const noexcept { return false; }

  // Whether readers peek and then discard (posix::FrameReader): it saves a TCP
  // acknowledgement per small message, and costs a second copy elsewhere.
  virtual bool peek_reads() const noexcept = 0;
};

// tcp://HOST:PORT: resolved names, every peer admitted (admission is the layer above's).
std::shared_ptr<const StreamFamily> tcp_family();

}  // namespace netio::posix
