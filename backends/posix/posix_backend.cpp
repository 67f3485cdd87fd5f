// SPDX-License-Identifier: MIT
#include "backends/posix/posix_backend.hpp"

#include "backends/posix/posix_listen_socket.hpp"
#include "backends/posix/posix_send_socket.hpp"

namespace netio::posix {
namespace {

class PosixBackend final : public Backend {
 public:
  explicit PosixBackend(EventLoop& loop) : loop_(loop) {}
  std::unique_ptr<LowLevelSendSocket> make_send_socket() override { return std::make_unique<PosixSendSocket>(loop_); }
  std::unique_ptr<LowLevelListenSocket> make_listen_socket() override {
    return std::make_unique<PosixListenSocket>(loop_);
  }

 private:
  EventLoop& loop_;
};

}  // namespace

std::unique_ptr<Backend> make_backend(EventLoop& loop) { return std::make_unique<PosixBackend>(loop); }

}  // namespace netio::posix
