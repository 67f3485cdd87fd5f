// SPDX-License-Identifier: MIT
// A hostile shm:// sender at the wire level: it completes the handshake as a low-latency
// sender (request, accept, the segment passed) and maps the segment, and then does what the
// test tells it to: push entries into the data ring as a sender would (bytes, references to
// a send area it passed), write wake-up bytes without end. Blocking calls, test thread.
#pragma once

#include "backends/posix/socket_fd.hpp"
#include "backends/posix/wire.hpp"
#include "backends/shm/ring.hpp"
#include "backends/shm/segment.hpp"
#include "backends/shm/segment_passing.hpp"
#include "backends/shm/unix_family.hpp"
#include "handshake.hpp"
#include "netio/endpoint.hpp"

#include <catch2/catch.hpp>

#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace netio::test {

class RawShmPeer {
 public:
  // Connects to `remote` as a low-latency sender; REQUIREs the accept and a usable segment.
  explicit RawShmPeer(const Endpoint& remote) : fd_(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    REQUIRE(fd_);
    const auto address = shm::abstract_address(remote);
    REQUIRE(::connect(fd_.get(), address.get(), address.length) == 0);
    const auto request = posix::encode_request(0, detail::encode_hello({detail::SocketKind::low_latency_send, 0}));
    REQUIRE(::send(fd_.get(), request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size()));
    std::array<std::byte, posix::frame_header_size> header{};
    REQUIRE(::recv(fd_.get(), header.data(), header.size(), MSG_WAITALL) == static_cast<ssize_t>(header.size()));
    std::uint64_t length = 0;
    std::memcpy(&length, header.data(), sizeof length);
    REQUIRE(length <= posix::max_handshake_frame);
    std::vector<std::byte> payload(length);
    REQUIRE(::recv(fd_.get(), payload.data(), payload.size(), MSG_WAITALL) == static_cast<ssize_t>(payload.size()));
    const auto reply = posix::decode_reply(payload);
    REQUIRE(reply);
    REQUIRE(reply->accepted);
    max_buffer_size_ = reply->max_buffer_size;
    pollfd readable{fd_.get(), POLLIN, 0};
    REQUIRE(::poll(&readable, 1, 10'000) == 1);
    auto received = shm::receive_segment(fd_.get());
    REQUIRE(received.status == shm::ReceivedSegment::Status::received);
    std::string why;
    segment_ = shm::Segment::attach(std::move(received.fd), shm::data_ring_limit, 0, why);
    INFO(why);
    REQUIRE(segment_);
    data_ = shm::RingProducer(&segment_->data_control(), segment_->data_ring(), segment_->data_capacity());
  }

  int fd() const noexcept { return fd_.get(); }
  std::size_t max_buffer_size() const noexcept { return max_buffer_size_; }
  shm::RingProducer& data() noexcept { return data_; }

  // Pushes one entry and wakes the receiver when it asked to be; false when the ring is full.
  bool push(std::span<const std::byte> payload, shm::EntryKind kind = shm::EntryKind::bytes) {
    std::string corrupt;
    const bool pushed = data_.push(payload, corrupt, kind);
    REQUIRE(corrupt.empty());
    if (pushed && data_.consumer_needs_wake()) wake();
    return pushed;
  }
  // One wake-up byte (a full socket is fine: the receiver looks anyway).
  void wake() const noexcept {
    const char byte = 1;
    [[maybe_unused]] const ssize_t n = ::send(fd_.get(), &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  // Passes `descriptor` beside a wake-up byte, as a sender passes its send area.
  void pass(int descriptor) const {
    const char byte = 2;
    REQUIRE(shm::pass_descriptor(fd_.get(), descriptor, std::span(&byte, 1)) == 0);
  }
  // Writes wake-up bytes as fast as the socket takes them, for `duration` or until the
  // receiver closes the connection; whether it did.
  bool flood(std::chrono::milliseconds duration) const {
    std::vector<char> bytes(64 * 1024, 1);
    const auto deadline = std::chrono::steady_clock::now() + duration;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd writable{fd_.get(), POLLOUT, 0};
      if (::poll(&writable, 1, 10) < 1) continue;
      if (writable.revents & (POLLHUP | POLLERR)) return true;
      if (::send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN) {
        return true;  // EPIPE, ECONNRESET: closed
      }
    }
    return false;
  }

 private:
  posix::SocketFd fd_;
  std::size_t max_buffer_size_ = 0;
  std::shared_ptr<shm::Segment> segment_;
  shm::RingProducer data_;
};

}  // namespace netio::test
