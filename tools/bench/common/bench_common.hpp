// SPDX-License-Identifier: MIT
// Shared by the reference programs of the side-by-side benchmark (tools/bench): the --cpu
// option, plain TCP sockets on loopback with bounded waits, and the report formats (the same
// JSON keys as netio_recv and netio_pingpong, so that compare.sh reads them all alike).
#pragma once

#include "common/latency_stats.hpp"
#include "common/throughput_result.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace netio::bench {

using Clock = std::chrono::steady_clock;

// What every reference program shares: one side listens on 127.0.0.1 (selected by a flag
// such as --recv, --publish or --server), the other connects to it; --json, --cpu and
// --timeout.
struct RoleOptions {
  bool listener = false;  // the flag was given
  std::string endpoint;   // the connecting side: where the listener is (tcp://HOST:PORT)
  std::uint16_t port = 0;
  std::string port_file;
  bool json = false;
  std::optional<int> cpu;
  std::chrono::nanoseconds timeout{std::chrono::seconds(60)};
};

struct RoleNames {
  const char* flag;           // e.g. "--recv"
  const char* flag_help;      // what the listening side does
  const char* listener;       // e.g. "Receiver"
  const char* endpoint_help;  // e.g. "Sender: the receiver, tcp://HOST:PORT"
  const char* json_help;      // the JSON document printed with --json
};

// Adds the listener flag, -e/--endpoint, --port, --port-file, --json, --cpu, --timeout and
// the units footer. Returns the flag, for the program's own options to depend on.
CLI::Option* add_role_options(CLI::App& app, RoleOptions& options, const RoleNames& names);
// Throws CLI::RequiredError when the connecting side has no endpoint.
void require_endpoint(const RoleOptions& options, const RoleNames& names);
// The round-trip programs: a server echoes, the client measures.
struct PingPongOptions : RoleOptions {
  std::uint64_t size = 64;
  std::uint64_t iterations = 10000;
  std::uint64_t warmup = 1000;
};
// What every round-trip client prints with --json (netio_pingpong's keys).
inline constexpr const char* rtt_json_help =
    "Client: print {\"size\", \"iterations\", \"rtt_us\": {min, median, mean, p90, p99, p999, max, stddev}}";
// add_role_options, then the client's -s/--size (described by `size_help`), -n and -w.
// Returns the listener flag.
CLI::Option* add_pingpong_options(CLI::App& app, PingPongOptions& options, const RoleNames& names,
                                  const char* size_help);
// require_endpoint, and a client needs a size and an iteration count of at least 1.
void check_pingpong_options(const PingPongOptions& options, const RoleNames& names);
// Installs the Ctrl-C handlers, pins when asked and runs `body` as netio's tools do.
int run_program(const char* tool, const RoleOptions& options, const std::function<int()>& body);

// --cpu N: pin the program's main thread (and so every thread it creates later, e.g.
// ZeroMQ's I/O thread, which inherits the mask) to CPU N.
CLI::Option* add_cpu_option(CLI::App& app, std::optional<int>& cpu);
void pin_if_asked(const std::optional<int>& cpu);

// A file descriptor closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  int get() const noexcept { return fd_; }
  int release() noexcept {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// Listens on 127.0.0.1:port (0: the system picks one); returns the socket and the port.
Fd listen_loopback(std::uint16_t port, std::uint16_t& bound_port);
// Waits for one connection until `deadline` (polling in 100 ms slices so that Ctrl-C is
// seen); throws std::runtime_error when it passes.
Fd accept_one(const Fd& listener, Clock::time_point deadline);
Fd connect_to(const std::string& host, std::uint16_t port);
void set_nodelay(const Fd& socket);
void set_nonblocking(const Fd& socket);
// SO_RCVTIMEO / SO_SNDTIMEO, so that blocking calls return now and then to check deadlines.
void set_io_timeouts(const Fd& socket, std::chrono::milliseconds timeout);

// A ping-pong connection: TCP_NODELAY, 100 ms I/O timeouts (for the deadline checks below),
// non-blocking when busy polling.
void prepare_pingpong_socket(const Fd& socket, bool busy);
// Reads up to `length` bytes (at least 1); 0 at end of stream. Blocking recv(), or with
// `busy` non-blocking recv() in a spin. Checks the deadline and Ctrl-C while waiting (every
// 100 ms when blocking, every 4096 spins when busy polling); throws std::runtime_error when
// either came, or when recv() fails.
std::size_t read_some(const Fd& socket, char* data, std::size_t length, bool busy, Clock::time_point deadline);
// Writes all `length` bytes (a blocking socket's SO_SNDTIMEO, or a non-blocking socket's
// EAGAIN, only lets it look at the deadline and Ctrl-C); throws std::runtime_error when
// send() fails or either came.
void write_all(const Fd& socket, const char* data, std::size_t length, Clock::time_point deadline);

// "tcp://127.0.0.1:5000" -> host, port (only what the programs need: tcp://HOST:PORT).
struct HostPort {
  std::string host;
  std::uint16_t port = 0;
};
HostPort parse_tcp_endpoint(const std::string& endpoint);

// The client's measurement: --warmup then --iterations calls of `round_trip` (one ping sent
// and its pong received), each timed; prints the statistics of the measured ones as
// print_latency does.
void measure_round_trips(const char* tool, const PingPongOptions& options, const std::function<void()>& round_trip);

// A deadline from --timeout (0: a day, i.e. effectively none).
Clock::time_point deadline_after(std::chrono::nanoseconds timeout);

// Prints {"results":[{size, messages, bytes, seconds, msgs_per_s, gbps}]} or a table.
void print_throughput(const netio::tools::ThroughputResult& result, bool json);
// Prints {"size", "iterations", "rtt_us": {min, median, mean, p90, p99, p999, max, stddev}}
// or a table.
void print_latency(const char* tool, std::uint64_t size, const netio::tools::LatencyStats& stats, bool json);

}  // namespace netio::bench
