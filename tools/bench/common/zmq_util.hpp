// SPDX-License-Identifier: MIT
// Thin RAII wrappers over libzmq's C API for the ZeroMQ reference programs, plus what they
// share: binding to 127.0.0.1 (port 0: an ephemeral one) or to any endpoint, and reporting it via
// --port-file.
#pragma once

#include "bench/common/bench_common.hpp"
#include "common/tool_main.hpp"

#include <fmt/format.h>
#include <zmq.h>

#include <cerrno>
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

  void set(int option, int value) { zmq_check(zmq_setsockopt(socket_, option, &value, sizeof value), "zmq_setsockopt"); }
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
