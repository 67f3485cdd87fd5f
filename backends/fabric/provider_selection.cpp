// SPDX-License-Identifier: MIT
#include "backends/fabric/provider_selection.hpp"

#include "address.hpp"
#include "backends/fabric/fabric_errors.hpp"
#include "backends/fabric/libfabric_library.hpp"

#include <rdma/fi_errno.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace netio::fabric {
namespace {

InfoPtr base_hints(const std::string& provider) {
  InfoPtr hints(libfabric().dupinfo(nullptr));
  if (!hints) throw std::bad_alloc();
  hints->caps = FI_MSG | FI_SEND | FI_RECV;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->ep_attr->type = FI_EP_MSG;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  // Buffers are registered on user threads while the loop thread sends: the domain must
  // tolerate concurrent calls.
  hints->domain_attr->threading = FI_THREAD_SAFE;
  // Remote CQ data marks a sender's control messages and carries reply credits (fabric_wire.hpp):
  // 4 bytes, what verbs offers (tcp and sockets: 8).
  hints->domain_attr->cq_data_size = 4;
  if (!provider.empty()) {
    hints->fabric_attr->prov_name = ::strdup(provider.c_str());
    if (hints->fabric_attr->prov_name == nullptr) throw std::bad_alloc();
  }
  return hints;
}

void set_address(fi_info& hints, const detail::SocketAddress& address, bool passive) {
  hints.addr_format = address.family() == AF_INET6 ? FI_SOCKADDR_IN6 : FI_SOCKADDR_IN;
  // fi_freeinfo frees the address: it must come from malloc.
  void* copy = std::malloc(address.length);
  if (copy == nullptr) throw std::bad_alloc();
  std::memcpy(copy, address.get(), address.length);
  if (passive) {
    hints.src_addr = copy;
    hints.src_addrlen = address.length;
  } else {
    hints.dest_addr = copy;
    hints.dest_addrlen = address.length;
  }
}

InfoPtr query(const Endpoint& endpoint, bool passive) {
  const auto address = detail::resolve(endpoint, passive);
  const auto provider = requested_provider(endpoint);
  auto hints = base_hints(provider);
  set_address(*hints, address, passive);
  fi_info* found = nullptr;
  const int rc = libfabric().getinfo(api_version, nullptr, nullptr, 0, hints.get(), &found);
  InfoPtr result(found);
  if (rc == 0 && result) return result;

  const auto available = msg_providers();
  throw Error(Errc::provider_unavailable,
              fmt::format("{}: no libfabric provider{} offers reliable connected endpoints (FI_EP_MSG, FI_MSG) "
                          "{} {} (fi_getinfo: {}); providers with FI_EP_MSG on this host: {}",
                          endpoint.to_string(), provider.empty() ? std::string() : fmt::format(" named '{}'", provider),
                          passive ? "to listen at" : "to connect to", address.host(),
                          rc == 0 ? std::string("no match") : fi_error_text(rc),
                          available.empty() ? std::string("none") : fmt::format("{}", fmt::join(available, ", "))));
}

}  // namespace

std::string requested_provider(const Endpoint& endpoint) {
  if (auto provider = endpoint.option("provider"); !provider.empty()) return provider;
  const char* from_environment = std::getenv("NETIO_FABRIC_PROVIDER");
  return from_environment != nullptr ? std::string(from_environment) : std::string();  // "" counts as unset
}

InfoPtr query_listen_info(const Endpoint& local) { return query(local, true); }

InfoPtr query_connect_info(const Endpoint& remote) { return query(remote, false); }

std::vector<std::string> msg_providers() {
  InfoPtr hints(libfabric().dupinfo(nullptr));
  if (!hints) return {};
  hints->caps = FI_MSG;
  hints->ep_attr->type = FI_EP_MSG;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  fi_info* found = nullptr;
  if (libfabric().getinfo(api_version, nullptr, nullptr, 0, hints.get(), &found) != 0) return {};
  InfoPtr list(found);
  std::vector<std::string> names;
  for (const fi_info* info = list.get(); info != nullptr; info = info->next) {
    const std::string name = info->fabric_attr->prov_name;
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

}  // namespace netio::fabric
