// SPDX-License-Identifier: MIT
// tcp_throughput: the raw-TCP reference for throughput (tools/bench/README.md). One stream,
// blocking writes of a fixed size; the receiver reads into a 1 MiB buffer and counts bytes.
// --paged gives the sender the shape of netio's high-throughput sender and nothing else:
// the calling thread copies each message into pages (16 of 1 MiB, or --page-size), a second thread
// (pinned with it) writes full pages. What that shape costs on a machine is then measured
// without netio.
//
//   tcp_throughput --recv [--port N] [--port-file FILE] [--json] [--cpu N] [--timeout D]
//   tcp_throughput -e tcp://HOST:PORT -s SIZE [--write-size SIZE | --paged [--page-size SIZE]]
//                  (-n MESSAGES | -t DURATION) [--cpu N]
#include "bench/common/bench_common.hpp"
#include "common/cli_options.hpp"
#include "common/termination.hpp"
#include "common/tool_main.hpp"

#include <fmt/format.h>

#include <sys/socket.h>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using namespace netio::bench;
using netio::tools::ThroughputResult;
constexpr const char* tool_name = "tcp_throughput";

struct Options : netio::bench::RoleOptions {
  std::uint64_t size = 1 << 20;
  std::uint64_t write_size = 0;
  std::uint64_t messages = 0;
  std::chrono::nanoseconds time{std::chrono::seconds(2)};
  bool paged = false;
  std::uint64_t page_size = 1 << 20;  // --paged: netio's default page
};

constexpr std::size_t page_count = 16;

int run_receiver(const Options& o) {
  std::uint16_t port = 0;
  const Fd listener = listen_loopback(o.port, port);
  fmt::print(stderr, "{}: listening on 127.0.0.1:{}\n", tool_name, port);
  if (!o.port_file.empty()) netio::tools::write_port_file(o.port_file, port);
  const auto deadline = deadline_after(o.timeout);
  const Fd stream = accept_one(listener, deadline);
  set_io_timeouts(stream, std::chrono::milliseconds(100));
  std::vector<char> buffer(1 << 20);
  std::uint64_t bytes = 0;
  Clock::time_point first{}, last{};
  for (;;) {
    if (Clock::now() >= deadline || netio::tools::stop_requested()) {
      throw std::runtime_error("--timeout passed (or interrupted) before the sender closed the stream");
    }
    const ssize_t n = ::recv(stream.get(), buffer.data(), buffer.size(), 0);
    if (n > 0) {
      if (bytes == 0) first = Clock::now();
      bytes += static_cast<std::uint64_t>(n);
      continue;
    }
    if (n == 0) break;  // end of stream
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
    throw std::runtime_error(fmt::format("recv failed: {}", std::strerror(errno)));
  }
  last = Clock::now();
  ThroughputResult r;
  r.size = o.size;
  r.bytes = bytes;
  r.messages = o.size ? bytes / o.size : 0;
  r.seconds = std::chrono::duration<double>(last - first).count();
  print_throughput(r, o.json);
  return 0;
}

// The bytes of `chunk`-sized writes until `total_bytes` (or the time) is up.
std::uint64_t send_plain(const Options& o, const Fd& stream, std::uint64_t total_bytes, Clock::time_point end_time,
                         Clock::time_point deadline) {
  const std::uint64_t write_size = o.write_size ? o.write_size : o.size;
  std::vector<char> buffer(write_size, 'x');
  std::uint64_t sent = 0;
  for (std::uint64_t writes = 0;; ++writes) {
    if (total_bytes ? sent >= total_bytes : ((writes & 15) == 0 && Clock::now() >= end_time)) break;
    if (Clock::now() >= deadline || netio::tools::stop_requested()) throw std::runtime_error("--timeout passed");
    std::uint64_t chunk = write_size;
    if (total_bytes && total_bytes - sent < chunk) chunk = total_bytes - sent;
    write_all(stream, buffer.data(), chunk, deadline);
    sent += chunk;
  }
  return sent;
}

// --paged: messages copied into pages here, full pages written by a second thread.
std::uint64_t send_paged(const Options& o, const Fd& stream, std::uint64_t total_bytes, Clock::time_point end_time,
                         Clock::time_point deadline) {
  const std::size_t page_size = o.page_size;
  std::vector<std::vector<char>> pages(page_count, std::vector<char>(page_size));
  std::vector<std::size_t> used(page_count, 0);
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::size_t> free_pages, full_pages;  // guarded by mutex
  bool done = false;
  std::string failure;
  for (std::size_t i = 0; i < page_count; ++i) free_pages.push_back(i);
  std::thread writer([&] {
    for (;;) {
      std::size_t page = 0;
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return !full_pages.empty() || done; });
        if (full_pages.empty()) return;
        page = full_pages.front();
        full_pages.pop_front();
      }
      try {
        write_all(stream, pages[page].data(), used[page], deadline);
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex);
        failure = e.what();
        done = true;
        changed.notify_all();
        return;
      }
      std::lock_guard lock(mutex);
      free_pages.push_back(page);
      changed.notify_all();
    }
  });
  const std::vector<char> message(o.size, 'x');
  std::uint64_t sent = 0;
  std::size_t current = page_count;  // none
  auto hand_over = [&] {
    std::lock_guard lock(mutex);
    full_pages.push_back(current);
    current = page_count;
    changed.notify_all();
  };
  for (std::uint64_t count = 0;; ++count) {
    if (total_bytes ? sent >= total_bytes : ((count & 63) == 0 && Clock::now() >= end_time)) break;
    std::uint64_t offset = 0;
    while (offset < o.size) {  // a message larger than the free space continues in the next page
      if (current == page_count) {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return !free_pages.empty() || done; });
        if (!failure.empty()) break;
        current = free_pages.back();  // the most recently written page: warm in the cache
        free_pages.pop_back();
        used[current] = 0;
      }
      const std::uint64_t take = std::min<std::uint64_t>(o.size - offset, page_size - used[current]);
      std::memcpy(pages[current].data() + used[current], message.data() + offset, take);
      used[current] += take;
      offset += take;
      if (used[current] == page_size) hand_over();
    }
    if (!failure.empty()) break;
    sent += o.size;
  }
  if (current != page_count && used[current] > 0) hand_over();
  {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return free_pages.size() + (current == page_count ? 0 : 1) == page_count || done; });
    done = true;
    changed.notify_all();
  }
  writer.join();
  if (!failure.empty()) throw std::runtime_error(failure);
  return sent;
}

int run_sender(const Options& o) {
  const HostPort where = parse_tcp_endpoint(o.endpoint);
  const Fd stream = connect_to(where.host, where.port);
  set_io_timeouts(stream, std::chrono::milliseconds(100));
  const std::uint64_t total_bytes = o.messages ? o.messages * o.size : 0;
  const auto deadline = deadline_after(o.timeout);
  const auto start = Clock::now();
  const auto end_time = start + o.time;
  const std::uint64_t sent = o.paged ? send_paged(o, stream, total_bytes, end_time, deadline)
                                     : send_plain(o, stream, total_bytes, end_time, deadline);
  ::shutdown(stream.get(), SHUT_WR);
  ThroughputResult r;
  r.size = o.size;
  r.bytes = sent;
  r.messages = sent / o.size;
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (o.json)
    print_throughput(r, true);
  else
    fmt::print(stderr, "{}: sent {} bytes in {:.3f} s\n", tool_name, sent, r.seconds);
  // Wait for the receiver to close (it has read everything then), bounded.
  char byte = 0;
  while (Clock::now() < deadline && !netio::tools::stop_requested()) {
    const ssize_t n = ::recv(stream.get(), &byte, 1, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) break;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "tcp_throughput: raw TCP one-stream throughput, the reference for netio_throughput/netio_recv. "
      "Start the receiver with --recv, then the sender.",
      tool_name};
  Options o;
  static constexpr netio::bench::RoleNames names{
      "--recv", "Receive: listen on 127.0.0.1, read until the sender closes, report", "Receiver",
      "Sender: the receiver, tcp://HOST:PORT",
      "Print {\"results\":[{size, messages, bytes, seconds, msgs_per_s, gbps}]}"};
  auto* recv = netio::bench::add_role_options(app, o, names);
  netio::tools::add_size_option(app, "-s,--size", o.size,
                                "Message size: the unit of msg/s (both sides must agree) and the default write size");
  auto* write_size =
      netio::tools::add_size_option(app, "--write-size", o.write_size, "Sender: bytes per write() (default: --size)");
  app.add_flag("--paged", o.paged,
               "Sender: copy each message into pages (16 of --page-size) and let a second thread write full pages: "
               "the shape of netio's high-throughput sender, without netio")
      ->excludes(write_size)
      ->excludes(recv);
  netio::tools::add_size_option(app, "--page-size", o.page_size, "Sender with --paged: bytes per page (default 1 MiB)")
      ->needs("--paged");
  auto* n = app.add_option("-n,--messages", o.messages, "Sender: messages to send")->excludes(recv);
  netio::tools::add_duration_option(app, "-t,--time", o.time, "Sender: how long to send (unless -n)")->excludes(n);
  try {
    app.parse(argc, argv);
    netio::bench::require_endpoint(o, names);
    if (o.size == 0) throw CLI::ValidationError("--size", "must be at least 1 byte");
    if (o.page_size == 0) throw CLI::ValidationError("--page-size", "must be at least 1 byte");
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return netio::bench::run_program(tool_name, o, [&] { return o.listener ? run_receiver(o) : run_sender(o); });
}
