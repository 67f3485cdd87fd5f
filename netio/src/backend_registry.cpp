// SPDX-License-Identifier: MIT
#include "builtin_backend_table.hpp"

#include "netio/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <variant>

namespace netio {
namespace {

class Registry final : public detail::BuiltinBackendTable {
 public:
  // Filled on first use: a static library keeps builtin_backends.o because this calls it.
  static Registry& instance() {
    static Registry registry;
    return registry;
  }

  struct Unavailable {
    std::string reason;
  };
  using Entry = std::variant<BackendFactory, Unavailable>;

  // Both with `mutex` held (or from the constructor).
  void add(std::string scheme, BackendFactory factory, EndpointForm form) override {
    forms[scheme] = std::move(form);
    entries[std::move(scheme)] = std::move(factory);
  }
  void add_unavailable(std::string scheme, std::string reason, EndpointForm form) override {
    forms[scheme] = std::move(form);
    entries[std::move(scheme)] = Unavailable{std::move(reason)};
  }

  std::mutex mutex;
  std::map<std::string, Entry, std::less<>> entries;       // guarded by mutex
  std::map<std::string, EndpointForm, std::less<>> forms;  // guarded by mutex

 private:
  Registry() { detail::register_builtin_backends(*this); }
};

bool valid_scheme(std::string_view scheme) noexcept {
  if (scheme.empty() || !std::isalpha(static_cast<unsigned char>(scheme.front()))) return false;
  return std::all_of(scheme.begin(), scheme.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
  });
}

}  // namespace

void register_backend(std::string scheme, BackendFactory factory, EndpointForm form) {
  if (!valid_scheme(scheme)) {
    throw Error(Errc::invalid_option,
                fmt::format("register_backend: scheme '{}' is not letters, digits, '+', '-' and '.' starting "
                            "with a letter",
                            scheme));
  }
  if (!factory)
    throw Error(Errc::invalid_option, fmt::format("register_backend: scheme '{}': the factory is empty", scheme));
  auto& registry = Registry::instance();
  std::lock_guard lock(registry.mutex);
  registry.add(std::move(scheme), std::move(factory), std::move(form));
}

EndpointForm endpoint_form(std::string_view scheme) {
  auto& registry = Registry::instance();
  std::lock_guard lock(registry.mutex);
  const auto it = registry.forms.find(scheme);
  return it == registry.forms.end() ? EndpointForm{} : it->second;
}

std::unique_ptr<Backend> make_registered_backend(std::string_view scheme, EventLoop& loop, std::string_view what_for) {
  auto& registry = Registry::instance();
  BackendFactory factory;
  {
    std::lock_guard lock(registry.mutex);
    const auto it = registry.entries.find(scheme);
    if (it != registry.entries.end()) {
      if (const auto* unavailable = std::get_if<Registry::Unavailable>(&it->second)) {
        throw Error(Errc::backend_error, fmt::format("cannot use {}: {}", what_for, unavailable->reason));
      }
      factory = std::get<BackendFactory>(it->second);  // a copy: called without the lock
    }
  }
  if (!factory) {
    throw Error(Errc::malformed_endpoint,
                fmt::format("cannot use {}: no back-end is registered for scheme '{}' (registered: {})", what_for,
                            scheme, fmt::join(registered_backend_schemes(), ", ")));
  }
  return factory(loop);
}

bool backend_registered(std::string_view scheme) {
  auto& registry = Registry::instance();
  std::lock_guard lock(registry.mutex);
  return registry.entries.find(scheme) != registry.entries.end();
}

std::vector<std::string> registered_backend_schemes() {
  auto& registry = Registry::instance();
  std::lock_guard lock(registry.mutex);
  std::vector<std::string> schemes;
  for (const auto& [scheme, entry] : registry.entries) {
    if (std::holds_alternative<BackendFactory>(entry)) schemes.push_back(scheme);
  }
  return schemes;  // std::map: already sorted
}

}  // namespace netio
