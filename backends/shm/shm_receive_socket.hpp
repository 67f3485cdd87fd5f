// SPDX-License-Identifier: MIT
// The listening side of a shm:// connection once accepted: it creates the connection's
// segment (sized from the accept: the receiver's buffers for data, the sender's largest
// reply for replies), passes it to the connector, and then lends data entries in place from
// the data ring and copies replies into the reply ring (ShmConnection).
//
// Memory: bytes_held() is the pages of the data ring the sender has filled so far (it grows
// as data comes), charged as held by the layer above, as on tcp:// and libfabric: an idle
// connection costs the 64 KiB every connection is charged, not its ring. It counts at most
// the receiver's buffers (credits x the largest): what the ring takes beyond them (64 bytes
// of header per entry, rounding to pages, the second entry of a one-credit ring) is its
// overhead, as a TCP socket's kernel buffers are. Added to it: the pages of the sender's send
// area resident in this process (read in place; at most twice the buffers besides what is
// lent, ShmConnection::area_bytes_resident()), so that a sender referencing page after page
// of a large area is charged what it makes this process map in.
// Loop thread only, except that lent buffers may be given back on any thread.
#pragma once

#include "backends/posix/socket_fd.hpp"
#include "backends/shm/shm_connection.hpp"
#include "netio/backend/backend.hpp"
#include "netio/backend/event_loop.hpp"

#include <algorithm>
#include <memory>

namespace netio::shm {

class ShmReceiveSocket final : public LowLevelReceiveSocket {
 public:
  // Creates and passes the segment. Throws Error when it cannot.
  ShmReceiveSocket(EventLoop& loop, posix::SocketFd fd, Endpoint local, Endpoint peer, std::size_t max_buffer_size,
                   std::size_t credits, std::size_t max_reply_size);
  ~ShmReceiveSocket() override { close(); }

  void start(Callbacks callbacks) override;
  const Endpoint& peer() const noexcept override { return peer_; }
  std::size_t bytes_held() const noexcept override {
    return std::min(connection_->bytes_held(), buffers_size_) + connection_->area_bytes_resident();
  }
  std::size_t max_reply_size() const noexcept override { return max_reply_size_; }
  MemoryRegistrar* reply_registrar() noexcept override { return nullptr; }
  void send_reply(Buffer* buffer) override;
  void close() noexcept override { connection_->close(); }

 private:
  void fail(Errc code, const std::string& why);

  Endpoint local_;
  Endpoint peer_;
  std::size_t max_reply_size_;
  std::size_t buffers_size_;  // credits x the largest buffer (saturated)
  std::unique_ptr<ShmConnection> connection_;
  Callbacks callbacks_;
  bool failed_ = false;
};

}  // namespace netio::shm
