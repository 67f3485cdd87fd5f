// SPDX-License-Identifier: MIT
// shm://: the POSIX stream sockets over the Unix-domain family (backends/shm/unix_family.hpp).
#include "backends/posix/posix_backend.hpp"
#include "backends/shm/unix_family.hpp"
#include "netio/shm_backend.hpp"

namespace netio {

BackendFactory shm_backend_factory(ShmPeers peers) {
  auto family = std::make_shared<const shm::UnixFamily>(std::move(peers));
  return [family](EventLoop& loop) { return posix::make_backend(loop, family); };
}

}  // namespace netio
