// SPDX-License-Identifier: MIT
// A lossless, credit-flow-controlled two-level fat-tree at packet granularity, as InfiniBand's
// link-level flow control makes one: our own discrete-event model, C++20, no ns-3
// (docs/design/fabric-model.md, "The lossless variant", says why and what it leaves out).
//
// The network: `leaves` leaf switches with `hosts_per_leaf` hosts each, `spines` spine switches,
// every leaf linked to every spine; every link full duplex, of its rate and propagation delay.
// Every switch input port buffers what arrives on its link, `port_buffer_bytes` per virtual
// lane; the link's sender holds that many credits and sends a packet only when it has credits
// for all its bytes: a full buffer stops the upstream link, nothing is ever dropped. A packet
// leaving an input buffer returns its credits upstream after the link's delay. Input buffers
// are first come first served: a packet waits at the head of its buffer for its output port
// (head-of-line blocking), and an output port serves the input buffers whose heads wait for
// it in the order they came to wait (round robin between busy inputs, per packet). Store and
// forward, no processing delay. So a full port stops the links feeding it, and those the
// links behind them: congestion spreads back through the switches (tree saturation).
//
// Routing: up to a spine only when the destination is under another leaf. Static by
// destination (D-mod-k: spine d mod spines) or, with `adaptive`, the uplink with the least
// queued and unacknowledged bytes when the packet reaches the head of its input buffer (ties
// drawn from the seed).
//
// Hosts: a message is sent on its queue pair (from, to, channel, lane), in order behind the
// earlier ones of that queue pair, as packets of at most `mtu_bytes` (header_bytes of them
// header); a host's network card takes one packet at a time from its busy queue pairs in turn.
// A host receives at its link's rate (it is not the bottleneck studied). A message is
// delivered when its last byte has arrived and every earlier message of its queue pair has
// been (reliable, in order: an RC queue pair). No transport acknowledgements.
//
// Lanes: with `control_lane`, messages sent as control travel on a second virtual lane with
// its own buffers and credits, served before the data lane at every port (strict priority,
// as an InfiniBand VL arbitration table with a high-priority VL). Without it, one lane.
//
// Time is simulated and only advances in run_until() and run(); single-threaded. Deterministic
// for a configuration, its seed and the calls made.
#pragma once

#include "netio/scheduler/simulation/event_heap.hpp"
#include "netio/scheduler/time.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <vector>

namespace netio::scheduler::simulation {

struct LosslessFabricConfig {
  std::size_t leaves = 2;
  std::size_t hosts_per_leaf = 4;
  std::size_t spines = 4;
  double host_link_bytes_per_second = 1.25e9;    // host <-> leaf
  double uplink_bytes_per_second = 1.25e9;       // leaf <-> spine
  Duration link_delay{1000};                     // propagation, every link (credits return as fast)
  std::uint64_t port_buffer_bytes = 128 * 1024;  // a switch input port's buffer per lane: its link's credits
  std::uint64_t mtu_bytes = 4096;                // largest packet on a link, header included
  std::uint64_t header_bytes = 30;               // per packet (InfiniBand's LRH, BTH and CRCs: 26 to 30)
  bool adaptive = false;
  bool control_lane = false;
  std::uint64_t seed = 1;
};

struct LosslessFabricCounters {
  std::uint64_t events = 0;
  std::uint64_t packet_hops = 0;  // packets put on any link (every hop counts)
  std::uint64_t messages_delivered = 0;
  std::uint64_t credit_stalls = 0;  // a link with a packet to send and no credits for it
};

// One directed link, as its sender saw it.
struct LinkReport {
  std::uint64_t packets = 0;
  std::uint64_t bytes = 0;          // on the wire, headers included
  Duration busy{0};                 // time spent sending
  Time last_end{0};                 // when its last packet's last bit left
  std::uint64_t most_buffered = 0;  // the most bytes its receiving input port held (all lanes)
};

class LosslessFabric {
 public:
  using Action = std::function<void()>;

  // Throws std::invalid_argument naming the field for a zero count or rate, an MTU not above
  // the header, or a buffer smaller than one MTU (its link could never send a full packet).
  explicit LosslessFabric(const LosslessFabricConfig& config);
  LosslessFabric(const LosslessFabric&) = delete;
  LosslessFabric& operator=(const LosslessFabric&) = delete;

  std::size_t hosts() const noexcept { return hosts_; }
  const LosslessFabricConfig& config() const noexcept { return config_; }

  // Queues a message of `bytes` (> 0) from host `from` to host `to` (different, both < hosts())
  // behind the earlier ones of its queue pair (from, to, channel, lane); `delivered` runs in
  // simulated time (inside run_until) when it is delivered. `control`: on the control lane
  // when the fabric has one. Throws std::out_of_range / std::invalid_argument (also for a
  // channel above 65535).
  void send(std::uint32_t from, std::uint32_t to, std::uint64_t bytes, std::uint32_t channel, bool control,
            Action delivered);
  // Runs `action` at `at` (now, if that has passed).
  void at(Time at, Action action);

  // Runs the events up to and including `until` (those within its nanosecond); now() is then
  // `until`, unless a callback called stop(). An `until` before now() does nothing.
  void run_until(Time until);
  void run();  // until no event is left, or stop()
  void stop() noexcept { stopped_ = true; }
  Time now() const noexcept { return Time{now_ps_ / 1000}; }

  const LosslessFabricCounters& counters() const noexcept { return counters_; }

  // The links by what they join (for reports and tests).
  std::size_t host_uplink(std::size_t host) const noexcept { return host; }
  std::size_t host_downlink(std::size_t host) const noexcept { return hosts_ + host; }
  std::size_t leaf_uplink(std::size_t leaf, std::size_t spine) const noexcept {
    return 2 * hosts_ + leaf * config_.spines + spine;
  }
  std::size_t spine_downlink(std::size_t spine, std::size_t leaf) const noexcept {
    return 2 * hosts_ + config_.leaves * config_.spines + spine * config_.leaves + leaf;
  }
  LinkReport link(std::size_t index) const;

 private:
  using Ps = std::int64_t;  // picoseconds: a 9000-byte packet at 400 Mb/s is 180,000,000 ps
  static constexpr std::uint32_t none = 0xffffffff;
  static constexpr std::size_t lanes = 2;

  struct Event {
    enum class Kind : std::uint8_t { link_free, arrive, credit, action };
    Ps at = 0;
    std::uint64_t sequence = 0;
    std::uint32_t a = 0;  // link_free, arrive: the link; credit: link * lanes + lane; action: its index
    std::uint32_t b = 0;  // arrive: the packet; credit: the bytes
    Kind kind = Kind::action;
  };
  struct Earlier {
    bool operator()(const Event& x, const Event& y) const {
      return x.at != y.at ? x.at < y.at : x.sequence < y.sequence;
    }
  };
  struct Packet {
    std::uint32_t message = 0;
    std::uint32_t wire = 0;     // bytes on the link
    std::uint32_t payload = 0;  // of its message's
    std::uint32_t to = 0;       // host
    std::uint32_t next = none;  // in its input buffer
    std::uint8_t lane = 0;
  };
  struct Message {
    std::uint32_t pair = 0;  // queue pair
    std::uint64_t sequence = 0;
    std::uint64_t unsent = 0;   // payload bytes not yet cut into packets
    std::uint64_t missing = 0;  // payload bytes not yet arrived
    std::uint32_t next = none;  // behind it in its queue pair
    Action delivered;
  };
  struct QueuePair {
    std::uint32_t from = 0, to = 0;
    std::uint8_t lane = 0;
    std::uint32_t head = none, tail = none;  // messages with bytes to send
    std::uint32_t next_busy = none;          // in its host's round of busy queue pairs
    bool busy = false;
    std::uint64_t sent = 0, delivered = 0;            // sequence numbers
    std::map<std::uint64_t, std::uint32_t> complete;  // arrived out of order (adaptive routing), by sequence
  };
  struct Fifo {  // an intrusive queue of indices
    std::uint32_t head = none, tail = none;
  };
  struct Link {
    Ps ps_per_byte_x1000 = 0;  // its rate: thousandths of a picosecond per byte
    Ps delay = 0;
    bool busy = false;
    bool to_host = false;  // its receiver is a host: no credits needed
    std::uint64_t credits[lanes] = {0, 0};
    // Its receiver's input buffer, per lane, and the input buffers waiting for it as output.
    Fifo buffer[lanes];
    std::uint64_t buffered = 0;  // bytes in buffer, all lanes
    Fifo waiting[lanes];
    std::uint32_t waiting_count[lanes] = {0, 0};
    std::uint32_t next_waiting[lanes] = {none, none};  // as an input buffer, in its output's `waiting`
    // What it did (LinkReport)
    std::uint64_t packets = 0, bytes = 0, most_buffered = 0;
    Ps busy_ps = 0, last_end_ps = 0;
  };

  void schedule(Ps at, Event::Kind kind, std::uint32_t a, std::uint32_t b = 0);
  void dispatch(const Event& e);
  void try_send(std::uint32_t link);
  bool send_from_host(std::uint32_t link, std::uint32_t lane);
  bool send_from_buffer(std::uint32_t link, std::uint32_t lane);
  void transmit(std::uint32_t link, std::uint32_t packet);
  void arrive(std::uint32_t link, std::uint32_t packet);
  void wait_for_output(std::uint32_t input, std::uint32_t lane);  // the head of `input`'s buffer
  std::uint32_t route(std::uint32_t input, const Packet& p);
  std::uint32_t least_loaded_uplink(std::size_t leaf, std::uint32_t lane);
  void complete(std::uint32_t message);
  std::uint32_t new_packet();
  std::size_t leaf_of(std::uint32_t host) const noexcept { return host / config_.hosts_per_leaf; }

  LosslessFabricConfig config_;
  std::size_t hosts_;
  std::vector<Link> links_;
  std::vector<Packet> packets_;
  std::vector<std::uint32_t> free_packets_;
  std::vector<Message> messages_;
  std::vector<std::uint32_t> free_messages_;
  std::vector<QueuePair> pairs_;
  std::unordered_map<std::uint64_t, std::uint32_t> pair_index_;
  std::vector<Fifo> busy_pairs_;  // per host and lane: its round of queue pairs with bytes to send
  std::vector<Action> actions_;
  std::vector<std::uint32_t> free_actions_;
  EventHeap<Event, Earlier> queue_;
  std::uint64_t sequence_ = 0;
  std::uint64_t draws_;  // adaptive routing's tie-breaks (splitmix64 of the seed)
  Ps now_ps_ = 0;
  bool stopped_ = false;
  LosslessFabricCounters counters_;
};

}  // namespace netio::scheduler::simulation
