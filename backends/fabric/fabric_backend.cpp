// SPDX-License-Identifier: MIT
#include "backends/fabric/fabric_backend.hpp"

#include "backends/fabric/fabric_domain.hpp"
#include "backends/fabric/fabric_listen_socket.hpp"
#include "backends/fabric/fabric_send_socket.hpp"
#include "backends/fabric/libfabric_library.hpp"
#include "backends/fabric/provider_selection.hpp"
#include "netio/error.hpp"
#include "netio/log.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace netio::fabric {
namespace {

class FabricBackend final : public Backend {
 public:
  explicit FabricBackend(EventLoop& loop) : loop_(loop), domains_(loop.busy_poll()) {}

  std::unique_ptr<LowLevelSendSocket> make_send_socket() override {
    return std::make_unique<FabricSendSocket>(loop_, domains_);
  }
  std::unique_ptr<LowLevelListenSocket> make_listen_socket() override {
    return std::make_unique<FabricListenSocket>(loop_, domains_);
  }

 private:
  EventLoop& loop_;
  DomainCache domains_;  // sockets refer to it: sockets must go before the back-end
};

}  // namespace

std::unique_ptr<Backend> make_backend(EventLoop& loop) {
  const auto providers = msg_providers();
  if (providers.empty()) {
    throw Error(Errc::provider_unavailable,
                fmt::format("fabric back-end: libfabric {}.{} offers no provider with reliable connected endpoints "
                            "(FI_EP_MSG); is libfabric installed with its providers (fi_info -l)?",
                            FI_MAJOR(libfabric().version()), FI_MINOR(libfabric().version())));
  }
  log(LogLevel::debug, "fabric back-end: providers with FI_EP_MSG: {}", fmt::join(providers, ", "));
  return std::make_unique<FabricBackend>(loop);
}

}  // namespace netio::fabric
