// SPDX-License-Identifier: MIT
// A test decorator: a Backend whose listen sockets say they allocate receive buffers up front
// (LowLevelListenSocket::allocates_receive_buffers_up_front()), as libfabric does on a
// provider that pins registered memory (verbs). The tests have no such provider; over
// fabric://...?provider=tcp this runs the budget's up-front charge (credits cut to fit,
// then rejection) on real posted buffers. Everything else is forwarded unchanged.
// Installed with pin_receive_buffers(options) (ContextOptions::wrap_backend).
#pragma once

#include "netio/backend/backend.hpp"
#include "netio/backend/event_loop.hpp"
#include "netio/context.hpp"

#include <memory>
#include <string_view>
#include <utility>

namespace netio::test {

class PinnedBuffersListenSocket final : public LowLevelListenSocket {
 public:
  explicit PinnedBuffersListenSocket(std::unique_ptr<LowLevelListenSocket> inner) : inner_(std::move(inner)) {}

  void listen(const Endpoint& local, Callbacks callbacks, const ListenLimits& limits) override {
    inner_->listen(local, std::move(callbacks), limits);
  }
  Endpoint local_endpoint() const override { return inner_->local_endpoint(); }
  std::size_t establishing() const noexcept override { return inner_->establishing(); }
  bool allocates_receive_buffers_up_front() const noexcept override { return true; }
  void close() noexcept override { inner_->close(); }

 private:
  std::unique_ptr<LowLevelListenSocket> inner_;
};

class PinnedBuffersBackend final : public Backend {
 public:
  explicit PinnedBuffersBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}

  std::unique_ptr<LowLevelSendSocket> make_send_socket() override { return inner_->make_send_socket(); }
  std::unique_ptr<LowLevelListenSocket> make_listen_socket() override {
    return std::make_unique<PinnedBuffersListenSocket>(inner_->make_listen_socket());
  }

 private:
  std::unique_ptr<Backend> inner_;
};

// Around whatever `options` already wrap the back-ends in.
inline ContextOptions pin_receive_buffers(ContextOptions options) {
  options.wrap_backend = [previous = std::move(options.wrap_backend)](std::string_view scheme,
                                                                      std::unique_ptr<Backend> inner,
                                                                      EventLoop& loop) -> std::unique_ptr<Backend> {
    if (previous) inner = previous(scheme, std::move(inner), loop);
    return std::make_unique<PinnedBuffersBackend>(std::move(inner));
  };
  return options;
}

}  // namespace netio::test
