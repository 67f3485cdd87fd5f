// SPDX-License-Identifier: MIT
// MetricsRegistry (netio/metrics.hpp). A collect() copies the list of entries under the
// registry's lock and calls each under the entry's own lock, so that removing one collector
// waits only for a call of that collector, never for the others: a socket's destructor on
// the loop thread does not wait for a scrape that is stuck in an unrelated collector.
#include "netio/metrics.hpp"

#include "netio/log.hpp"

#include <algorithm>
#include <exception>
#include <map>
#include <mutex>

namespace netio {

struct MetricsRegistry::Registration::Entry {
  std::mutex mutex;  ///< held while the collector runs and while it is removed
  Collector collector;
};

namespace {

// Calls `collector`, appending to `out`; what a throwing one appended is taken back (logged).
void call(const MetricsRegistry::Collector& collector, std::vector<Metric>& out) noexcept {
  const std::size_t before = out.size();
  try {
    collector(out);
  } catch (const std::exception& e) {
    out.resize(before);
    log(LogLevel::warn, "metrics: a collector threw, its samples are left out: {}", e.what());
  } catch (...) {
    out.resize(before);
    log(LogLevel::warn, "metrics: a collector threw, its samples are left out");
  }
}

}  // namespace

struct MetricsRegistry::Registration::State {
  using Key = std::pair<std::string, std::vector<std::pair<std::string, std::string>>>;  // name, sorted labels

  mutable std::mutex mutex;
  std::vector<std::shared_ptr<Entry>> entries;
  bool keep_removed = false;
  std::map<Key, Metric> kept;  // the totals of removed collectors, folded by series

  // A removed collector's last samples: counters and summaries added to what is kept.
  void keep(std::vector<Metric> last) {
    std::lock_guard lock(mutex);
    for (Metric& m : last) {
      if (m.type == MetricType::gauge) continue;
      auto labels = m.labels;
      std::sort(labels.begin(), labels.end());
      auto [it, fresh] = kept.try_emplace(Key{m.name, std::move(labels)}, m);
      if (!fresh) it->second.value += m.value;
    }
  }
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
  bool keep = false;
  {
    std::lock_guard lock(state_->mutex);
    keep = state_->keep_removed;
  }
  Collector gone;  // destroyed after the entry's lock is released
  std::vector<Metric> last;
  {
    std::lock_guard lock(entry_->mutex);  // waits for a call in progress
    gone = std::move(entry_->collector);
    entry_->collector = nullptr;
    if (keep && gone) call(gone, last);  // what it reads is still alive: its owner removes it first
  }
  if (!last.empty()) state_->keep(std::move(last));
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
    call(entry->collector, out);
  }
  std::lock_guard lock(state_->mutex);
  for (const auto& [key, metric] : state_->kept) out.push_back(metric);
  return out;
}

void MetricsRegistry::keep_removed_totals() {
  std::lock_guard lock(state_->mutex);
  state_->keep_removed = true;
}

std::size_t MetricsRegistry::collectors() const {
  std::lock_guard lock(state_->mutex);
  return state_->entries.size();
}

}  // namespace netio
