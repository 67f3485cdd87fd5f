// SPDX-License-Identifier: MIT
#include "backends/fabric/fabric_domain.hpp"

#include "backends/fabric/fabric_errors.hpp"
#include "backends/fabric/libfabric_library.hpp"
#include "netio/log.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

namespace netio::fabric {
namespace {

bool polling_requested() {
  const char* value = std::getenv("NETIO_FABRIC_WAIT");
  return value != nullptr && std::string_view(value) == "poll";
}

bool same_name(const char* a, const char* b) noexcept {
  return (a == nullptr && b == nullptr) || (a != nullptr && b != nullptr && std::strcmp(a, b) == 0);
}

}  // namespace

Domain::Domain(const fi_info& info, bool spin)
    : info_(copy_info(info)),
      provider_(info.fabric_attr->prov_name != nullptr ? info.fabric_attr->prov_name : "?"),
      description_(fmt::format("provider {}, fabric {}, domain {}", provider_,
                               info.fabric_attr->name != nullptr ? info.fabric_attr->name : "?",
                               info.domain_attr->name != nullptr ? info.domain_attr->name : "?")),
      force_polling_(polling_requested()),
      spin_(spin) {
  fid_fabric* fabric = nullptr;
  check(libfabric().fabric(info_->fabric_attr, &fabric, nullptr), description_, "fi_fabric");
  fabric_.reset(fabric);
  fid_domain* domain = nullptr;
  check(::fi_domain(fabric_.get(), info_.get(), &domain, nullptr), description_, "fi_domain");
  domain_.reset(domain);
  registrar_ = std::make_unique<FabricMemoryRegistrar>(domain_.get(), info_->domain_attr->mr_mode, description_);
  log(LogLevel::debug, "fabric: opened {} (mr_mode {:#x}, mode {:#x}, tx size {}, rx size {})", description_,
      info_->domain_attr->mr_mode, info_->mode, info_->tx_attr->size, info_->rx_attr->size);
}

Domain::~Domain() {
  if (const auto live = registrar_->live_registrations(); live != 0) {
    log(LogLevel::error,
        "fabric: closing {} with {} memory registrations still open (buffer pools outliving "
        "the context?)",
        description_, live);
  }
}

bool Domain::matches(const fi_info& other) const noexcept {
  return same_name(info_->fabric_attr->prov_name, other.fabric_attr->prov_name) &&
         same_name(info_->fabric_attr->name, other.fabric_attr->name) &&
         same_name(info_->domain_attr->name, other.domain_attr->name);
}

OpenedQueue<fid_cq> Domain::open_completion_queue(std::size_t size) {
  fi_cq_attr attr{};
  attr.size = size;
  attr.format = FI_CQ_FORMAT_DATA;  // op_context, flags, len and the remote CQ data (fabric_wire.hpp)
  attr.wait_obj = force_polling_ || spin_ ? FI_WAIT_NONE : FI_WAIT_FD;
  attr.wait_cond = FI_CQ_COND_NONE;
  fid_cq* queue = nullptr;
  int rc = ::fi_cq_open(domain_.get(), &attr, &queue, nullptr);
  if (rc != 0 && attr.wait_obj == FI_WAIT_FD) {
    log(LogLevel::warn,
        "fabric: {} cannot give completion queues a wait fd (fi_cq_open: {}); they are polled "
        "from a timer instead",
        description_, fi_error_text(rc));
    attr.wait_obj = FI_WAIT_NONE;
    rc = ::fi_cq_open(domain_.get(), &attr, &queue, nullptr);
  }
  check(rc, description_, "fi_cq_open");
  return {FidPtr<fid_cq>(queue), attr.wait_obj == FI_WAIT_FD};
}

OpenedQueue<fid_eq> Domain::open_event_queue(std::size_t size) {
  fi_eq_attr attr{};
  attr.size = size;
  attr.wait_obj = force_polling_ ? FI_WAIT_NONE : FI_WAIT_FD;
  fid_eq* queue = nullptr;
  int rc = ::fi_eq_open(fabric_.get(), &attr, &queue, nullptr);
  if (rc != 0 && attr.wait_obj == FI_WAIT_FD) {
    log(LogLevel::warn,
        "fabric: {} cannot give event queues a wait fd (fi_eq_open: {}); they are polled from a "
        "timer instead",
        description_, fi_error_text(rc));
    attr.wait_obj = FI_WAIT_NONE;
    rc = ::fi_eq_open(fabric_.get(), &attr, &queue, nullptr);
  }
  check(rc, description_, "fi_eq_open");
  return {FidPtr<fid_eq>(queue), attr.wait_obj == FI_WAIT_FD};
}

std::shared_ptr<Domain> DomainCache::get(const fi_info& info) {
  for (const auto& domain : domains_) {
    if (domain->matches(info)) return domain;
  }
  domains_.push_back(std::make_shared<Domain>(info, spin_));
  deferred_registrar_.add_domain_registrar(domains_.back()->registrar());
  return domains_.back();
}

}  // namespace netio::fabric
