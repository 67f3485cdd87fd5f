// SPDX-License-Identifier: MIT
// Owning handles for libfabric objects, so that every fid is closed exactly once and every
// fi_info freed. Destruction order is the owner's job: members are destroyed in reverse
// order of declaration, so declare the fabric before the domain before queues before
// endpoints.
#pragma once

#include <rdma/fabric.h>

#include <memory>

namespace netio::fabric {

// fi_close with a failure logged: a close that fails leaks, but must not throw.
void close_fid(fid* object) noexcept;

struct FidCloser {
  template <typename T>
  void operator()(T* object) const noexcept {
    close_fid(&object->fid);
  }
};

template <typename T>
using FidPtr = std::unique_ptr<T, FidCloser>;

struct InfoDeleter {
  void operator()(fi_info* info) const noexcept;  // fi_freeinfo
};

using InfoPtr = std::unique_ptr<fi_info, InfoDeleter>;

// A deep copy (fi_dupinfo) of one fi_info entry, without the rest of its list.
InfoPtr copy_info(const fi_info& info);

}  // namespace netio::fabric
