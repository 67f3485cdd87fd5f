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
  std::vector<Metric> last;  ///< keep_removed_totals(): its samples when it was removed
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

  // A removed collector's last counters and summaries, added to what is kept. Under `mutex`.
  void keep(const std::vector<Metric>& last) {
    for (const Metric& m : last) {
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

// With keep_removed_totals(), a collect() sees a removed collector's totals exactly once: from
// its entry (`last`) if it copied the list before the removal, from `kept` if after (the list
// and `kept` are copied together, and change together below).
void MetricsRegistry::Registration::reset() noexcept {
  if (!entry_) return;
  bool keep = false;
  {
    std::lock_guard lock(state_->mutex);
    keep = state_->keep_removed;
  }
  Collector gone;  // destroyed after the locks are released
  {
    std::lock_guard lock(entry_->mutex);  // waits for a call in progress; none starts after
    gone = std::move(entry_->collector);
    entry_->collector = nullptr;
    // What it reads is still alive: its owner removes it first.
    if (keep && gone) {
      call(gone, entry_->last);
      std::erase_if(entry_->last,
                    [](const Metric& m) { return m.type == MetricType::gauge; });  // a gone socket holds nothing
    }
  }
  {
    std::lock_guard lock(state_->mutex);
    std::erase(state_->entries, entry_);
    state_->keep(entry_->last);  // entry_->last no longer changes
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
  std::vector<Metric> kept;
  {
    std::lock_guard lock(state_->mutex);
    entries = state_->entries;
    for (const auto& [key, metric] : state_->kept) kept.push_back(metric);
  }
  std::vector<Metric> out;
  for (const auto& entry : entries) {
    std::lock_guard lock(entry->mutex);
    if (entry->collector) {
      call(entry->collector, out);
    } else {  // removed since the copy: its kept totals, if any, are not in `kept` yet
      out.insert(out.end(), entry->last.begin(), entry->last.end());
    }
  }
  out.insert(out.end(), std::make_move_iterator(kept.begin()), std::make_move_iterator(kept.end()));
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
