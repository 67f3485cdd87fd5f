// SPDX-License-Identifier: MIT
// InfluxPusher (netio/metrics/influx_pusher.hpp): a thread that collects at an interval and
// sends the lines over UDP (datagrams of whole lines) or as an HTTP POST (one blocking
// request per push, bounded by a timeout; InfluxDB answers 204).
#include "netio/metrics/influx_pusher.hpp"

#include "host_port.hpp"
#include "netio/context.hpp"
#include "netio/error.hpp"
#include "netio/log.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

namespace netio {
namespace {

constexpr std::size_t max_datagram = 1400;  // within an Ethernet MTU, whole lines only
constexpr int http_timeout_ms = 2000;

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

/// A connected socket to the first address that takes it; -1 with `why` set otherwise.
int connect_first(const addrinfo* list, std::string& why) {
  for (const addrinfo* a = list; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) return fd;
    why = std::strerror(errno);
    ::close(fd);
  }
  return -1;
}

bool wait_for(int fd, short events) {
  pollfd p{fd, events, 0};
  return ::poll(&p, 1, http_timeout_ms) == 1;
}

}  // namespace

struct InfluxPusher::Impl {
  MetricsRegistry registry;
  std::string url;
  bool http = false;
  metrics_detail::HostPort address;
  std::string path;  // HTTP: the request target
  metrics_detail::Addresses addresses;
  int udp = -1;
  std::chrono::milliseconds interval;
  std::mutex mutex;  // one push at a time; guards stopping and failing
  std::condition_variable wake;
  bool stopping = false;
  bool failing = false;  // the last push failed: log again only once it worked
  std::atomic<std::uint64_t> pushes{0};
  std::thread thread;

  ~Impl() {
    if (udp >= 0) ::close(udp);
  }

  bool push() {
    std::lock_guard lock(mutex);
    const std::string lines = to_influx_lines(registry.collect(), std::chrono::system_clock::now());
    std::string why;
    const bool ok = lines.empty() || (http ? post(lines, why) : send_datagrams(lines, why));
    if (ok) {
      pushes.fetch_add(1, std::memory_order_relaxed);
      if (std::exchange(failing, false)) log(LogLevel::info, "influx push to {}: working again", url);
    } else if (!std::exchange(failing, true)) {
      log(LogLevel::warn, "influx push to {} failed: {} (logged once until it works again)", url, why);
    }
    return ok;
  }

  bool send_datagrams(const std::string& lines, std::string& why) {
    std::size_t begin = 0;
    bool ok = true;
    while (begin < lines.size()) {
      // Whole lines, up to max_datagram bytes (a longer line goes alone).
      std::size_t end = lines.find('\n', begin) + 1;
      for (std::size_t next; end < lines.size() && (next = lines.find('\n', end) + 1) - begin <= max_datagram;)
        end = next;
      if (::send(udp, lines.data() + begin, end - begin, MSG_NOSIGNAL) < 0) {
        why = std::strerror(errno);  // e.g. ECONNREFUSED from an earlier datagram's ICMP
        ok = false;
      }
      begin = end;
    }
    return ok;
  }

  bool post(const std::string& lines, std::string& why) {
    Fd fd(connect_first(addresses.get(), why));
    if (fd.fd < 0) return false;
    const std::string request = fmt::format(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n"
        "Connection: close\r\n\r\n{}",
        path, address.to_string(), lines.size(), lines);
    for (std::size_t sent = 0; sent < request.size();) {
      if (!wait_for(fd.fd, POLLOUT)) return why = "timed out sending", false;
      const ssize_t n = ::send(fd.fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return why = std::strerror(errno), false;
      sent += static_cast<std::size_t>(n);
    }
    char status[64] = {};
    if (!wait_for(fd.fd, POLLIN)) return why = "no answer", false;
    const ssize_t n = ::recv(fd.fd, status, sizeof status - 1, 0);
    // "HTTP/1.1 204 No Content": any 2xx is fine.
    if (n < 12 || std::strncmp(status, "HTTP/1.", 7) != 0 || status[9] != '2') {
      why = fmt::format("answer '{}'", std::string_view(status, n > 0 ? std::strcspn(status, "\r\n") : 0));
      return false;
    }
    return true;
  }

  void run() {
    std::unique_lock lock(mutex);
    while (!stopping) {
      if (wake.wait_for(lock, interval, [this] { return stopping; })) break;
      lock.unlock();
      push();
      lock.lock();
    }
  }
};

InfluxPusher::InfluxPusher(Context& context, InfluxPushOptions options)
    : InfluxPusher(context.metrics(), std::move(options)) {}

InfluxPusher::InfluxPusher(MetricsRegistry registry, InfluxPushOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& impl = *impl_;
  impl.registry = std::move(registry);
  impl.url = options.url;
  impl.interval = options.interval;
  if (options.interval <= std::chrono::milliseconds::zero())
    throw Error(Errc::invalid_option, fmt::format("influx push to {}: the interval must be positive", options.url));
  std::string_view rest = options.url;
  if (rest.starts_with("udp://")) {
    rest.remove_prefix(6);
  } else if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
    impl.http = true;
  } else {
    throw Error(Errc::invalid_option,
                fmt::format("influx URL '{}': expected udp://HOST:PORT or http://HOST:PORT[/PATH?QUERY]", options.url));
  }
  const auto slash = rest.find('/');
  impl.path = slash == std::string_view::npos ? "/write" : std::string(rest.substr(slash));
  impl.address = metrics_detail::parse_host_port(rest.substr(0, slash), "influx URL: address");
  impl.addresses = metrics_detail::resolve(impl.address, impl.http ? SOCK_STREAM : SOCK_DGRAM, "influx URL: address");
  if (!impl.http) {
    std::string why;
    impl.udp = connect_first(impl.addresses.get(), why);
    if (impl.udp < 0)
      throw Error(Errc::backend_error, fmt::format("influx push to {}: cannot open a UDP socket: {}", impl.url, why));
  }
  impl.thread = std::thread([&impl] { impl.run(); });
}

InfluxPusher::~InfluxPusher() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  impl_->thread.join();
  impl_->push();  // the final counts of a short run
}

bool InfluxPusher::push_now() { return impl_->push(); }
std::uint64_t InfluxPusher::pushes() const noexcept { return impl_->pushes.load(std::memory_order_relaxed); }

}  // namespace netio
