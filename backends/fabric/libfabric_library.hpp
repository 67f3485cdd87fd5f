// SPDX-License-Identifier: MIT
// libfabric, loaded when the first fabric:// endpoint is used instead of with netio.
//
// Why: loading libfabric loads every provider's libraries with it (verbs, rdmacm, psm, psm2,
// efa, libnl...) and runs their constructors; Debian's psm sleeps in its own. A program
// paid 0.2 s at start-up for that whether it used libfabric or not, and could not start on
// a host without libfabric. netio is compiled against libfabric's headers, and apart from
// the six functions below every call of the API is an inline function that goes through the
// provider's operation tables, so these six are all it looks up. Each is taken at the symbol
// version a normal link against the libfabric of the build would have bound (CMake reads
// them off that library: NETIO_FI_*_VERSION), so a newer libfabric at run time gives the
// same ABI as a linked program would get.
//
// Thread-safety: any thread. The library stays loaded until the process ends.
#pragma once

#include <rdma/fabric.h>

#include <cstdint>
#include <string>

namespace netio::fabric {

struct LibfabricLibrary {
  int (*getinfo)(std::uint32_t version, const char* node, const char* service, std::uint64_t flags,
                 const fi_info* hints, fi_info** info);
  void (*freeinfo)(fi_info* info);
  fi_info* (*dupinfo)(const fi_info* info);  // a null `info` allocates an empty one (fi_allocinfo)
  int (*fabric)(fi_fabric_attr* attr, fid_fabric** fabric, void* context);
  const char* (*strerror)(int errnum);
  std::uint32_t (*version)();
};

// The process's libfabric (libfabric.so.1, found as the dynamic linker finds libraries:
// LD_LIBRARY_PATH, the cache, the default directories), loaded by the first call. Throws
// netio::Error(Errc::provider_unavailable) naming the library and what was wrong; a later
// call tries again.
const LibfabricLibrary& libfabric();

// Loads `file` as libfabric; what libfabric() does once. For tests of the failures.
LibfabricLibrary load_libfabric(const std::string& file);

// Whether libfabric() has loaded libfabric in this process.
bool libfabric_loaded() noexcept;

}  // namespace netio::fabric
