// SPDX-License-Identifier: MIT
#include "bench/common/bench_common.hpp"

#include "common/cli_options.hpp"
#include "common/cpu_affinity.hpp"
#include "common/json_writer.hpp"
#include "common/termination.hpp"
#include "common/tool_main.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "common/termination.hpp"

namespace netio::bench {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(fmt::format("{}: {}", what, std::strerror(errno)));
}

}  // namespace

CLI::Option* add_role_options(CLI::App& app, RoleOptions& o, const RoleNames& names) {
  auto* flag = app.add_flag(names.flag, o.listener, names.flag_help);
  app.add_option("-e,--endpoint", o.endpoint, names.endpoint_help)->excludes(flag);
  app.add_option("--port", o.port, fmt::format("{}: port to listen on (0: any)", names.listener))->needs(flag);
  app.add_option("--port-file", o.port_file, fmt::format("{}: write the port to FILE once listening", names.listener))
      ->needs(flag);
  app.add_flag("--json", o.json, names.json_help);
  add_cpu_option(app, o.cpu);
  netio::tools::add_duration_option(app, "--timeout", o.timeout, "Bound on the whole run (0: none)");
  app.footer(netio::tools::units_help);
  return flag;
}

void require_endpoint(const RoleOptions& o, const RoleNames& names) {
  if (!o.listener && o.endpoint.empty()) throw CLI::RequiredError(fmt::format("--endpoint (or {})", names.flag));
}

CLI::Option* add_pingpong_options(CLI::App& app, PingPongOptions& o, const RoleNames& names, const char* size_help) {
  auto* flag = add_role_options(app, o, names);
  netio::tools::add_size_option(app, "-s,--size", o.size, size_help)->excludes(flag);
  app.add_option("-n,--iterations", o.iterations, "Client: measured round trips")->capture_default_str();
  app.add_option("-w,--warmup", o.warmup, "Client: round trips before measuring")->capture_default_str();
  return flag;
}

void check_pingpong_options(const PingPongOptions& o, const RoleNames& names) {
  require_endpoint(o, names);
  if (!o.listener && (o.size == 0 || o.iterations == 0)) {
    throw CLI::ValidationError("--size/--iterations", "must be at least 1");
  }
}

int run_program(const char* tool, const RoleOptions& o, const std::function<int()>& body) {
  return netio::tools::run_tool(tool, [&] {
    netio::tools::install_termination_handlers();
    pin_if_asked(o.cpu);
    return body();
  });
}

CLI::Option* add_cpu_option(CLI::App& app, std::optional<int>& cpu) {
  return app.add_option("--cpu", cpu, "Pin the program (and the threads it starts) to CPU N")
      ->type_name("N")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            int n = -1;
            if (!CLI::detail::lexical_cast(text, n)) return fmt::format("'{}' is not a CPU number", text);
            return netio::tools::cpu_unavailable_reason(n).value_or("");
          },
          "", "CPU"));
}

void pin_if_asked(const std::optional<int>& cpu) {
  if (cpu) netio::tools::pin_current_thread(*cpu);
}

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

Fd listen_loopback(std::uint16_t port, std::uint16_t& bound_port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) fail("socket");
  const int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) fail("bind 127.0.0.1");
  if (::listen(fd.get(), 4) != 0) fail("listen");
  socklen_t length = sizeof address;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0) fail("getsockname");
  bound_port = ntohs(address.sin_port);
  return fd;
}

Fd accept_one(const Fd& listener, Clock::time_point deadline) {
  while (Clock::now() < deadline && !netio::tools::stop_requested()) {
    pollfd p{listener.get(), POLLIN, 0};
    const int ready = ::poll(&p, 1, 100);
    if (ready < 0 && errno != EINTR) fail("poll");
    if (ready <= 0) continue;
    Fd fd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (fd.get() < 0) fail("accept");
    return fd;
  }
  throw std::runtime_error("no connection before the deadline (or interrupted)");
}

Fd connect_to(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    throw std::runtime_error(fmt::format("cannot resolve '{}': {}", host, ::gai_strerror(rc)));
  }
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const int rc = fd.get() < 0 ? -1 : ::connect(fd.get(), found->ai_addr, found->ai_addrlen);
  ::freeaddrinfo(found);
  if (rc != 0) fail(fmt::format("connect to {}:{}", host, port));
  return fd;
}

void set_nodelay(const Fd& socket) {
  const int one = 1;
  if (::setsockopt(socket.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) fail("TCP_NODELAY");
}

void set_nonblocking(const Fd& socket) {
  const int flags = ::fcntl(socket.get(), F_GETFL);
  if (flags < 0 || ::fcntl(socket.get(), F_SETFL, flags | O_NONBLOCK) != 0) fail("O_NONBLOCK");
}

void prepare_pingpong_socket(const Fd& socket, bool busy) {
  set_nodelay(socket);
  set_io_timeouts(socket, std::chrono::milliseconds(100));
  if (busy) set_nonblocking(socket);
}

std::size_t read_some(const Fd& socket, char* data, std::size_t length, bool busy, Clock::time_point deadline) {
  for (std::uint64_t spins = 0;; ++spins) {
    const ssize_t n = ::recv(socket.get(), data, length, busy ? MSG_DONTWAIT : 0);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      throw std::runtime_error(fmt::format("recv failed: {}", std::strerror(errno)));
    }
    if ((!busy || (spins & 4095) == 0) && (Clock::now() >= deadline || netio::tools::stop_requested())) {
      throw std::runtime_error("--timeout passed (or interrupted) while waiting for the peer");
    }
  }
}

void write_all(const Fd& socket, const char* data, std::size_t length, Clock::time_point deadline) {
  std::size_t done = 0;
  while (done < length) {
    const ssize_t n = ::send(socket.get(), data + done, length - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      throw std::runtime_error(fmt::format("send failed: {}", std::strerror(errno)));
    } else if (Clock::now() >= deadline || netio::tools::stop_requested()) {
      throw std::runtime_error("--timeout passed (or interrupted) while sending");
    }
  }
}

void set_io_timeouts(const Fd& socket, std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  if (::setsockopt(socket.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
      ::setsockopt(socket.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
    fail("SO_RCVTIMEO/SO_SNDTIMEO");
  }
}

HostPort parse_tcp_endpoint(const std::string& endpoint) {
  constexpr std::string_view scheme = "tcp://";
  const auto colon = endpoint.rfind(':');
  if (endpoint.rfind(scheme, 0) != 0 || colon == std::string::npos || colon < scheme.size()) {
    throw CLI::ValidationError("--endpoint", fmt::format("'{}' is not tcp://HOST:PORT", endpoint));
  }
  HostPort result;
  result.host = endpoint.substr(scheme.size(), colon - scheme.size());
  int port = -1;
  if (!CLI::detail::lexical_cast(endpoint.substr(colon + 1), port) || port < 0 || port > 65535) {
    throw CLI::ValidationError("--endpoint", fmt::format("bad port in '{}'", endpoint));
  }
  result.port = static_cast<std::uint16_t>(port);
  return result;
}

Clock::time_point deadline_after(std::chrono::nanoseconds timeout) {
  return Clock::now() + (timeout > std::chrono::nanoseconds::zero() ? timeout : std::chrono::hours(24));
}

void print_throughput(const netio::tools::ThroughputResult& result, bool json) {
  const netio::tools::ThroughputResult results[] = {result};
  if (json) {
    netio::tools::JsonWriter writer;
    netio::tools::write_results_json(writer, results, netio::tools::VerificationColumns::none);
    fmt::print("{}\n", writer.str());
  } else {
    fmt::print("{}", netio::tools::results_table(results, netio::tools::VerificationColumns::none));
  }
}

void measure_round_trips(const char* tool, const PingPongOptions& o, const std::function<void()>& round_trip) {
  std::vector<double> rtt_us;
  rtt_us.reserve(o.iterations);
  for (std::uint64_t i = 0; i < o.warmup + o.iterations; ++i) {
    const auto start = Clock::now();
    round_trip();
    const auto end = Clock::now();
    if (i >= o.warmup) rtt_us.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
  print_latency(tool, o.size, netio::tools::compute_latency_stats(std::move(rtt_us)), o.json);
}

void print_latency(const char* tool, std::uint64_t size, const netio::tools::LatencyStats& s, bool json) {
  if (json) {
    netio::tools::JsonWriter w;
    w.begin_object().field("size", size).field("iterations", s.count).key("rtt_us").begin_object();
    w.field("min", s.min).field("median", s.median).field("mean", s.mean).field("p90", s.p90);
    w.field("p99", s.p99).field("p999", s.p999).field("max", s.max).field("stddev", s.stddev);
    w.end_object().end_object();
    fmt::print("{}\n", w.str());
    return;
  }
  fmt::print("{}: {} round trips of {} B\n", tool, s.count, size);
  fmt::print("RTT us {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "min", "median", "mean", "p90", "p99",
             "p99.9", "max", "stddev");
  fmt::print("       {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f}\n", s.min,
             s.median, s.mean, s.p90, s.p99, s.p999, s.max, s.stddev);
}

}  // namespace netio::bench
