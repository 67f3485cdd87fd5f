// SPDX-License-Identifier: MIT
#include "backends/emulated/emulated_sockets.hpp"

#include "backends/emulated/emulated_backend.hpp"

#include <sys/prctl.h>

#include <utility>

namespace netio::emulated {

EmulatedSendSocket::EmulatedSendSocket(std::unique_ptr<LowLevelSendSocket> inner, std::shared_ptr<NetworkState> state,
                                       EventLoop& loop)
    : inner_(std::move(inner)), state_(std::move(state)), loop_(loop) {}

EmulatedSendSocket::~EmulatedSendSocket() {
  if (flow_) flow_->close();
}

void EmulatedSendSocket::connect(const Endpoint& remote, std::span<const std::byte> hello, Callbacks callbacks) {
  flow_ = std::make_unique<ShapedFlow<Buffer*>>(loop_, state_, false, remote.host, remote.port,
                                                [this](Buffer* buffer) { inner_->send(buffer); });
  // A failed connection gives back what still waits here, as the real back-end does with
  // what it holds: the caller owns those buffers again.
  callbacks.on_disconnected = [this, next = std::move(callbacks.on_disconnected)](const Error& error) {
    flow_->close();
    if (next) next(error);
  };
  inner_->connect(remote, hello, std::move(callbacks));
}

void EmulatedSendSocket::send(Buffer* buffer) {
  if (closed_ || !flow_) return;
  flow_->push(buffer, buffer->size);
}

void EmulatedSendSocket::close() noexcept {
  closed_ = true;
  if (flow_) flow_->close();
  inner_->close();
}

EmulatedReceiveSocket::EmulatedReceiveSocket(std::unique_ptr<LowLevelReceiveSocket> inner,
                                             std::shared_ptr<NetworkState> state, EventLoop& loop,
                                             const Endpoint& local)
    : inner_(std::move(inner)), state_(std::move(state)), loop_(loop), local_(local) {
  // Replies go out as a send socket's buffers do: the link to the peer's address (its
  // delay, rate= and link slow-downs, its own PRNG stream), then the node's out=.
  const Endpoint& peer = inner_->peer();
  replies_ = std::make_unique<ShapedFlow<Buffer*>>(loop_, state_, false, peer.host, peer.port,
                                                   [this](Buffer* buffer) { inner_->send_reply(buffer); });
}

EmulatedReceiveSocket::~EmulatedReceiveSocket() {
  if (flow_) flow_->close();
  replies_->close();
}

void EmulatedReceiveSocket::start(Callbacks callbacks) {
  flow_ = std::make_unique<ShapedFlow<ReceivedBuffer>>(
      loop_, state_, true, local_.host, local_.port,
      [on_data = std::move(callbacks.on_data)](ReceivedBuffer buffer) { on_data(std::move(buffer)); });
  callbacks.on_data = [this](ReceivedBuffer buffer) {
    const std::size_t bytes = buffer.bytes().size();
    flow_->push(std::move(buffer), bytes);
  };
  // A disconnection comes after the data before it: held buffers are handed up first.
  // Replies still waiting are dropped at once (the caller's again, as the real socket
  // drops those it holds): the connection cannot carry them, and none completes later.
  callbacks.on_disconnected = [this, next = std::move(callbacks.on_disconnected)](const Error& error) {
    replies_->close();
    if (flow_->idle()) {
      if (next) next(error);
      return;
    }
    flow_->set_on_drained([next, error] {
      if (next) next(error);
    });
  };
  inner_->start(std::move(callbacks));
}

void EmulatedReceiveSocket::send_reply(Buffer* buffer) {
  if (closed_) return;
  replies_->push(buffer, buffer->size);  // ignored once the connection failed (replies_ closed)
}

void EmulatedReceiveSocket::close() noexcept {
  closed_ = true;
  if (flow_) flow_->close();
  replies_->close();
  inner_->close();
}

void EmulatedListenSocket::listen(const Endpoint& local, Callbacks callbacks, const ListenLimits& limits) {
  callbacks.on_accepted = [this,
                           next = std::move(callbacks.on_accepted)](std::unique_ptr<LowLevelReceiveSocket> socket) {
    if (next) next(std::make_unique<EmulatedReceiveSocket>(std::move(socket), state_, loop_, inner_->local_endpoint()));
  };
  inner_->listen(local, std::move(callbacks), limits);
}

namespace {

class EmulatedBackend final : public Backend {
 public:
  EmulatedBackend(std::unique_ptr<Backend> inner, std::shared_ptr<NetworkState> state, EventLoop& loop)
      : inner_(std::move(inner)), state_(std::move(state)), loop_(loop) {}

  std::unique_ptr<LowLevelSendSocket> make_send_socket() override {
    return std::make_unique<EmulatedSendSocket>(inner_->make_send_socket(), state_, loop_);
  }
  std::unique_ptr<LowLevelListenSocket> make_listen_socket() override {
    return std::make_unique<EmulatedListenSocket>(inner_->make_listen_socket(), state_, loop_);
  }

 private:
  std::unique_ptr<Backend> inner_;
  std::shared_ptr<NetworkState> state_;
  EventLoop& loop_;
};

}  // namespace

std::unique_ptr<Backend> make_emulated_backend(std::unique_ptr<Backend> inner, std::shared_ptr<NetworkState> state,
                                               EventLoop& loop) {
  // Delays of tens of microseconds need timers that fire on time: the kernel's default
  // timer slack (50 us) would add up to that much to each. Called on the loop thread.
  ::prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
  return std::make_unique<EmulatedBackend>(std::move(inner), std::move(state), loop);
}

}  // namespace netio::emulated
