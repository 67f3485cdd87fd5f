// SPDX-License-Identifier: MIT
// A test decorator: a Backend that wraps another and forwards every call, counting them,
// with each socket it makes wrapped the same way. Installed through
// ContextOptions::wrap_backend, it shows that a decorator sees all the traffic and that the
// shared suites hold through one (see wrapped_context_options() in test_context.hpp).
#pragma once

#include "netio/backend/backend.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

namespace netio::test {

struct BackendCallCounts {
  std::atomic<std::uint64_t> backends{0};
  std::atomic<std::uint64_t> send_sockets{0};
  std::atomic<std::uint64_t> listen_sockets{0};
  std::atomic<std::uint64_t> receive_sockets{0};  // accepted
  std::atomic<std::uint64_t> connects{0};
  std::atomic<std::uint64_t> sends{0};
  std::atomic<std::uint64_t> send_completions{0};
  std::atomic<std::uint64_t> received{0};  // on_data calls
  std::atomic<std::uint64_t> closes{0};
  std::atomic<std::uint64_t> replies_sent{0};      // send_reply calls
  std::atomic<std::uint64_t> replies_received{0};  // on_reply calls
};

class CountingSendSocket final : public LowLevelSendSocket {
 public:
  CountingSendSocket(std::unique_ptr<LowLevelSendSocket> inner, std::shared_ptr<BackendCallCounts> counts)
      : inner_(std::move(inner)), counts_(std::move(counts)) {}

  void accept_replies(ReplyWindow window) override { inner_->accept_replies(window); }
  void connect(const Endpoint& remote, std::span<const std::byte> hello, Callbacks callbacks) override {
    ++counts_->connects;
    callbacks.on_send_completed = [counts = counts_, next = std::move(callbacks.on_send_completed)](Buffer* buffer) {
      ++counts->send_completions;
      if (next) next(buffer);
    };
    callbacks.on_reply = [counts = counts_, next = std::move(callbacks.on_reply)](ReceivedBuffer reply) {
      ++counts->replies_received;
      if (next) next(std::move(reply));
    };
    inner_->connect(remote, hello, std::move(callbacks));
  }
  void send(Buffer* buffer) override {
    ++counts_->sends;
    inner_->send(buffer);
  }
  MemoryRegistrar* registrar() noexcept override { return inner_->registrar(); }
  std::shared_ptr<BufferMemory> send_memory() noexcept override { return inner_->send_memory(); }
  void use_send_memory(std::shared_ptr<BufferMemory> memory) noexcept override {
    inner_->use_send_memory(std::move(memory));
  }
  bool sends_unregistered_memory() const noexcept override { return inner_->sends_unregistered_memory(); }
  std::size_t efficient_buffer_size() const noexcept override { return inner_->efficient_buffer_size(); }
  bool end_stream() override { return inner_->end_stream(); }
  void close() noexcept override {
    ++counts_->closes;
    inner_->close();
  }

 private:
  std::unique_ptr<LowLevelSendSocket> inner_;
  std::shared_ptr<BackendCallCounts> counts_;
};

class CountingReceiveSocket final : public LowLevelReceiveSocket {
 public:
  CountingReceiveSocket(std::unique_ptr<LowLevelReceiveSocket> inner, std::shared_ptr<BackendCallCounts> counts)
      : inner_(std::move(inner)), counts_(std::move(counts)) {}

  void start(Callbacks callbacks) override {
    callbacks.on_data = [counts = counts_, next = std::move(callbacks.on_data)](ReceivedBuffer buffer) {
      ++counts->received;
      if (next) next(std::move(buffer));
    };
    inner_->start(std::move(callbacks));
  }
  const Endpoint& peer() const noexcept override { return inner_->peer(); }
  std::size_t bytes_held() const noexcept override { return inner_->bytes_held(); }
  std::size_t max_reply_size() const noexcept override { return inner_->max_reply_size(); }
  MemoryRegistrar* reply_registrar() noexcept override { return inner_->reply_registrar(); }
  void send_reply(Buffer* buffer) override {
    ++counts_->replies_sent;
    inner_->send_reply(buffer);
  }
  void close() noexcept override {
    ++counts_->closes;
    inner_->close();
  }

 private:
  std::unique_ptr<LowLevelReceiveSocket> inner_;
  std::shared_ptr<BackendCallCounts> counts_;
};

class CountingListenSocket final : public LowLevelListenSocket {
 public:
  CountingListenSocket(std::unique_ptr<LowLevelListenSocket> inner, std::shared_ptr<BackendCallCounts> counts)
      : inner_(std::move(inner)), counts_(std::move(counts)) {}

  void listen(const Endpoint& local, Callbacks callbacks, const ListenLimits& limits) override {
    callbacks.on_accepted = [counts = counts_,
                             next = std::move(callbacks.on_accepted)](std::unique_ptr<LowLevelReceiveSocket> socket) {
      ++counts->receive_sockets;
      if (next) next(std::make_unique<CountingReceiveSocket>(std::move(socket), counts));
    };
    inner_->listen(local, std::move(callbacks), limits);
  }
  Endpoint local_endpoint() const override { return inner_->local_endpoint(); }
  std::size_t establishing() const noexcept override { return inner_->establishing(); }
  bool allocates_receive_buffers_up_front() const noexcept override {
    return inner_->allocates_receive_buffers_up_front();
  }
  void close() noexcept override {
    ++counts_->closes;
    inner_->close();
  }

 private:
  std::unique_ptr<LowLevelListenSocket> inner_;
  std::shared_ptr<BackendCallCounts> counts_;
};

class CountingBackend final : public Backend {
 public:
  CountingBackend(std::unique_ptr<Backend> inner, std::shared_ptr<BackendCallCounts> counts)
      : inner_(std::move(inner)), counts_(std::move(counts)) {
    ++counts_->backends;
  }

  std::unique_ptr<LowLevelSendSocket> make_send_socket() override {
    ++counts_->send_sockets;
    return std::make_unique<CountingSendSocket>(inner_->make_send_socket(), counts_);
  }
  std::unique_ptr<LowLevelListenSocket> make_listen_socket() override {
    ++counts_->listen_sockets;
    return std::make_unique<CountingListenSocket>(inner_->make_listen_socket(), counts_);
  }

 private:
  std::unique_ptr<Backend> inner_;
  std::shared_ptr<BackendCallCounts> counts_;
};

}  // namespace netio::test
