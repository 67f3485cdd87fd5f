// SPDX-License-Identifier: MIT
/// @file
/// The emulated network: a back-end decorator that makes loopback behave like a real link.
/// It delays each buffer a send socket hands to the wire by a value drawn from a
/// distribution, limits rates per connection and per node, and slows links or nodes down
/// for windows of time. It wraps any back-end (tcp, fabric) through the wrap hook of
/// ContextOptions, keeps the back-end contract (netio/backend/backend.hpp) and needs no root rights.
///
/// Select it with ContextOptions::emulation (or a tool's --emulate SPEC); change it while
/// running with Context::emulation()->set_config(): later buffers use the new draws, rates
/// and slow-downs.
///
/// The spec (one string, clauses separated by ';', parameters by ','):
///
///   SPEC      := CLAUSE (';' CLAUSE)*            (spaces around tokens are ignored; "" or "none": no shaping)
///   CLAUSE    := 'delay=' DIST
///              | 'rate=' RATE [',burst=' SIZE]    per connection, on the sending side
///              | 'out='  RATE [',burst=' SIZE]    node outgoing capacity, shared by all its send sockets
///              | 'in='   RATE [',burst=' SIZE]    node incoming capacity, shared by all its receive sockets
///              | 'core=' RATE [',burst=' SIZE]    switch core, shared by every node of the process with this clause
///              | 'slowdown=' TARGET ',at=' DURATION ',for=' DURATION [',every=' DURATION]
///                                [',rate=' PERCENT] [',delay=' DURATION]
///              | 'seed=' INTEGER                  PRNG seed (default 1): the same seed, the same draws
///              | 'node=' INTEGER                  this node's id, for slowdown=node:ID
///   DIST      := DURATION                                      constant
///              | 'constant:' DURATION | 'constant:value=' DURATION
///              | 'uniform:min=' D ',max=' D  |  'uniform:mean=' D ',jitter=' D    (mean ± jitter)
///              | 'normal:mean=' D ',sigma=' D                    (draws below 0 count as 0)
///              | 'lognormal:mean=' D ',sigma=' X                 (X: shape, the sigma of ln(delay))
///              | 'lognormal:median=' D ',sigma=' X
///              | 'lognormal:mu=' X ',sigma=' X [',unit=' UNIT]   (mu of ln(delay in UNIT); UNIT default us)
///              | 'exponential:mean=' D
///              | 'pareto:scale=' D ',shape=' X  |  'pareto:mean=' D ',shape=' X   (shape > 1 for mean)
///              | 'table:file=' PATH [',unit=' UNIT]              values are delays in UNIT (default us)
///              | 'table:file=' PATH ',mean=' D ',jitter=' D      tc-netem table: mean + jitter × value / 8192
///              each DIST may end with [',correlation=' PERCENT] [',clip=' D]
///   TARGET    := 'node' | 'node:' INTEGER | 'link:' HOST ':' PORT     (HOST '*': any host)
///   DURATION  := NUMBER ('ns'|'us'|'µs'|'ms'|'s')    UNIT := 'ns'|'us'|'ms'|'s'
///   SIZE      := NUMBER ['B'|'K'|'KiB'|'M'|'MiB'|'G'|'GiB']  (binary)
///   RATE      := NUMBER ('bps'|'Kbps'|'Mbps'|'Gbps'|'Tbps')  (bits per second, decimal)
///              | NUMBER ('B/s'|'KB/s'|'MB/s'|'GB/s'|'KiB/s'|'MiB/s'|'GiB/s')
///   PERCENT   := NUMBER '%' | a fraction between 0 and 1
///
/// What each part does:
///   - delay: each buffer a send socket sends waits the drawn delay before it goes to the
///     real back-end; a buffer never overtakes an earlier one of its connection (its release
///     time is at least the previous one's). Draws come from a fast seeded PRNG (xoshiro256**),
///     one stream per connection (the seed, mixed with the connection's number in the node),
///     so a run is reproducible. correlation=ρ correlates successive draws of a connection
///     (a Gaussian copula: z_n = ρ z_{n-1} + √(1-ρ²) ε_n), leaving each draw's distribution
///     as configured. clip= bounds every draw. A receive socket's replies (acknowledgements,
///     credits) are buffers its node sends: they wait their own draws (a stream of their
///     own per connection) and go through rate= and out= the same way, in order per
///     connection. A round trip under delay=D on both nodes takes at least 2D.
///   - rate, out, in: token buckets (burst default: 4 ms at the rate, at least 64 KiB). A
///     buffer goes when the bucket holds min(its size, burst), and takes its size from it, so
///     the long-run rate is exact whatever the buffer sizes. out= and in= are shared by every
///     connection of the node (the Context), served fairly (fair queueing: the buffer that would finish first if the
///     connections were served byte by byte in turn goes first, so a small reply or control
///     message passes the large buffers waiting). in= is enforced by the receiving side: its receive sockets hand
///     received buffers up at the shared rate and hold the rest, which stalls the connections (the back-end stops
///     reading) and so holds every sender, whatever process it is in.
///   - core: a switch core with less capacity than the ports' sum. Every emulated node (Context)
///     of the process whose spec has the same core= clause sends through one shared token
///     bucket, after its out=: its send sockets' buffers and its replies, fairly between the
///     connections as out= does, released by a thread of the core's own. A connection takes
///     core= when it opens. Nodes in other processes have cores of their own.
///   - slowdown: during [at, at+for) after the spec took effect (repeating every `every` when
///     given), the target runs at `rate` of its rates and/or with `delay` added to each draw.
///     node: everything this node sends (delays, rate=, out=) and receives (in=); node:ID:
///     the same, on the node whose node= is ID only; link:HOST:PORT: the connections this node
///     makes to that endpoint (their delays and rate=). A rate slow-down needs a rate to scale
///     (rate=, in= or out=).
///
/// Examples:
///   delay=lognormal:mean=50us,sigma=0.8;rate=10Gbps
///   delay=uniform:min=0us,max=100us,correlation=25%;seed=7
///   delay=table:file=normal.dist,mean=50us,jitter=10us
///   in=10Gbps
///   rate=1Gbps;slowdown=node,at=10s,for=5s,rate=25%
///
/// Per endpoint: NetworkEmulation::set_link(remote, spec) gives the connections to one
/// endpoint a delay and rate of their own (e.g. one slow link among fast ones).
///   node=2;out=10Gbps;slowdown=node:2,at=10s,for=5s,rate=25%
///
/// Memory stays bounded: the decorator holds only what the caller lent it (its send
/// buffers, until their completions, which come late) and what the real back-end lent it
/// (received buffers, bounded by the receive credits). Delays and rates run on the event
/// loop's timers: nothing sleeps, nothing spins.
#pragma once

#include "netio/endpoint.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netio {

class Backend;
class Context;
class EventLoop;

enum class DelayKind { none, constant, uniform, normal, lognormal, exponential, pareto, table };

/// A delay distribution, in nanoseconds (the parser converts every unit).
struct DelayDistribution {
  DelayKind kind = DelayKind::none;
  double value = 0;             ///< constant
  double min = 0, max = 0;      ///< uniform
  double mean = 0, sigma = 0;   ///< normal (sigma in ns)
  double mu = 0, shape = 0;     ///< lognormal: ln(delay in ns) ~ N(mu, shape²)
  double lambda = 0;            ///< exponential: rate, 1/mean
  double scale = 0, alpha = 0;  ///< pareto: x_m and shape
  std::vector<double> table;    ///< table: delays in ns, sampled by index
  std::string table_file;       ///< where the table came from (for messages)
  double correlation = 0;       ///< 0 ≤ ρ < 1
  std::optional<double> clip;   ///< upper bound of every draw

  /// The distribution's mean in ns (before clipping; infinite for pareto with alpha ≤ 1).
  double expected_mean() const;
};

struct RateLimit {
  double bytes_per_second = 0;    ///< 0: unlimited
  std::uint64_t burst_bytes = 0;  ///< the bucket's depth
  explicit operator bool() const noexcept { return bytes_per_second > 0; }
};

struct SlowdownWindow {
  enum class Target { node, link };
  Target target = Target::node;
  std::optional<std::uint32_t> node_id;  ///< node:ID
  std::string link_host;                 ///< link:HOST:PORT
  std::uint16_t link_port = 0;
  std::chrono::nanoseconds at{0};
  std::chrono::nanoseconds duration{0};
  std::optional<std::chrono::nanoseconds> every;  ///< repeat period (> duration)
  double rate_factor = 1;                         ///< 0.25 for rate=25%
  std::chrono::nanoseconds extra_delay{0};
};

struct EmulationConfig {
  DelayDistribution delay;
  RateLimit connection_rate;  ///< rate=
  RateLimit node_out;         ///< out=
  RateLimit node_in;          ///< in=
  RateLimit core;             ///< core=
  std::vector<SlowdownWindow> slowdowns;
  std::uint64_t seed = 1;
  std::optional<std::uint32_t> node_id;
  std::string spec;  ///< the text it was parsed from, if any

  /// Whether anything is shaped at all.
  bool shapes_anything() const noexcept;
};

/// Parses a spec (grammar above). Throws netio::Error(Errc::invalid_option) whose
/// message quotes the spec and says what is wrong and where, e.g.
///   emulation spec 'delay=lognormal:mean=50us': lognormal needs sigma= (the shape, e.g. sigma=0.8)
/// Table files are read here (a missing or malformed file is an error naming it and the line).
EmulationConfig parse_emulation_spec(std::string_view spec);

/// Reads a delay table (tc-netem's format: numbers separated by white space, '#' comments to
/// the end of the line). Throws netio::Error(Errc::invalid_option) naming the file and the line
/// of a bad value.
std::vector<double> read_delay_table(const std::string& path);

namespace emulated {
class NetworkState;
}

/// The emulation of one Context: what its decorators read. Thread-safe: set_config() may be
/// called from any thread; sockets pick the new configuration up at their next buffer.
class NetworkEmulation {
 public:
  explicit NetworkEmulation(EmulationConfig config);
  ~NetworkEmulation();
  NetworkEmulation(const NetworkEmulation&) = delete;
  NetworkEmulation& operator=(const NetworkEmulation&) = delete;

  /// Replaces the configuration: later buffers use the new distribution and rates, and
  /// slow-down windows count from now.
  void set_config(EmulationConfig config);
  /// The same from a spec (throws as parse_emulation_spec(), leaving the old one in force).
  void set_spec(std::string_view spec) { set_config(parse_emulation_spec(spec)); }
  EmulationConfig config() const;

  /// Per endpoint: connections made to `remote` (matched by host, as written, and port; any
  /// scheme) use `config` for what is theirs alone — delay, rate=, seed and link slow-downs —
  /// instead of the context's; the node's in= and out= stay the context's. Later buffers of
  /// open connections follow too. nullopt removes the override. Any thread.
  void set_link(const Endpoint& remote, std::optional<EmulationConfig> config);
  void set_link(const Endpoint& remote, std::string_view spec) { set_link(remote, parse_emulation_spec(spec)); }

  /// Counters, for tests and tools (any thread).
  struct Counters {
    std::uint64_t buffers_delayed = 0;       ///< send buffers (replies too) that waited for a delay or a rate
    std::uint64_t buffers_held = 0;          ///< received buffers held back by in=
    std::uint64_t bytes_sent = 0;            ///< handed to the real back-end (replies too)
    std::uint64_t bytes_received = 0;        ///< handed up to the layer above
    std::uint64_t buffers_through_core = 0;  ///< send buffers (replies too) that crossed core=
  };
  Counters counters() const;

 private:
  friend class Context;
  /// Wraps a back-end (on `loop`'s thread): what Context does through the wrap hook.
  std::unique_ptr<Backend> wrap(std::unique_ptr<Backend> inner, EventLoop& loop);

  std::shared_ptr<emulated::NetworkState> state_;
};

}  // namespace netio
