// SPDX-License-Identifier: MIT
// Which libfabric provider serves an endpoint, and the fi_info to open it with.
//
// The provider comes from the endpoint's ?provider=NAME, else from the environment variable
// NETIO_FABRIC_PROVIDER, else libfabric picks (its first match, e.g. verbs before tcp).
// Every query asks for reliable connected endpoints (FI_EP_MSG) with FI_MSG, and offers
// what this back-end copes with: FI_CONTEXT/FI_CONTEXT2 operation contexts and the mr_mode
// bits FI_MR_LOCAL, FI_MR_VIRT_ADDR, FI_MR_ALLOCATED and FI_MR_PROV_KEY.
#pragma once

#include "backends/fabric/fabric_handles.hpp"
#include "netio/endpoint.hpp"

#include <rdma/fabric.h>

#include <cstdint>
#include <string>
#include <vector>

namespace netio::fabric {

// The libfabric API version this back-end is written against (the installed headers').
inline constexpr std::uint32_t api_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);

// The provider name an endpoint asks for; empty means libfabric's choice.
std::string requested_provider(const Endpoint& endpoint);

// fi_info for a passive endpoint bound to `local` (port 0: any free port).
// Throws Error(resolve_failed) or Error(provider_unavailable) naming endpoint and provider.
InfoPtr query_listen_info(const Endpoint& local);

// fi_info for an active endpoint connecting to `remote` (its dest_addr is set).
InfoPtr query_connect_info(const Endpoint& remote);

// Providers that offer FI_EP_MSG on this host, for error messages.
std::vector<std::string> msg_providers();

}  // namespace netio::fabric
