// SPDX-License-Identifier: MIT
// Thin RAII wrappers over libzmq's C API for the ZeroMQ reference programs, plus what they
// share: binding to 127.0.0.1 (port 0: an ephemeral one) or to any endpoint, and reporting it via
// --port-file.
#pragma once

#include "bench/common/bench_common.hpp"
#include "common/termination.hpp"
#include "common/tool_main.hpp"

#include <fmt/format.h>
#include <zmq.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace netio::bench {

inline void zmq_check(int rc, const char* what) {
  if (rc < 0) throw std::runtime_error(fmt::format("{}: {}", what, zmq_strerror(zmq_errno())));
}

class ZmqContext {
 public:
  ZmqContext() : context_(zmq_ctx_new()) {
    if (context_ == nullptr) zmq_check(-1, "zmq_ctx_new");
  }
  ~ZmqContext() { zmq_ctx_term(context_); }
  ZmqContext(const ZmqContext&) = delete;
  ZmqContext& operator=(const ZmqContext&) = delete;
  void* get() const noexcept { return context_; }

 private:
  void* context_;
};

class ZmqSocket {
 public:
  ZmqSocket(const ZmqContext& context, int type) : socket_(zmq_socket(context.get(), type)) {
    if (socket_ == nullptr) zmq_check(-1, "zmq_socket");
  }
  ~ZmqSocket() { zmq_close(socket_); }
  ZmqSocket(const ZmqSocket&) = delete;
  ZmqSocket& operator=(const ZmqSocket&) = delete;
  void* get() const noexcept { return socket_; }

  void set(int option, int value) {
    zmq_check(zmq_setsockopt(socket_, option, &value, sizeof value), "zmq_setsockopt");
  }
  void connect(const std::string& endpoint) { zmq_check(zmq_connect(socket_, endpoint.c_str()), "zmq_connect"); }

  // Binds to tcp://127.0.0.1:PORT (0: any) and returns the port bound.
  std::uint16_t bind_loopback(std::uint16_t port) {
    const std::string endpoint = port ? fmt::format("tcp://127.0.0.1:{}", port) : std::string("tcp://127.0.0.1:*");
    zmq_check(zmq_bind(socket_, endpoint.c_str()), "zmq_bind");
    char last[256] = {};
    std::size_t length = sizeof last;
    zmq_check(zmq_getsockopt(socket_, ZMQ_LAST_ENDPOINT, last, &length), "ZMQ_LAST_ENDPOINT");
    const std::string text(last);
    return static_cast<std::uint16_t>(std::stoi(text.substr(text.rfind(':') + 1)));
  }

 private:
  void* socket_;
};

// A received message, released on destruction.
class ZmqMessage {
 public:
  ZmqMessage() { zmq_msg_init(&message_); }
  ~ZmqMessage() { zmq_msg_close(&message_); }
  ZmqMessage(const ZmqMessage&) = delete;
  ZmqMessage& operator=(const ZmqMessage&) = delete;
  zmq_msg_t* get() noexcept { return &message_; }
  std::size_t size() noexcept { return zmq_msg_size(&message_); }

 private:
  zmq_msg_t message_;
};

inline bool zmq_again() { return zmq_errno() == EAGAIN || zmq_errno() == EINTR; }

// Watches a socket for its peer's disconnect (zmq_socket_monitor over inproc). A sender that
// closes while the receiver still has data to read can lose that data over ipc:// (libzmq
// 4.3.4: the receiver, paused at its high-water mark, never reads the rest), so the sender
// waits for the receiver to hang up first, as tcp_throughput's sender does. Create it before
// connecting, on the socket's context; not thread-safe (one thread, like the socket).
class DisconnectWatch {
 public:
  DisconnectWatch(const ZmqContext& context, ZmqSocket& socket)
      : endpoint_(fmt::format("inproc://disconnect-watch-{}", static_cast<const void*>(&socket))) {
    zmq_check(zmq_socket_monitor(socket.get(), endpoint_.c_str(), ZMQ_EVENT_DISCONNECTED), "zmq_socket_monitor");
    events_ = zmq_socket(context.get(), ZMQ_PAIR);
    if (events_ == nullptr) zmq_check(-1, "zmq_socket");
    const int timeout_ms = 100;
    zmq_setsockopt(events_, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
    zmq_check(zmq_connect(events_, endpoint_.c_str()), "zmq_connect (monitor)");
  }
  ~DisconnectWatch() { zmq_close(events_); }
  DisconnectWatch(const DisconnectWatch&) = delete;
  DisconnectWatch& operator=(const DisconnectWatch&) = delete;

  // True once the peer disconnected; false when `deadline` passed or Ctrl-C came first.
  bool wait(Clock::time_point deadline) {
    while (Clock::now() < deadline && !netio::tools::stop_requested()) {
      ZmqMessage event;  // two frames: {uint16 event, uint32 value}, then the endpoint
      if (zmq_msg_recv(event.get(), events_, 0) < 0) continue;
      std::uint16_t id = 0;
      if (event.size() >= sizeof id) std::memcpy(&id, zmq_msg_data(event.get()), sizeof id);
      ZmqMessage address;
      zmq_msg_recv(address.get(), events_, 0);
      if (id == ZMQ_EVENT_DISCONNECTED) return true;
    }
    return false;
  }

 private:
  std::string endpoint_;
  void* events_ = nullptr;
};

// Binds, prints where, writes the port file.
inline void bind_and_announce(ZmqSocket& socket, const char* tool, std::uint16_t port, const std::string& port_file) {
  const std::uint16_t bound = socket.bind_loopback(port);
  fmt::print(stderr, "{}: listening on tcp://127.0.0.1:{}\n", tool, bound);
  if (!port_file.empty()) netio::tools::write_port_file(port_file, bound);
}

// Binds any ZeroMQ endpoint (e.g. ipc://@name), prints it, and writes port 0 to the port
// file: scripts wait for that file to know the socket is bound, whatever the transport.
inline void bind_and_announce(ZmqSocket& socket, const char* tool, const std::string& endpoint,
                              const std::string& port_file) {
  zmq_check(zmq_bind(socket.get(), endpoint.c_str()), fmt::format("zmq_bind {}", endpoint).c_str());
  fmt::print(stderr, "{}: listening on {}\n", tool, endpoint);
  if (!port_file.empty()) netio::tools::write_port_file(port_file, 0);
}

}  // namespace netio::bench
