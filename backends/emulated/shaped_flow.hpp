// SPDX-License-Identifier: MIT
// One connection's queue through the emulation, on the event loop: items (send buffers, or
// received buffers) wait for their delay and the connection's rate (LinkShaper, send side
// only), then for the node's shared port (NodePort, when limited), then on the send side for
// the switch core (CoreSwitch, core=), and are delivered in the order pushed. One loop timer per flow, armed for its
// head. Memory: the items are what the caller lent (send buffers until their completion) or what the back-end lent
// (received buffers, bounded by the receive credits): the flow allocates nothing per item beyond its deque slot. Loop
// thread only.
#pragma once

#include "backends/emulated/core_switch.hpp"
#include "backends/emulated/link_shaper.hpp"
#include "backends/emulated/network_state.hpp"

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

namespace netio::emulated {

template <typename Item>
class ShapedFlow final : public PortClient {
 public:
  using Deliver = std::function<void(Item)>;

  // `link`: the send side's shaper (null on the receive side). `incoming`: which node port.
  ShapedFlow(EventLoop& loop, std::shared_ptr<NetworkState> state, bool incoming, std::string host, std::uint16_t port,
             Deliver deliver)
      : loop_(loop),
        state_(std::move(state)),
        incoming_(incoming),
        host_(std::move(host)),
        port_number_(port),
        deliver_(std::move(deliver)) {
    snapshot_ = state_->snapshot();
    if (!incoming_) {
      const EmulationConfig& config = snapshot_->link_config(host_, port_number_);
      link_.emplace(config, SlowdownSchedule::link_windows(config, host_, port_number_), snapshot_->origin,
                    state_->next_stream(), now());
      if (snapshot_->config.core) {
        core_ = CoreSwitch::shared(snapshot_->config.core);
        core_flow_ = core_->open();
      }
    }
  }
  ~ShapedFlow() override { close(); }
  ShapedFlow(const ShapedFlow&) = delete;
  ShapedFlow& operator=(const ShapedFlow&) = delete;

  void push(Item item, std::size_t bytes) {
    if (closed_) return;
    refresh();
    const Nanos t = now();
    const Nanos due = link_ ? link_->admit(t) : t;
    queue_.push_back(Entry{std::move(item), bytes, due, due > t});
    if (queue_.size() > 1 || in_port_ || in_core_ || timer_ != 0) return;  // the head's wait is under way
    in_push_ = true;
    pump();
    in_push_ = false;
  }

  // Drops what waits (the caller's again), stops the timer, leaves the port. Idempotent.
  void close() noexcept {
    closed_ = true;
    cancel_timer();
    if (used_port_) port().remove(this);  // its fair-share account too, not only a waiting buffer
    if (core_) core_->remove(core_flow_);
    in_port_ = false;
    in_core_ = false;
    used_port_ = false;
    queue_.clear();
  }
  bool idle() const noexcept { return queue_.empty(); }
  // Called once the queue is empty after a delivery (the receive side's deferred disconnect).
  void set_on_drained(std::function<void()> on_drained) { on_drained_ = std::move(on_drained); }

  void release_from_port(Nanos t) override {
    in_port_ = false;
    if (closed_ || queue_.empty()) return;
    if (enter_core()) return;
    deliver_head(t);
    if (!closed_) pump();
  }

 private:
  struct Entry {
    Item item;
    std::size_t bytes;
    Nanos due;
    // Given a delay at push: counted as waited even when the loop reaches it only after its
    // due time and it leaves from inside push() (a preempted thread under a sanitizer).
    bool delayed;
  };

  NodePort& port() { return incoming_ ? state_->in_port(loop_) : state_->out_port(loop_); }

  void refresh() {
    if (state_->generation() == snapshot_->generation) return;
    snapshot_ = state_->snapshot();
    if (link_) {
      const EmulationConfig& config = snapshot_->link_config(host_, port_number_);
      link_->reconfigure(config, SlowdownSchedule::link_windows(config, host_, port_number_), snapshot_->origin, now());
    }
  }

  void pump() {
    while (!closed_ && !queue_.empty() && !in_port_ && !in_core_ && timer_ == 0) {
      const Nanos t = now();
      const Entry& head = queue_.front();
      const Nanos at = link_ ? link_->eligible_at(t, head.due, head.bytes) : t;
      if (at > t) {
        arm(at);
        return;
      }
      refresh();
      if (port().limited(*snapshot_)) {
        in_port_ = true;
        used_port_ = true;
        port().enqueue(this, head.bytes, *snapshot_);  // may call release_from_port() at once
        return;
      }
      if (enter_core()) return;
      deliver_head(t);
    }
  }

  // The head waits for the core (send side, core=); its release comes back through the
  // loop. False: no core, deliver now.
  bool enter_core() {
    if (!core_) return false;
    in_core_ = true;
    auto alive = std::weak_ptr<int>(alive_);
    core_->enqueue(core_flow_, queue_.front().bytes, [this, alive, &loop = loop_] {
      loop.post([this, alive] {
        if (alive.expired() || !in_core_) return;  // gone, or closed since
        in_core_ = false;
        if (closed_ || queue_.empty()) return;
        ++state_->buffers_through_core;
        deliver_head(now());
        if (!closed_) pump();
      });
    });
    return true;
  }

  void deliver_head(Nanos t) {
    Entry entry = std::move(queue_.front());
    queue_.pop_front();
    if (link_) link_->released(t, entry.bytes);
    if (!in_push_ || entry.delayed) ++(incoming_ ? state_->buffers_held : state_->buffers_delayed);
    (incoming_ ? state_->bytes_received : state_->bytes_sent) += entry.bytes;
    deliver_(std::move(entry.item));  // may close this flow (the socket's close())
    if (!closed_ && queue_.empty() && on_drained_) std::exchange(on_drained_, nullptr)();
  }

  void arm(Nanos at) {
    auto alive = std::weak_ptr<int>(alive_);
    timer_ = loop_.add_timer(at - now(), Nanos(0), [this, alive] {
      if (alive.expired()) return;
      timer_ = 0;
      pump();
    });
  }
  void cancel_timer() noexcept {
    if (timer_ != 0) loop_.cancel_timer(timer_);
    timer_ = 0;
  }

  EventLoop& loop_;
  std::shared_ptr<NetworkState> state_;
  bool incoming_;
  std::string host_;
  std::uint16_t port_number_;
  Deliver deliver_;
  std::shared_ptr<const Snapshot> snapshot_;
  std::optional<LinkShaper> link_;
  std::deque<Entry> queue_;
  EventLoop::TimerId timer_ = 0;
  bool in_port_ = false;
  bool in_core_ = false;  // the head waits for the core's release
  std::shared_ptr<CoreSwitch> core_;
  CoreSwitch::FlowId core_flow_ = 0;
  bool used_port_ = false;  // has an account in the node port (removed on close)
  bool closed_ = false;
  bool in_push_ = false;  // delivering from inside push(): nothing waited
  std::function<void()> on_drained_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace netio::emulated
