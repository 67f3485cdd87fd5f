// SPDX-License-Identifier: MIT
// The three sockets of the emulated back-end, each wrapping the real back-end's socket.
// They keep the contract of netio/backend/backend.hpp: completions in FIFO order (buffers reach the
// real socket in the order sent), no callback after close() (close() drops what waits and
// stops the timers), a failing connection gives every waiting buffer back (dropped, as after
// close()). A receive socket's replies are buffers its node sends: they wait in a send-side
// flow of their own (the draws of the link to the peer, then out=) like a send socket's.
// Loop thread only, as every socket.
#pragma once

#include "backends/emulated/network_state.hpp"
#include "backends/emulated/shaped_flow.hpp"
#include "netio/backend/backend.hpp"

#include <memory>
#include <optional>

namespace netio::emulated {

class EmulatedSendSocket final : public LowLevelSendSocket {
 public:
  EmulatedSendSocket(std::unique_ptr<LowLevelSendSocket> inner, std::shared_ptr<NetworkState> state, EventLoop& loop);
  ~EmulatedSendSocket() override;

  void accept_replies(ReplyWindow window) override { inner_->accept_replies(window); }
  void connect(const Endpoint& remote, std::span<const std::byte> hello, Callbacks callbacks) override;
  void send(Buffer* buffer) override;
  MemoryRegistrar* registrar() noexcept override { return inner_->registrar(); }
  std::shared_ptr<BufferMemory> send_memory() noexcept override { return inner_->send_memory(); }
  void use_send_memory(std::shared_ptr<BufferMemory> memory) noexcept override {
    inner_->use_send_memory(std::move(memory));
  }
  bool sends_unregistered_memory() const noexcept override { return inner_->sends_unregistered_memory(); }
  std::size_t efficient_buffer_size() const noexcept override { return inner_->efficient_buffer_size(); }
  // Every buffer has completed, so none waits here: the real socket ends the stream.
  bool end_stream() override { return !closed_ && inner_->end_stream(); }
  void close() noexcept override;

 private:
  std::unique_ptr<LowLevelSendSocket> inner_;
  std::shared_ptr<NetworkState> state_;
  EventLoop& loop_;
  std::unique_ptr<ShapedFlow<Buffer*>> flow_;  // made by connect()
  bool closed_ = false;
};

class EmulatedReceiveSocket final : public LowLevelReceiveSocket {
 public:
  EmulatedReceiveSocket(std::unique_ptr<LowLevelReceiveSocket> inner, std::shared_ptr<NetworkState> state,
                        EventLoop& loop, const Endpoint& local);
  ~EmulatedReceiveSocket() override;

  void start(Callbacks callbacks) override;
  const Endpoint& peer() const noexcept override { return inner_->peer(); }
  std::size_t max_reply_size() const noexcept override { return inner_->max_reply_size(); }
  std::size_t bytes_held() const noexcept override { return inner_->bytes_held(); }
  MemoryRegistrar* reply_registrar() noexcept override { return inner_->reply_registrar(); }
  // Delayed and shaped as a send socket's buffer, then handed to the real socket, whose
  // on_reply_completed reports it (in the order sent).
  void send_reply(Buffer* buffer) override;
  void close() noexcept override;

 private:
  std::unique_ptr<LowLevelReceiveSocket> inner_;
  std::shared_ptr<NetworkState> state_;
  EventLoop& loop_;
  Endpoint local_;
  std::unique_ptr<ShapedFlow<ReceivedBuffer>> flow_;  // what arrives; made by start()
  std::unique_ptr<ShapedFlow<Buffer*>> replies_;      // what goes back to the peer
  bool closed_ = false;
};

class EmulatedListenSocket final : public LowLevelListenSocket {
 public:
  EmulatedListenSocket(std::unique_ptr<LowLevelListenSocket> inner, std::shared_ptr<NetworkState> state,
                       EventLoop& loop)
      : inner_(std::move(inner)), state_(std::move(state)), loop_(loop) {}

  void listen(const Endpoint& local, Callbacks callbacks, const ListenLimits& limits) override;
  Endpoint local_endpoint() const override { return inner_->local_endpoint(); }
  std::size_t establishing() const noexcept override { return inner_->establishing(); }
  bool allocates_receive_buffers_up_front() const noexcept override {
    return inner_->allocates_receive_buffers_up_front();
  }
  bool peers_are_processes() const noexcept override { return inner_->peers_are_processes(); }
  void close() noexcept override { inner_->close(); }

 private:
  std::unique_ptr<LowLevelListenSocket> inner_;
  std::shared_ptr<NetworkState> state_;
  EventLoop& loop_;
};

}  // namespace netio::emulated
