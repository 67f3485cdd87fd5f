// SPDX-License-Identifier: MIT
// shm_wakeup_flood: a hostile shm:// peer, for the wake-up flood figure of docs/performance.md
// (issue 49, item 11). It connects to a shm:// receive socket as a low-latency sender would
// (request, accept), ignores the segment it is given, and writes wake-up bytes as fast as the
// socket takes them, 64 KiB per send(), until the receiver drops it; then it connects again
// and floods again (unless --once), for -t DURATION. A receiver that did not drop floods
// would spend its time reading them; one that does pays a handshake per reconnection.
// Reports the connections made, how many the receiver dropped, the ones it refused, and the
// bytes written. Not installed; test/support/raw_shm_peer.hpp is the suite's flooder.
//
//   shm_wakeup_flood -e shm://NAME:PORT [--mode ht|ll] [-t DURATION] [--once] [--cpu N] [--json]
#include "bench/common/bench_common.hpp"
#include "common/cli_options.hpp"
#include "common/json_writer.hpp"
#include "common/termination.hpp"
#include "common/units.hpp"

#include "backends/posix/socket_fd.hpp"
#include "backends/posix/wire.hpp"
#include "backends/shm/unix_family.hpp"
#include "netio/endpoint.hpp"
#include "netio/src/handshake.hpp"

#include <fmt/format.h>

#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

namespace {

using namespace netio::bench;
constexpr const char* tool_name = "shm_wakeup_flood";

struct Options {
  std::string endpoint;
  std::string mode = "ht";  // the receive socket's: a high-throughput or a low-latency sender
  std::chrono::nanoseconds time{std::chrono::seconds(5)};
  bool once = false;
  bool json = false;
  std::optional<int> cpu;
};

struct Tally {
  std::uint64_t connections = 0;  // accepted by the receiver
  std::uint64_t dropped = 0;      // closed by the receiver while flooding
  std::uint64_t refused = 0;      // connection or handshake refused
  std::uint64_t bytes = 0;        // wake-up bytes written
};

// Connects and completes a sender's handshake: the socket, or an invalid one when the
// receiver refused (not listening, rejected, admission limits).
netio::posix::SocketFd connect_as_sender(const netio::Endpoint& remote, netio::detail::SocketKind kind) {
  netio::posix::SocketFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) throw std::runtime_error(fmt::format("socket() failed: {}", std::strerror(errno)));
  const auto address = netio::shm::abstract_address(remote);
  if (::connect(fd.get(), address.get(), address.length) != 0) return {};
  // A high-throughput sender names its page size (netio_throughput's default); a low-latency one none.
  const std::uint64_t page_size = kind == netio::detail::SocketKind::high_throughput_send ? 1 << 20 : 0;
  const auto hello = netio::detail::encode_hello({kind, page_size});
  const auto request = netio::posix::encode_request(0, hello);
  if (::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) return {};
  std::array<std::byte, netio::posix::frame_header_size> header{};
  if (::recv(fd.get(), header.data(), header.size(), MSG_WAITALL) != static_cast<ssize_t>(header.size())) return {};
  std::uint64_t length = 0;
  std::memcpy(&length, header.data(), sizeof length);
  if (length > netio::posix::max_handshake_frame) return {};
  std::vector<std::byte> payload(length);
  if (::recv(fd.get(), payload.data(), payload.size(), MSG_WAITALL) != static_cast<ssize_t>(payload.size())) return {};
  const auto reply = netio::posix::decode_reply(payload);
  if (!reply || !reply->accepted) return {};
  return fd;
}

// Writes wake-up bytes until the receiver closes the connection (true) or `until` (false).
bool flood(int fd, Clock::time_point until, std::uint64_t& bytes) {
  static const std::vector<char> wake_ups(64 * 1024, 1);
  while (Clock::now() < until && !netio::tools::stop_requested()) {
    pollfd writable{fd, POLLOUT, 0};
    if (::poll(&writable, 1, 10) < 1) continue;
    if (writable.revents & (POLLHUP | POLLERR)) return true;
    const ssize_t n = ::send(fd, wake_ups.data(), wake_ups.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) bytes += static_cast<std::uint64_t>(n);
    if (n < 0 && errno != EAGAIN && errno != EINTR) return true;  // EPIPE, ECONNRESET: dropped
  }
  return false;
}

int run(const Options& o) {
  const auto remote = netio::Endpoint::parse(o.endpoint);
  const auto kind =
      o.mode == "ll" ? netio::detail::SocketKind::low_latency_send : netio::detail::SocketKind::high_throughput_send;
  const auto start = Clock::now();
  const auto until = start + o.time;
  Tally tally;
  while (Clock::now() < until && !netio::tools::stop_requested()) {
    const auto fd = connect_as_sender(remote, kind);
    if (!fd) {
      ++tally.refused;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    ++tally.connections;
    if (flood(fd.get(), until, tally.bytes)) ++tally.dropped;
    if (o.once) break;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (o.json) {
    netio::tools::JsonWriter json;
    json.begin_object()
        .field("seconds", seconds)
        .field("connections", tally.connections)
        .field("dropped", tally.dropped)
        .field("refused", tally.refused)
        .field("bytes", tally.bytes)
        .end_object();
    fmt::print("{}\n", json.str());
  } else {
    fmt::print("{}: {:.1f} s: {} connections, {} dropped by the receiver, {} refused; {} of wake-up bytes written\n",
               tool_name, seconds, tally.connections, tally.dropped, tally.refused,
               netio::tools::format_size(tally.bytes));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "shm_wakeup_flood: a hostile shm:// peer that writes wake-up bytes without end, reconnecting "
      "whenever the receiver drops it (issue 49's wake-up flood).",
      tool_name};
  Options o;
  app.add_option("-e,--endpoint", o.endpoint, "The receiver, shm://NAME:PORT")->required();
  app.add_option("--mode", o.mode, "The receive socket's mode: ht (high-throughput) or ll (low-latency)")
      ->check(CLI::IsMember({"ht", "ll"}))
      ->capture_default_str();
  netio::tools::add_duration_option(app, "-t,--time", o.time, "Flood for DURATION");
  app.add_flag("--once", o.once, "Do not reconnect once the receiver dropped the connection");
  app.add_flag("--json", o.json, "Print {\"seconds\", \"connections\", \"dropped\", \"refused\", \"bytes\"}");
  add_cpu_option(app, o.cpu);
  app.footer(netio::tools::units_help);
  return netio::tools::parse_and_run(
      app, argc, argv, [] {},
      [&] {
        netio::tools::install_termination_handlers();
        pin_if_asked(o.cpu);
        return run(o);
      });
}
