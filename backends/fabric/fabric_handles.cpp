// SPDX-License-Identifier: MIT
#include "backends/fabric/fabric_handles.hpp"

#include "backends/fabric/fabric_errors.hpp"
#include "backends/fabric/libfabric_library.hpp"
#include "netio/log.hpp"

#include <new>

namespace netio::fabric {
namespace {

const char* class_name(std::size_t fclass) noexcept {
  switch (fclass) {
    case FI_CLASS_FABRIC: return "fabric";
    case FI_CLASS_DOMAIN: return "domain";
    case FI_CLASS_EP: return "endpoint";
    case FI_CLASS_PEP: return "passive endpoint";
    case FI_CLASS_EQ: return "event queue";
    case FI_CLASS_CQ: return "completion queue";
    case FI_CLASS_MR: return "memory region";
    default: return "fabric object";
  }
}

}  // namespace

void close_fid(fid* object) noexcept {
  if (object == nullptr) return;
  const auto fclass = object->fclass;
  if (const int rc = ::fi_close(object); rc != 0) {
    log(LogLevel::error, "fabric: closing a {} failed: {}; its resources leak", class_name(fclass), fi_error_text(rc));
  }
}

void InfoDeleter::operator()(fi_info* info) const noexcept { libfabric().freeinfo(info); }

InfoPtr copy_info(const fi_info& info) {
  // fi_dupinfo would copy the whole list hanging off `next`: copy a detached view instead.
  fi_info detached = info;
  detached.next = nullptr;
  InfoPtr copy(libfabric().dupinfo(&detached));
  if (!copy) throw std::bad_alloc();
  return copy;
}

}  // namespace netio::fabric
