// SPDX-License-Identifier: MIT
#include "backends/posix/posix_backend.hpp"

#include "backends/posix/posix_listen_socket.hpp"
#include "backends/posix/posix_send_socket.hpp"

namespace netio::posix {
namespace {

class PosixBackend final : public Backend {
 public:
  PosixBackend(EventLoop& loop, std::shared_ptr<const StreamFamily> family) : loop_(loop), family_(std::move(family)) {}
  std::unique_ptr<LowLevelSendSocket> make_send_socket() override {
    return std::make_unique<PosixSendSocket>(loop_, family_);
  }
  std::unique_ptr<LowLevelListenSocket> make_listen_socket() override {
    return std::make_unique<PosixListenSocket>(loop_, family_);
  }

 private:
  EventLoop& loop_;
  std::shared_ptr<const StreamFamily> family_;
};

}  // namespace

std::unique_ptr<Backend> make_backend(EventLoop& loop) { return make_backend(loop, tcp_family()); }

std::unique_ptr<Backend> make_backend(EventLoop& loop, std::shared_ptr<const StreamFamily> family) {
  return std::make_unique<PosixBackend>(loop, std::move(family));
}

}  // namespace netio::posix
