// SPDX-License-Identifier: MIT
// netio::metrics over real loopback connections: the server Prometheus scrapes
// (only GET /metrics, bounded, surviving junk, slow and 1,000 simultaneous clients while a
// stream runs) and the InfluxDB push over UDP and HTTP, every line checked against the
// line protocol's grammar.
#include "netio/metrics/metrics_server.hpp"
#include "netio/metrics/influx_pusher.hpp"

#include "netio/context.hpp"
#include "netio/error.hpp"
#include "netio/high_throughput_socket.hpp"
#include "support/invalid_option.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

using namespace std::chrono_literals;

namespace {

struct Socket {
  int fd = -1;
  explicit Socket(int type = SOCK_STREAM) : fd(::socket(AF_INET, type | SOCK_CLOEXEC, 0)) {}
  ~Socket() {
    if (fd >= 0) ::close(fd);
  }
  Socket(Socket&& other) noexcept : fd(std::exchange(other.fd, -1)) {}
  Socket(const Socket&) = delete;
};

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

Socket connected(std::uint16_t port) {
  Socket s;
  const sockaddr_in a = loopback(port);
  REQUIRE(::connect(s.fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0);
  return s;
}

// Everything the peer sends until it closes, or until `timeout` of silence.
std::string read_all(int fd, std::chrono::milliseconds timeout = 5s) {
  std::string out;
  char buffer[65536];
  pollfd p{fd, POLLIN, 0};
  while (::poll(&p, 1, static_cast<int>(timeout.count())) == 1) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return out;
}

std::string http_exchange(std::uint16_t port, std::string_view request) {
  Socket s = connected(port);
  ::send(s.fd, request.data(), request.size(), MSG_NOSIGNAL);
  return read_all(s.fd);
}

std::string get(std::uint16_t port, std::string_view method, std::string_view path) {
  return http_exchange(port, std::string(method) + " " + std::string(path) +
                                 " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
}

bool status_is(const std::string& response, std::string_view code) {
  return response.rfind("HTTP/1.1 " + std::string(code), 0) == 0;
}

// A high-throughput stream of 64 B messages from another thread, for as long as it lives.
struct Stream {
  netio::HighThroughputReceiveSocket receiver;
  netio::HighThroughputSendSocket sender;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> received{0};
  std::future<void> producer, consumer;

  explicit Stream(netio::Context& context)
      : receiver(context, netio::Endpoint::parse("tcp://127.0.0.1:0")), sender(context, receiver.local_endpoint()) {
    producer = std::async(std::launch::async, [this] {
      const std::vector<std::byte> message(64);
      while (!stop) sender.send(message);
      sender.flush();
    });
    consumer = std::async(std::launch::async, [this] {
      while (!stop) received += receiver.recv_each(1024, 10ms, [](std::span<const std::byte>) { return true; });
    });
  }
  ~Stream() {
    stop = true;
    producer.get();
    consumer.get();
  }
};

// InfluxDB line protocol: measurement[,tag=value...] value=FLOAT TIMESTAMP, with the escapes
// of to_influx_lines() (commas and spaces in the measurement; also '=' and '\' in tags).
const std::regex influx_line(R"(^(?:[^,\s\\]|\\[, \\])+(?:,(?:[^,=\s\\]|\\[,= \\])+=(?:[^,=\s\\]|\\[,= \\])+)* )"
                             R"(value=-?[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)? -?[0-9]+$)");

void check_influx_lines(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  std::size_t count = 0;
  while (std::getline(lines, line)) {
    INFO("line: " << line);
    CHECK(std::regex_match(line, influx_line));
    ++count;
  }
  CHECK(count > 0);
}

// Samples with everything a peer could put in a label value.
netio::MetricsRegistry::Registration add_hostile_samples(netio::MetricsRegistry& registry) {
  return registry.add([](std::vector<netio::Metric>& out) {
    for (const char* value : {"plain", "a,b=c d", "back\\slash", "new\nline", "quote\"", ""})
      out.push_back({"netio_test_total", netio::MetricType::counter, "", {{"peer", value}}, 12345678901.0});
    out.push_back({"netio_test_ratio", netio::MetricType::gauge, "", {}, 0.125});
  });
}

}  // namespace

TEST_CASE("metrics server: GET /metrics answers with every socket, anything else gets 404", "[metrics]") {
  netio::Context context(netio::test::context_options());
  netio::HighThroughputReceiveSocket receiver(context, netio::Endpoint::parse("tcp://127.0.0.1:0"));
  netio::MetricsServer server(context, {.address = "127.0.0.1:0"});
  REQUIRE(server.port() != 0);
  CHECK(server.url() == "http://127.0.0.1:" + std::to_string(server.port()) + "/metrics");

  const std::string response = get(server.port(), "GET", "/metrics");
  CHECK(status_is(response, "200"));
  CHECK(response.find("Content-Type: text/plain; version=0.0.4") != std::string::npos);
  CHECK(response.find("netio_socket_messages_total{endpoint=\"" + receiver.local_endpoint().to_string() +
                      "\",socket=\"high_throughput_receive\"} 0") != std::string::npos);
  for (auto [method, path] : {std::pair{"GET", "/"},
                              {"GET", "/metrics/x"},
                              {"GET", "/metricsx"},
                              {"HEAD", "/metrics"},
                              {"DELETE", "/metrics"}}) {
    INFO(method << " " << path);
    CHECK(status_is(get(server.port(), method, path), "404"));
  }
  CHECK(status_is(http_exchange(server.port(),
                                "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                                "Connection: close\r\n\r\nhello"),
                  "404"));
  CHECK(server.scrapes() == 1);
  CHECK(server.rejected() == 6);
}

TEST_CASE("metrics server: binds loopback by default, refuses bad addresses naming them", "[metrics]") {
  CHECK(netio::MetricsServerOptions{}.address == "127.0.0.1:9464");
  netio::MetricsRegistry registry;
  for (const char* bad : {"9464", "127.0.0.1:", "127.0.0.1:70000", "::1:9464", ":9464", "127.0.0.1:9x"}) {
    netio::test::check_invalid_option([&] { netio::MetricsServer server(registry, {.address = bad}); },
                                      {"metrics server", bad});
  }
  netio::MetricsServer first(registry, {.address = "127.0.0.1:0"});
  const std::string taken = "127.0.0.1:" + std::to_string(first.port());
  try {
    netio::MetricsServer second(registry, {.address = taken});
    FAIL("no exception");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::backend_error);
    CHECK_THAT(e.what(), Catch::Contains(taken));
  }
}

TEST_CASE("metrics server: junk, oversized, slow and 1,000 simultaneous clients while a stream runs", "[metrics]") {
  netio::Context context(netio::test::context_options());
  Stream stream(context);
  netio::MetricsServer server(
      context, {.address = "127.0.0.1:0", .max_connections = 64, .max_request_bytes = 4096, .connection_timeout = 1s});
  const std::uint16_t port = server.port();
  REQUIRE(netio::test::eventually([&] { return stream.received > 1000; }));

  // Junk: random bytes, a line without end, binary zeros, a bare CRLF CRLF.
  std::mt19937 random(52);
  std::vector<std::string> junk = {"\r\n\r\n",    std::string(3000, 'A') + "\r\n\r\n", std::string(100, '\0'),
                                   "GET\r\n\r\n", "GET /metrics HTTP/9.9\r\n\r\n",     "GET /metrics\r\n\r\n"};
  for (int i = 0; i < 20; ++i) {
    std::string bytes(1 + random() % 600, '\0');
    for (char& c : bytes) c = static_cast<char>(random());
    junk.push_back(bytes + "\r\n\r\n");
  }
  for (const std::string& request : junk) CHECK_FALSE(status_is(http_exchange(port, request), "200"));
  // A request larger than max_request_bytes.
  const std::string oversized =
      http_exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Junk: " + std::string(20000, 'x') + "\r\n\r\n");
  CHECK_FALSE(status_is(oversized, "200"));

  // A slow client: half a request line, then silence; dropped after connection_timeout.
  Socket slow = connected(port);
  ::send(slow.fd, "GET /met", 8, MSG_NOSIGNAL);
  CHECK(status_is(get(port, "GET", "/metrics"), "200"));  // served meanwhile
  const auto silent_since = std::chrono::steady_clock::now();
  CHECK(read_all(slow.fd, 4s).empty());  // closed without an answer
  CHECK(std::chrono::steady_clock::now() - silent_since < 3500ms);

  // 1,000 clients at once, connecting and saying nothing: those beyond max_connections are
  // closed when accepted, the rest when they time out; the stream goes on meanwhile.
  const std::uint64_t before = stream.received;
  std::vector<Socket> crowd;
  for (int i = 0; i < 1000; ++i) {
    Socket s;
    REQUIRE(s.fd >= 0);
    ::fcntl(s.fd, F_SETFL, O_NONBLOCK);
    const sockaddr_in a = loopback(port);
    (void)::connect(s.fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
    crowd.push_back(std::move(s));
  }
  std::this_thread::sleep_for(200ms);
  crowd.clear();
  CHECK(stream.received > before);  // the data path kept going
  CHECK(netio::test::eventually([&] { return status_is(get(port, "GET", "/metrics"), "200"); }, 5s));
  const std::uint64_t after = stream.received;
  CHECK(netio::test::eventually([&] { return stream.received > after; }));
}

TEST_CASE("influx push: UDP datagrams carry whole lines of the protocol's grammar", "[metrics]") {
  Socket udp(SOCK_DGRAM);
  sockaddr_in a = loopback(0);
  REQUIRE(::bind(udp.fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0);
  socklen_t length = sizeof a;
  ::getsockname(udp.fd, reinterpret_cast<sockaddr*>(&a), &length);
  netio::MetricsRegistry registry;
  // Enough samples for several datagrams: each carries whole lines, at most 1400 bytes.
  auto many = registry.add([](std::vector<netio::Metric>& out) {
    for (int i = 0; i < 100; ++i)
      out.push_back({"netio_many", netio::MetricType::gauge, "", {{"node", std::to_string(i)}}, double(i)});
  });
  auto hostile = add_hostile_samples(registry);
  std::string received;
  {
    netio::InfluxPusher pusher(registry,
                               {.url = "udp://127.0.0.1:" + std::to_string(ntohs(a.sin_port)), .interval = 50ms});
    char datagram[65536];
    pollfd p{udp.fd, POLLIN, 0};
    while (::poll(&p, 1, 2000) == 1) {
      const ssize_t n = ::recv(udp.fd, datagram, sizeof datagram, 0);
      REQUIRE(n > 0);
      CHECK(n <= 1400);
      CHECK(datagram[n - 1] == '\n');
      received.append(datagram, static_cast<std::size_t>(n));
      if (received.find("netio_many,node=99 ") != std::string::npos) break;
    }
    // The pusher counts a push once its last datagram is out: this thread may read that
    // datagram first (seen under TSan in CI: 0 pushes).
    CHECK(netio::test::eventually([&] { return pusher.pushes() >= 1; }));
  }
  CHECK(received.find("netio_test_total,peer=a\\,b\\=c\\ d value=12345678901 ") != std::string::npos);
  check_influx_lines(received);
}

TEST_CASE("influx push: an HTTP POST to /write carrying the lines, a failing server is reported", "[metrics]") {
  Socket listener;
  sockaddr_in a = loopback(0);
  REQUIRE(::bind(listener.fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(listener.fd, 4) == 0);
  socklen_t length = sizeof a;
  ::getsockname(listener.fd, reinterpret_cast<sockaddr*>(&a), &length);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/write?db=netio";
  // A one-request InfluxDB: reads the request, answers `status`.
  auto serve_one = [&](std::string status) {
    return std::async(std::launch::async, [&listener, status] {
      Socket client;
      ::close(client.fd);
      client.fd = ::accept(listener.fd, nullptr, nullptr);
      std::string request;
      char buffer[65536];
      while (true) {
        const ssize_t n = ::recv(client.fd, buffer, sizeof buffer, 0);
        if (n <= 0) break;
        request.append(buffer, static_cast<std::size_t>(n));
        const auto end = request.find("\r\n\r\n");
        if (end == std::string::npos) continue;
        const auto at = request.find("Content-Length: ");
        if (at != std::string::npos && request.size() >= end + 4 + std::stoul(request.substr(at + 16))) break;
      }
      const std::string answer = "HTTP/1.1 " + status + "\r\nContent-Length: 0\r\n\r\n";
      ::send(client.fd, answer.data(), answer.size(), MSG_NOSIGNAL);
      return request;
    });
  };
  netio::MetricsRegistry registry;
  auto hostile = add_hostile_samples(registry);
  std::future<std::string> last;
  {
    netio::InfluxPusher pusher(registry, {.url = url, .interval = 1h});
    auto request = serve_one("204 No Content");
    CHECK(pusher.push_now());
    const std::string text = request.get();
    CHECK(text.rfind("POST /write?db=netio HTTP/1.1\r\n", 0) == 0);
    check_influx_lines(text.substr(text.find("\r\n\r\n") + 4));
    auto refused = serve_one("401 Unauthorized");
    CHECK_FALSE(pusher.push_now());
    refused.get();
    CHECK(pusher.pushes() == 1);
    last = serve_one("204 No Content");
  }
  CHECK(last.get().find("netio_test_ratio value=0.125 ") != std::string::npos);  // the destructor's last push
}

TEST_CASE("influx push: bad URLs are refused naming them", "[metrics]") {
  netio::MetricsRegistry registry;
  for (const char* bad : {"tcp://127.0.0.1:8089", "udp://127.0.0.1", "127.0.0.1:8089", "http://[::1:80/write"}) {
    netio::test::check_invalid_option([&] { netio::InfluxPusher pusher(registry, {.url = bad}); }, {"influx"});
  }
}
