// SPDX-License-Identifier: MIT
// shm://: connections set up as the POSIX stream sockets set them up, over the Unix-domain
// family (backends/shm/unix_family.hpp: addresses, credentials), with data and replies
// through a shared segment per connection (ShmSendSocket, ShmReceiveSocket).
#include "backends/posix/posix_listen_socket.hpp"
#include "backends/shm/shm_send_socket.hpp"
#include "backends/shm/unix_family.hpp"
#include "netio/backends/shm.hpp"

namespace netio {
namespace {

class ShmBackend final : public Backend {
 public:
  ShmBackend(EventLoop& loop, std::shared_ptr<const posix::StreamFamily> family)
      : loop_(loop), family_(std::move(family)) {}
  std::unique_ptr<LowLevelSendSocket> make_send_socket() override {
    return std::make_unique<shm::ShmSendSocket>(loop_, family_);
  }
  std::unique_ptr<LowLevelListenSocket> make_listen_socket() override {
    return std::make_unique<posix::PosixListenSocket>(loop_, family_);
  }

 private:
  EventLoop& loop_;
  std::shared_ptr<const posix::StreamFamily> family_;
};

}  // namespace

BackendFactory shm_backend_factory(ShmPeers peers) {
  std::shared_ptr<const posix::StreamFamily> family = std::make_shared<const shm::UnixFamily>(std::move(peers));
  return [family](EventLoop& loop) { return std::make_unique<ShmBackend>(loop, family); };
}

}  // namespace netio
