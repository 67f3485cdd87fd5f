// SPDX-License-Identifier: MIT
// alternating_pingpong: netio's round trip and raw TCP's, measured in alternating chunks
// between the same two processes, on the same threads and CPUs (tools/bench/README.md).
//
// Two program pairs run back to back (compare.sh's pairs) land in different speed modes of
// a noisy VM often enough to move the median of the pair ratios by 20 %; here the two
// systems take turns every few milliseconds, so each pair of chunks sees the same machine.
// The client holds one raw TCP connection (TCP_NODELAY) and one netio low-latency
// connection (pongs are replies), both to the server. A netio chunk is the ping-pong of
// netio_pingpong: each reply's callback on the client's event-loop thread sends the next
// ping, the server's receive callback replies. A raw chunk runs as tcp_pingpong does, on
// those same event-loop threads: the client asks for it with a netio message, the server's
// callback answers and then echoes the raw connection for the whole chunk, and the
// client's reply callback runs the chunk. So only one system is being served at a time, and
// with --busy-poll the spinning thread on each side is the one that does the work (the
// event loop does not spin beside a raw chunk: it is the thread running it).
//
//   alternating_pingpong --server [--port-file FILE] [--busy-poll | --raw-epoll] [--cpu N] [--timeout D]
//   alternating_pingpong -e tcp://127.0.0.1:PORT [-s SIZE] [-n PER_CHUNK] [-w WARMUP] [--chunks C]
//                        [--busy-poll | --raw-epoll] [--json] [--cpu N] [--timeout D]
#include "bench/common/bench_common.hpp"
#include "common/cli_options.hpp"
#include "common/json_writer.hpp"
#include "common/latency_stats.hpp"
#include "common/termination.hpp"
#include "common/tool_main.hpp"

#include "netio/backend/event_loop.hpp"
#include "netio/context.hpp"
#include "netio/error.hpp"
#include "netio/internal/little_endian.hpp"
#include "netio/low_latency_socket.hpp"

#include <fmt/format.h>

#include <sys/epoll.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <future>
#include <optional>
#include <thread>
#include <vector>

namespace {

using namespace netio::bench;
constexpr const char* tool_name = "alternating_pingpong";

// The client's request for a raw chunk, a netio message: magic, round trips, ping size. The
// server answers it with the same bytes before it starts echoing the raw connection.
constexpr std::array<char, 8> raw_chunk_magic{'N', 'I', 'O', 'A', 'L', 'T', 'R', 'W'};
constexpr std::size_t request_size = 24;

// Little-endian, whatever the hosts are.
void put_u64(std::byte* at, std::uint64_t value) { netio::detail::store_le(at, value); }
std::uint64_t get_u64(const std::byte* at) { return netio::detail::load_le<std::uint64_t>(at); }

std::array<std::byte, request_size> raw_chunk_request(std::uint64_t round_trips, std::uint64_t size) {
  std::array<std::byte, request_size> request{};
  std::memcpy(request.data(), raw_chunk_magic.data(), raw_chunk_magic.size());
  put_u64(request.data() + 8, round_trips);
  put_u64(request.data() + 16, size);
  return request;
}

struct RawChunk {
  std::uint64_t round_trips = 0;
  std::uint64_t size = 0;
};

std::optional<RawChunk> parse_raw_chunk_request(std::span<const std::byte> message) {
  if (message.size() != request_size ||
      std::memcmp(message.data(), raw_chunk_magic.data(), raw_chunk_magic.size()) != 0) {
    return std::nullopt;
  }
  return RawChunk{get_u64(message.data() + 8), get_u64(message.data() + 16)};
}

struct Options : PingPongOptions {
  bool busy_poll = false;
  bool raw_epoll = false;     // sleeping raw TCP waits in epoll_wait(), then reads
  std::uint64_t chunks = 20;  // pairs of chunks: one netio, one raw TCP
};

// Reads the raw connection as tcp_pingpong does, or with --raw-epoll (sleeping only) after
// an epoll_wait() that reports it readable, as an event loop reads: the system call a
// loop pays per wake-up over a blocking recv(), measured without the rest of netio.
class RawReader {
 public:
  RawReader(const Fd& socket, const Options& o, Clock::time_point deadline)
      : socket_(socket), busy_(o.busy_poll), deadline_(deadline) {
    if (!o.raw_epoll || o.busy_poll) return;
    epoll_ = Fd(::epoll_create1(EPOLL_CLOEXEC));
    if (epoll_.get() < 0) throw std::runtime_error(fmt::format("epoll_create1 failed: {}", std::strerror(errno)));
    epoll_event event{};
    event.events = EPOLLIN;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, socket.get(), &event) != 0) {
      throw std::runtime_error(fmt::format("epoll_ctl failed: {}", std::strerror(errno)));
    }
    set_nonblocking(socket);
  }

  std::size_t read_some(char* data, std::size_t length) {
    if (epoll_.get() < 0) return netio::bench::read_some(socket_, data, length, busy_, deadline_);
    for (;;) {
      epoll_event event{};
      const int n = ::epoll_wait(epoll_.get(), &event, 1, 100);
      if (n > 0) return netio::bench::read_some(socket_, data, length, true, deadline_);
      if (n < 0 && errno != EINTR) throw std::runtime_error(fmt::format("epoll_wait failed: {}", std::strerror(errno)));
      if (Clock::now() >= deadline_ || netio::tools::stop_requested()) {
        throw std::runtime_error("--timeout passed (or interrupted) while waiting for the peer");
      }
    }
  }

 private:
  const Fd& socket_;
  const bool busy_;
  const Clock::time_point deadline_;
  Fd epoll_;
};

netio::ContextOptions context_options(const Options& o) {
  netio::ContextOptions options;
  options.busy_poll = o.busy_poll;  // the loop thread inherits --cpu from the main thread
  return options;
}

int run_server(const Options& o) {
  const auto deadline = deadline_after(o.timeout);
  std::uint16_t raw_port = 0;
  const Fd listener = listen_loopback(o.port, raw_port);
  if (!o.port_file.empty()) netio::tools::write_port_file(o.port_file, raw_port);
  fmt::print(stderr, "{}: listening on 127.0.0.1:{} (raw TCP; netio's port follows over it){}\n", tool_name, raw_port,
             o.busy_poll ? " (busy polling)" : "");
  const Fd raw = accept_one(listener, deadline);
  prepare_pingpong_socket(raw, o.busy_poll);
  RawReader reader(raw, o, deadline);

  netio::Context context(context_options(o));
  std::atomic<bool> finished{false};
  std::optional<std::string> failure;  // written on the loop thread before `finished`
  std::vector<char> buffer(1 << 20);
  netio::LowLatencyReceiveOptions receive_options;
  receive_options.max_message_size = 64 * 1024 * 1024;
  receive_options.admission.max_reply_size = receive_options.max_message_size;  // echoes as large as pings
  receive_options.events.on_disconnected = [&](const netio::Peer&, const netio::Error&) {
    finished.store(true, std::memory_order_release);
  };
  netio::LowLatencyReceiveSocket socket(
      context, netio::Endpoint::parse("tcp://127.0.0.1:0"),
      [&](std::span<const std::byte> message, const netio::Peer& peer) {
        if (!peer.try_reply(message)) {
          failure = "no room for a reply: the client does not take them";
          finished.store(true, std::memory_order_release);
          return;
        }
        const auto chunk = parse_raw_chunk_request(message);
        if (!chunk) return;
        // The answer is on its way (a reply on the loop thread goes straight to the socket):
        // echo the raw connection until the chunk's bytes came back, on this thread.
        try {
          for (std::uint64_t left = chunk->round_trips * chunk->size; left > 0;) {
            const std::size_t n = reader.read_some(buffer.data(), std::min<std::uint64_t>(left, buffer.size()));
            if (n == 0) throw std::runtime_error("the client closed the raw connection within a chunk");
            write_all(raw, buffer.data(), n, deadline);
            left -= n;
          }
        } catch (const std::exception& e) {
          failure = e.what();
          finished.store(true, std::memory_order_release);
        }
      },
      receive_options);
  // The netio port goes to the client over the raw connection.
  std::array<std::byte, 8> port{};
  put_u64(port.data(), socket.local_endpoint().port);
  write_all(raw, reinterpret_cast<const char*>(port.data()), port.size(), deadline);
  while (!finished.load(std::memory_order_acquire) && !netio::tools::stop_requested() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  context.loop().run_sync([] {});  // the callbacks' writes are visible from here on
  if (failure) throw std::runtime_error(*failure);
  return 0;
}

// The client's chunks, run on its event-loop thread.
class Alternation {
 public:
  Alternation(const Options& o, const Fd& raw, Clock::time_point deadline)
      : o_(o),
        raw_(raw),
        reader_(raw, o, deadline),
        deadline_(deadline),
        ping_(o.size, std::byte{'p'}),
        pong_(o.size) {}

  void attach(netio::LowLatencySendSocket& socket) { socket_ = &socket; }

  // Loop thread: every reply. During a netio chunk the echo of the last ping; the answer to a
  // raw-chunk request starts the raw chunk.
  void on_reply(std::span<const std::byte> reply) {
    if (raw_requested_) {
      raw_requested_ = false;
      run_raw_chunk();
      return;
    }
    const auto now = Clock::now();
    if (reply.size() != ping_.size()) {
      finish(fmt::format("a pong of {} B for a ping of {} B", reply.size(), ping_.size()));
      return;
    }
    record(now - sent_at_);
    if (sequence_ == o_.warmup + o_.iterations) {
      finish({});
      return;
    }
    send_ping();
  }

  // Main thread: one chunk of either system, started on the loop thread; returns its
  // samples (µs), or throws.
  std::vector<double> run(netio::EventLoop& loop, bool raw) {
    done_ = std::promise<std::optional<std::string>>();
    auto done = done_.get_future();
    samples_.clear();
    sequence_ = 0;
    loop.post([this, raw] {
      raw_requested_ = raw;
      if (raw) {
        if (!socket_->try_send(raw_request_)) finish("no free send buffer for the raw chunk's request");
      } else {
        send_ping();
      }
    });
    if (done.wait_until(deadline_) != std::future_status::ready)
      throw std::runtime_error("--timeout passed within a chunk");
    if (auto error = done.get()) throw std::runtime_error(*error);
    return std::move(samples_);
  }

  void prepare_raw_request() {
    const auto request = raw_chunk_request(o_.warmup + o_.iterations, o_.size);
    raw_request_.assign(request.begin(), request.end());
  }

 private:
  void send_ping() {
    sent_at_ = Clock::now();
    if (!socket_->try_send(ping_)) finish("no free send buffer for the next ping");
  }

  void record(Clock::duration rtt) {
    if (sequence_ >= o_.warmup) samples_.push_back(std::chrono::duration<double, std::micro>(rtt).count());
    ++sequence_;
  }

  void run_raw_chunk() {
    try {
      for (sequence_ = 0; sequence_ < o_.warmup + o_.iterations;) {
        const auto start = Clock::now();
        write_all(raw_, reinterpret_cast<const char*>(ping_.data()), ping_.size(), deadline_);
        for (std::size_t got = 0; got < pong_.size();) {
          const std::size_t n = reader_.read_some(reinterpret_cast<char*>(pong_.data()) + got, pong_.size() - got);
          if (n == 0) throw std::runtime_error("the server closed the raw connection");
          got += n;
        }
        record(Clock::now() - start);
      }
      finish({});
    } catch (const std::exception& e) {
      finish(e.what());
    }
  }

  void finish(std::optional<std::string> error) { done_.set_value(std::move(error)); }

  const Options& o_;
  const Fd& raw_;
  RawReader reader_;
  const Clock::time_point deadline_;
  netio::LowLatencySendSocket* socket_ = nullptr;
  std::vector<std::byte> ping_;
  std::vector<std::byte> pong_;
  std::vector<std::byte> raw_request_;
  // Handed between the main thread (before a chunk's start is posted, after its end) and
  // the loop thread (within the chunk): the post and the promise order them.
  std::promise<std::optional<std::string>> done_;
  std::vector<double> samples_;
  std::uint64_t sequence_ = 0;
  Clock::time_point sent_at_;
  bool raw_requested_ = false;
};

struct RatioSummary {
  double median = 0, min = 0, max = 0, q1 = 0, q3 = 0;
};

RatioSummary summarize(std::vector<double> ratios) {
  std::sort(ratios.begin(), ratios.end());
  using netio::tools::percentile_of_sorted;
  return {percentile_of_sorted(ratios, 50), ratios.front(), ratios.back(), percentile_of_sorted(ratios, 25),
          percentile_of_sorted(ratios, 75)};
}

double median_of(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return netio::tools::percentile_of_sorted(samples, 50);
}

int run_client(const Options& o) {
  const auto deadline = deadline_after(o.timeout);
  const HostPort where = parse_tcp_endpoint(o.endpoint);
  const Fd raw = connect_to(where.host, where.port);
  prepare_pingpong_socket(raw, o.busy_poll);
  std::array<char, 8> port_bytes{};
  for (std::size_t got = 0; got < port_bytes.size();) {
    const std::size_t n = read_some(raw, port_bytes.data() + got, port_bytes.size() - got, o.busy_poll, deadline);
    if (n == 0) throw std::runtime_error(fmt::format("{} closed before naming its netio port", o.endpoint));
    got += n;
  }
  const auto netio_port = get_u64(reinterpret_cast<const std::byte*>(port_bytes.data()));

  netio::Context context(context_options(o));
  Alternation alternation(o, raw, deadline);
  alternation.prepare_raw_request();
  netio::LowLatencySendOptions send_options;
  send_options.buffer_count = 64;  // as netio_pingpong: send completions may lag the replies
  send_options.identity.name = tool_name;
  send_options.replies.max_size = std::max<std::size_t>(o.size, request_size);
  send_options.replies.credits = 16;
  send_options.replies.on_reply = [&alternation](std::span<const std::byte> reply) { alternation.on_reply(reply); };
  netio::LowLatencySendSocket socket(
      context, netio::Endpoint::parse(fmt::format("tcp://{}:{}", where.host, netio_port)), send_options);
  alternation.attach(socket);
  if (!socket.wait_connected(std::chrono::seconds(10))) {
    throw netio::Error(netio::Errc::timeout,
                       fmt::format("no connection to {} within 10 s", socket.remote().to_string()));
  }

  std::vector<double> netio_all, raw_all, ratios;
  for (std::uint64_t pair = 0; pair < o.chunks; ++pair) {
    // Which system goes first alternates, so that neither always follows the other.
    const bool raw_first = pair % 2 == 1;
    auto first = alternation.run(context.loop(), raw_first);
    auto second = alternation.run(context.loop(), !raw_first);
    auto& netio_samples = raw_first ? second : first;
    auto& raw_samples = raw_first ? first : second;
    ratios.push_back(median_of(netio_samples) / median_of(raw_samples));
    netio_all.insert(netio_all.end(), netio_samples.begin(), netio_samples.end());
    raw_all.insert(raw_all.end(), raw_samples.begin(), raw_samples.end());
  }
  socket.close();

  const auto netio_stats = netio::tools::compute_latency_stats(std::move(netio_all));
  const auto raw_stats = netio::tools::compute_latency_stats(std::move(raw_all));
  const auto ratio = summarize(ratios);
  if (o.json) {
    netio::tools::JsonWriter w;
    auto stats = [&w](std::string_view name, const netio::tools::LatencyStats& s) {
      w.key(name).begin_object().field("iterations", s.count).key("rtt_us").begin_object();
      w.field("min", s.min).field("median", s.median).field("mean", s.mean).field("p90", s.p90);
      w.field("p99", s.p99).field("p999", s.p999).field("max", s.max).field("stddev", s.stddev);
      w.end_object().end_object();
    };
    w.begin_object().field("size", o.size).field("chunks", o.chunks).field("per_chunk", o.iterations);
    w.field("busy_poll", o.busy_poll).field("raw_epoll", o.raw_epoll && !o.busy_poll);
    stats("netio", netio_stats);
    stats("tcp", raw_stats);
    w.key("ratio").begin_object().field("median", ratio.median).field("min", ratio.min).field("max", ratio.max);
    w.field("q1", ratio.q1).field("q3", ratio.q3).key("pairs").begin_array();
    for (double r : ratios) w.value(r);
    w.end_array().end_object().end_object();
    fmt::print("{}\n", w.str());
    return 0;
  }
  fmt::print("{}: {} pairs of chunks of {} round trips of {} B{}\n", tool_name, o.chunks, o.iterations, o.size,
             o.busy_poll   ? ", busy polling"
             : o.raw_epoll ? ", raw TCP waiting in epoll_wait()"
                           : "");
  fmt::print("RTT us      {:>10} {:>10} {:>10} {:>10} {:>10}\n", "min", "median", "mean", "p99", "max");
  fmt::print("netio       {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f}\n", netio_stats.min, netio_stats.median,
             netio_stats.mean, netio_stats.p99, netio_stats.max);
  fmt::print("raw TCP     {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f}\n", raw_stats.min, raw_stats.median,
             raw_stats.mean, raw_stats.p99, raw_stats.max);
  fmt::print(
      "netio/raw TCP, median of the chunk pairs' median ratios: {:.3f} (quartiles {:.3f}-{:.3f}, "
      "min-max {:.3f}-{:.3f})\n",
      ratio.median, ratio.q1, ratio.q3, ratio.min, ratio.max);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "alternating_pingpong: netio's round trip (low-latency sockets, pongs as replies) and raw TCP's "
      "(TCP_NODELAY), in alternating chunks between the same two processes; start a server with --server, "
      "then the client.",
      tool_name};
  Options o;
  o.iterations = 500;
  o.warmup = 50;
  static constexpr RoleNames names{
      "--server", "Answer one client: netio pings as replies, raw TCP chunks as an echo", "Server",
      "Client: the server's raw TCP port, tcp://HOST:PORT (the server names its netio port over it)",
      "Client: print {\"size\", \"chunks\", \"per_chunk\", \"busy_poll\", \"raw_epoll\", \"netio\"|\"tcp\": "
      "{\"iterations\", "
      "\"rtt_us\": {min, median, mean, p90, p99, p999, max, stddev}}, \"ratio\": {median, min, max, q1, q3, "
      "pairs}}: ratio is netio's chunk median over the raw chunk's beside it"};
  auto* server = add_pingpong_options(app, o, names, "Client: ping size");
  app.get_option("-n")->description("Client: measured round trips per chunk");
  app.get_option("-w")->description("Client: round trips before measuring, in every chunk");
  app.add_option("--chunks", o.chunks, "Client: pairs of chunks (one netio, one raw TCP)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber)
      ->excludes(server);
  app.add_flag("--busy-poll", o.busy_poll,
               "Spin instead of sleeping: netio's event loops busy-poll, raw TCP spins on non-blocking recv() (both "
               "sides must say it)");
  app.add_flag("--raw-epoll", o.raw_epoll,
               "Without --busy-poll: raw TCP waits in epoll_wait() before each recv(), as an event loop does (both "
               "sides must say it)")
      ->excludes(app.get_option("--busy-poll"));
  try {
    app.parse(argc, argv);
    check_pingpong_options(o, names);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return run_program(tool_name, o, [&] { return o.listener ? run_server(o) : run_client(o); });
}
