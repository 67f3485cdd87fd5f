// SPDX-License-Identifier: MIT
// The two halves of a ZeroMQ throughput run, shared by zmq_throughput (PUSH/PULL) and
// zmq_pubsub (XPUB/SUB): send fixed-size messages for a count or a time and end with an
// empty message; receive until the empty message and count.
#pragma once

#include "bench/common/zmq_util.hpp"
#include "common/termination.hpp"

namespace netio::bench {

struct StreamLimits {
  std::uint64_t size = 0;
  std::uint64_t messages = 0;  // 0: send for `time`
  std::chrono::nanoseconds time{};
  Clock::time_point deadline;  // the whole run
};

// Sends, then the end marker; returns what was sent. The socket needs ZMQ_SNDTIMEO set so
// that a full queue lets the deadline be checked.
inline netio::tools::ThroughputResult send_stream(ZmqSocket& socket, const StreamLimits& limits) {
  std::vector<char> payload(limits.size, 'z');
  const auto send_one = [&](const char* data, std::size_t length) {
    while (zmq_send(socket.get(), data, length, 0) < 0) {
      if (!zmq_again()) zmq_check(-1, "zmq_send");
      if (Clock::now() >= limits.deadline || netio::tools::stop_requested()) {
        throw std::runtime_error("--timeout passed (or interrupted) while sending");
      }
    }
  };
  const auto start = Clock::now();
  const auto end_time = start + limits.time;
  std::uint64_t sent = 0;
  for (;; ++sent) {
    if (limits.messages ? sent >= limits.messages : ((sent & 255) == 0 && Clock::now() >= end_time)) break;
    if ((sent & 4095) == 0 && (Clock::now() >= limits.deadline || netio::tools::stop_requested())) {
      throw std::runtime_error("--timeout passed (or interrupted) while sending");
    }
    send_one(payload.data(), payload.size());
  }
  send_one(nullptr, 0);  // end of stream
  netio::tools::ThroughputResult r;
  r.size = limits.size;
  r.messages = sent;
  r.bytes = sent * limits.size;
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

// Receives until the empty end-of-stream message; the clock starts at the first message.
// The socket needs ZMQ_RCVTIMEO set.
inline netio::tools::ThroughputResult receive_stream(ZmqSocket& socket, Clock::time_point deadline) {
  netio::tools::ThroughputResult r;
  Clock::time_point first{};
  for (;;) {
    ZmqMessage message;
    if (zmq_msg_recv(message.get(), socket.get(), 0) < 0) {
      if (!zmq_again()) zmq_check(-1, "zmq_msg_recv");
      if (Clock::now() >= deadline || netio::tools::stop_requested()) {
        throw std::runtime_error("--timeout passed (or interrupted) before the end of the stream");
      }
      continue;
    }
    const std::size_t length = message.size();
    if (length == 0) break;
    if (r.messages == 0) {
      first = Clock::now();
      r.size = length;
    }
    ++r.messages;
    r.bytes += length;
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - first).count();
  return r;
}

}  // namespace netio::bench
