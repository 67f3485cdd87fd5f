// SPDX-License-Identifier: MIT
#include "backends/fabric/libfabric_library.hpp"

#include "netio/error.hpp"
#include "netio/log.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <atomic>
#include <csignal>
#include <vector>

namespace netio::fabric {
namespace {

constexpr const char* default_file = "libfabric.so.1";
std::atomic<bool> loaded{false};

std::string dl_error() {
  const char* text = ::dlerror();
  return text != nullptr ? text : "no reason given";
}

// `version` empty: the library's default version of `name` (CMake found no versions).
template <typename Function>
void resolve(void* handle, const std::string& file, const char* name, const char* version, Function& out) {
  ::dlerror();
  void* symbol = *version != '\0' ? ::dlvsym(handle, name, version) : ::dlsym(handle, name);
  if (symbol == nullptr) {
    throw Error(Errc::provider_unavailable,
                fmt::format("fabric back-end: {} has no {}{}{} ({}): not the libfabric netio was built for", file, name,
                            *version != '\0' ? "@" : "", version, dl_error()));
  }
  out = reinterpret_cast<Function>(symbol);
}

// The signal handlers of the process, kept across loading libfabric. Libraries it brings
// install their own in their constructors (Debian's libfabric 1.17: for SIGINT, SIGTERM,
// SIGSEGV, SIGBUS, SIGILL and SIGABRT, a handler that ends the process with status 1).
// Linked, they ran before main() and the program's own handlers replaced theirs; loaded
// later, they would replace the program's: a Ctrl-C handler gone once the first fabric://
// socket is made. So what changed while loading is put back (a handler another thread
// installed in those milliseconds, once per process, would be undone as well).
class SignalHandlers {
 public:
  SignalHandlers() {
    for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
      ::sigaction(signal_number, nullptr, &saved_[static_cast<std::size_t>(signal_number)]);
    }
  }
  SignalHandlers(const SignalHandlers&) = delete;
  SignalHandlers& operator=(const SignalHandlers&) = delete;

  ~SignalHandlers() {
    std::vector<int> restored;
    for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
      const auto& before = saved_[static_cast<std::size_t>(signal_number)];
      struct sigaction now {};
      if (::sigaction(signal_number, nullptr, &now) != 0) continue;
      if (now.sa_handler == before.sa_handler && now.sa_flags == before.sa_flags) continue;
      if (::sigaction(signal_number, &before, nullptr) == 0) restored.push_back(signal_number);
    }
    if (!restored.empty()) {
      log(LogLevel::debug, "fabric back-end: loading libfabric replaced the handlers of signals {}; put back",
          fmt::join(restored, ", "));
    }
  }

 private:
  std::array<struct sigaction, NSIG> saved_{};
};

}  // namespace

LibfabricLibrary load_libfabric(const std::string& file) {
  const SignalHandlers handlers;
  ::dlerror();
  // RTLD_LOCAL: libfabric's symbols stay out of the global namespace (netio looks up the six
  // it calls); providers it loads itself find them through their own dependency on it.
  void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    throw Error(Errc::provider_unavailable,
                fmt::format("fabric back-end: cannot load libfabric ({}): {}; install it (Debian: libfabric1) or "
                            "use tcp:// endpoints",
                            file, dl_error()));
  }
  LibfabricLibrary library{};
  try {
    resolve(handle, file, "fi_getinfo", NETIO_FI_GETINFO_VERSION, library.getinfo);
    resolve(handle, file, "fi_freeinfo", NETIO_FI_FREEINFO_VERSION, library.freeinfo);
    resolve(handle, file, "fi_dupinfo", NETIO_FI_DUPINFO_VERSION, library.dupinfo);
    resolve(handle, file, "fi_fabric", NETIO_FI_FABRIC_VERSION, library.fabric);
    resolve(handle, file, "fi_strerror", NETIO_FI_STRERROR_VERSION, library.strerror);
    resolve(handle, file, "fi_version", NETIO_FI_VERSION_VERSION, library.version);
  } catch (...) {
    ::dlclose(handle);
    throw;
  }
  return library;
}

const LibfabricLibrary& libfabric() {
  // A throwing initialisation leaves it uninitialised: the next call tries again.
  static const LibfabricLibrary library = [] {
    LibfabricLibrary l = load_libfabric(default_file);
    loaded.store(true, std::memory_order_release);
    return l;
  }();
  return library;
}

bool libfabric_loaded() noexcept { return loaded.load(std::memory_order_acquire); }

}  // namespace netio::fabric
