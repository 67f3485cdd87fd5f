// SPDX-License-Identifier: MIT
// The back-ends built into this netio, entered into the registry on its first use.
#include "builtin_backend_table.hpp"

#include "backends/posix/posix_backend.hpp"
#include "netio/backends/shm.hpp"
#ifdef NETIO_WITH_FABRIC
#include "backends/fabric/fabric_backend.hpp"
#endif

namespace netio::detail {

void register_builtin_backends(BuiltinBackendTable& table) {
  table.add("tcp", [](EventLoop& loop) { return posix::make_backend(loop); });
  table.add("shm", shm_backend_factory(), {.host_field = "name", .options = {}});
  // ?provider=NAME: the libfabric provider (backends/fabric/provider_selection.hpp).
  EndpointForm fabric_form{.host_field = "host", .options = {"provider"}};
#ifdef NETIO_WITH_FABRIC
  table.add(
      "fabric", [](EventLoop& loop) { return fabric::make_backend(loop); }, std::move(fabric_form));
#else
  table.add_unavailable("fabric", "this netio was built without libfabric (NETIO_WITH_FABRIC=OFF)",
                        std::move(fabric_form));
#endif
}

}  // namespace netio::detail
