// SPDX-License-Identifier: MIT
// MetricsRegistry (netio/metrics.hpp). A collect() copies the list of entries under the
// registry's lock and calls each under the entry's own lock, so that removing one collector
// waits only for a call of that collector, never for the others: a socket's destructor on
// the loop thread does not wait for a scrape that is stuck in an unrelated collector.
#include "netio/metrics.hpp"

#include "netio/log.hpp"

#include <exception>
#include <mutex>

namespace netio {

struct MetricsRegistry::Registration::Entry {
  std::mutex mutex;  ///< held while the collector runs and while it is removed
  Collector collector;
};

struct MetricsRegistry::Registration::State {
  mutable std::mutex mutex;
  std::vector<std::shared_ptr<Entry>> entries;
};

MetricsRegistry::Registration::Registration(std::shared_ptr<State> state, std::shared_ptr<Entry> entry) noexcept
    : state_(std::move(state)), entry_(std::move(entry)) {}

MetricsRegistry::Registration& MetricsRegistry::Registration::operator=(Registration&& other) noexcept {
  if (this != &other) {
    reset();
    state_ = std::move(other.state_);
    entry_ = std::move(other.entry_);
  }
  return *this;
}

void MetricsRegistry::Registration::reset() noexcept {
  if (!entry_) return;
  {
    std::lock_guard lock(state_->mutex);
    std::erase(state_->entries, entry_);
  }
  Collector gone;  // destroyed after the entry's lock is released
  {
    std::lock_guard lock(entry_->mutex);  // waits for a call in progress
    gone = std::move(entry_->collector);
    entry_->collector = nullptr;
  }
  entry_.reset();
  state_.reset();
}

MetricsRegistry::MetricsRegistry() : state_(std::make_shared<Registration::State>()) {}

MetricsRegistry::Registration MetricsRegistry::add(Collector collector) {
  auto entry = std::make_shared<Registration::Entry>();
  entry->collector = std::move(collector);
  {
    std::lock_guard lock(state_->mutex);
    state_->entries.push_back(entry);
  }
  return Registration(state_, std::move(entry));
}

std::vector<Metric> MetricsRegistry::collect() const {
  std::vector<std::shared_ptr<Registration::Entry>> entries;
  {
    std::lock_guard lock(state_->mutex);
    entries = state_->entries;
  }
  std::vector<Metric> out;
  for (const auto& entry : entries) {
    std::lock_guard lock(entry->mutex);
    if (!entry->collector) continue;  // removed since the copy
    const std::size_t before = out.size();
    try {
      entry->collector(out);
    } catch (const std::exception& e) {
      out.resize(before);
      log(LogLevel::warn, "metrics: a collector threw, its samples are left out: {}", e.what());
    } catch (...) {
      out.resize(before);
      log(LogLevel::warn, "metrics: a collector threw, its samples are left out");
    }
  }
  return out;
}

std::size_t MetricsRegistry::collectors() const {
  std::lock_guard lock(state_->mutex);
  return state_->entries.size();
}

}  // namespace netio
