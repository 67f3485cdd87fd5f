// SPDX-License-Identifier: MIT
// Peers for the admission and authentication tests: a verified stream from a legitimate
// sender (counted per sender name at the receiver), raw TCP connections that misbehave, and
// low-level send sockets that stop after their hello.
#pragma once

#include "backends/posix/wire.hpp"
#include "handshake.hpp"
#include "introduction.hpp"
#include "netio/backend/backend.hpp"
#include "netio/backend/event_loop.hpp"
#include "netio/context.hpp"
#include "netio/low_latency_socket.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace netio::test {

// Counts, per sender name, the messages of a verified stream: message i is
// pattern(stream_message_size, i), so a lost, duplicated, reordered or corrupt one shows.
class StreamCheck {
 public:
  static constexpr std::size_t stream_message_size = 200;

  // The handler for a LowLatencyReceiveSocket.
  LowLatencyReceiveSocket::Handler handler() {
    return [this](std::span<const std::byte> message, const Peer& peer) {
      std::lock_guard lock(mutex_);
      auto& count = received_[peer.name()];
      const auto expected = pattern(stream_message_size, count);
      if (message.size() != expected.size() || std::memcmp(message.data(), expected.data(), expected.size()) != 0) {
        ++corrupt_;
      }
      ++count;
    };
  }
  std::uint64_t received(const std::string& name) const {
    std::lock_guard lock(mutex_);
    const auto it = received_.find(name);
    return it == received_.end() ? 0 : it->second;
  }
  std::uint64_t corrupt() const {
    std::lock_guard lock(mutex_);
    return corrupt_;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::uint64_t> received_;
  std::uint64_t corrupt_ = 0;
};

// Sends messages [first, first + count) of the verified stream and waits until they are out.
inline void send_stream(LowLatencySendSocket& sender, std::uint64_t first, std::uint64_t count) {
  for (std::uint64_t i = first; i < first + count; ++i) sender.send(pattern(StreamCheck::stream_message_size, i));
  REQUIRE(sender.wait_sent(std::chrono::seconds(30)));
}

inline LowLatencySendOptions named(const std::string& name) {
  LowLatencySendOptions options;
  options.identity.name = name;
  options.send_timeout = std::chrono::seconds(20);
  return options;
}

// The POSIX back-end's connect request of a low-latency sender (its first frame).
inline std::vector<std::byte> posix_request_frame() {
  return posix::encode_request(0, detail::encode_hello({detail::SocketKind::low_latency_send, 0}));
}

// A blocking TCP connection to 127.0.0.1:port; closes on destruction.
class RawConnection {
 public:
  explicit RawConnection(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    REQUIRE(fd_ >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  }
  ~RawConnection() { ::close(fd_); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  void send_bytes(std::span<const std::byte> bytes) const {
    REQUIRE(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
  }
  // The POSIX back-end's handshake of a low-latency sender named `name`: its connect
  // request, the listener's accept, the introduction. What is sent next are data frames.
  void introduce(const std::string& name) const {
    send_bytes(posix_request_frame());
    const auto answer = receive(64, std::chrono::seconds(10));
    REQUIRE(answer.size() >= 9);
    REQUIRE(answer[8] == std::byte{1});  // accepted
    send_bytes(posix::encode_frame(detail::encode_introduction({name, std::nullopt})));
  }
  // Reads up to `size` bytes, waiting up to `timeout` for the first.
  std::vector<std::byte> receive(std::size_t size, std::chrono::milliseconds timeout) const {
    std::vector<std::byte> bytes(size);
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return {};
    const ssize_t n = ::recv(fd_, bytes.data(), bytes.size(), 0);
    bytes.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    return bytes;
  }
  // Whether the other side closed (end of file or reset) within `timeout`. Bytes the other
  // side sent before (a handshake reply) are read and skipped.
  bool closed_by_peer(std::chrono::milliseconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::byte sink[512];
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) != 1) continue;
      const ssize_t n = ::recv(fd_, sink, sizeof sink, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
    }
    return false;
  }

 private:
  int fd_;
};

// A low-level send socket that connects with a valid hello (or `hello` when given), and
// then sends only what the test tells it to. Lives on its context's loop.
class HelloOnlyPeer {
 public:
  HelloOnlyPeer(Context& context, const Endpoint& remote, std::vector<std::byte> hello = {}) : context_(context) {
    if (hello.empty()) hello = detail::encode_hello({detail::SocketKind::low_latency_send, 0});
    context_.loop().run_sync([&] {
      socket_ = context_.backend(remote).make_send_socket();
      LowLevelSendSocket::Callbacks callbacks;
      callbacks.on_connected = [this](const ConnectionInfo& info) {
        std::lock_guard lock(mutex_);
        accept_data_ = info.accept_data;
        connected_ = true;
      };
      callbacks.on_connect_failed = [this](const Error&) { failed_ = true; };
      callbacks.on_disconnected = [this](const Error&) { disconnected_ = true; };
      callbacks.on_send_completed = [](Buffer*) {};
      socket_->connect(remote, hello, std::move(callbacks));
    });
  }
  ~HelloOnlyPeer() {
    context_.loop().run_sync([this] {
      socket_->close();
      if (auto* registrar = socket_->registrar()) {
        for (auto& buffer : buffers_) registrar->deregister_buffer(*buffer);
      }
      socket_.reset();
    });
  }
  HelloOnlyPeer(const HelloOnlyPeer&) = delete;
  HelloOnlyPeer& operator=(const HelloOnlyPeer&) = delete;

  bool connected() const { return connected_; }
  bool failed() const { return failed_; }
  bool disconnected() const { return disconnected_; }
  std::vector<std::byte> accept_data() const {
    std::lock_guard lock(mutex_);
    return accept_data_;
  }
  // Sends `bytes` as one buffer (kept alive here until the peer goes).
  void send(std::vector<std::byte> bytes) {
    context_.loop().run_sync([&] {
      auto& kept = sent_.emplace_back(std::make_unique<std::vector<std::byte>>(std::move(bytes)));
      buffers_.push_back(std::make_unique<Buffer>(Buffer{kept->data(), kept->size(), kept->size()}));
      if (auto* registrar = socket_->registrar()) registrar->register_buffer(*buffers_.back());
      socket_->send(buffers_.back().get());
    });
  }

 private:
  Context& context_;
  std::unique_ptr<LowLevelSendSocket> socket_;
  mutable std::mutex mutex_;
  std::vector<std::byte> accept_data_;
  std::vector<std::unique_ptr<std::vector<std::byte>>> sent_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  std::atomic<bool> connected_{false}, failed_{false}, disconnected_{false};
};

}  // namespace netio::test
