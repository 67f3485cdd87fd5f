// SPDX-License-Identifier: MIT
// The simulator's event queue: a priority queue of small records, the one `Before` puts first
// on top. A 4-ary heap in one vector: half the levels of a binary heap, and a node's four
// children side by side, so that a pop (the simulator's most frequent operation, on a heap of
// up to a few hundred thousand events) touches fewer cache lines than std::priority_queue's.
// The order taken out is the order `Before` defines; when it is a total order (the simulator's
// time and sequence are), the same as any other priority queue's. Not thread-safe.
#pragma once

#include <cstddef>
#include <vector>

namespace netio::scheduler::simulation {

template <typename T, typename Before>
class EventHeap {
 public:
  bool empty() const noexcept { return items_.empty(); }
  std::size_t size() const noexcept { return items_.size(); }
  const T& top() const noexcept { return items_.front(); }  // requires !empty()

  void push(const T& item) {
    items_.push_back(item);
    std::size_t place = items_.size() - 1;
    while (place > 0) {
      const std::size_t parent = (place - 1) / arity;
      if (!before_(item, items_[parent])) break;
      items_[place] = items_[parent];
      place = parent;
    }
    items_[place] = item;
  }

  void pop() noexcept {  // requires !empty()
    const T last = items_.back();
    items_.pop_back();
    const std::size_t size = items_.size();
    if (size == 0) return;
    std::size_t place = 0;
    for (;;) {
      const std::size_t first = arity * place + 1;
      if (first >= size) break;
      const std::size_t end = first + arity < size ? first + arity : size;
      std::size_t best = first;
      for (std::size_t child = first + 1; child < end; ++child) {
        if (before_(items_[child], items_[best])) best = child;
      }
      if (!before_(items_[best], last)) break;
      items_[place] = items_[best];
      place = best;
    }
    items_[place] = last;
  }

 private:
  static constexpr std::size_t arity = 4;
  std::vector<T> items_;
  [[no_unique_address]] Before before_;
};

}  // namespace netio::scheduler::simulation
