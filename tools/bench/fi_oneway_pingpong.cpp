// SPDX-License-Identifier: MIT
// fi_oneway_pingpong: round-trip time straight over libfabric's tcp provider (FI_EP_MSG),
// without netio (tools/bench/README.md). Every queue has no wait object and both sides spin
// on fi_cq_read, as libfabric's own `fi_pingpong -p tcp -e msg` does. By default one
// connection, the server echoing on it (about what fi_pingpong measures: it validates the
// program). --one-way: the client makes two connections, pings travel on the first, pongs
// come back on the second, each carrying data one way only, each endpoint with its own CQ
// and EQ, and each side polling both of its CQs on every round: the shape of netio's send
// and receive sockets, so that the cost of the shape itself shows.
//
// The client's connection data (fi_connect) says which connection is which and the message
// size, so that the server sizes its buffers and refuses a client of the other shape.
//
//   fi_oneway_pingpong --server [--port N] [--port-file FILE] [--one-way] [--cpu N] [--timeout D]
//   fi_oneway_pingpong -e tcp://HOST:PORT [-s SIZE] [-n ITERATIONS] [-w WARMUP] [--one-way] [--json] [--cpu N]
//                      [--timeout D]
#include "bench/common/bench_common.hpp"
#include "common/cli_options.hpp"
#include "common/termination.hpp"
#include "common/tool_main.hpp"

#include <fmt/format.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace netio::bench;
constexpr const char* tool_name = "fi_oneway_pingpong";
constexpr std::uint32_t api_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
constexpr std::uint64_t check_every = 4096;                 // spin rounds between deadline / shutdown checks
constexpr std::uint64_t max_size = std::uint64_t{1} << 30;  // what a server allocates for a client at most

struct Options : netio::bench::PingPongOptions {
  bool one_way = false;  // pings on one connection, pongs on a second one
};

// --- fids closed on destruction --------------------------------------------------------

struct FidCloser {
  template <typename T>
  void operator()(T* object) const noexcept {
    ::fi_close(&object->fid);
  }
};
template <typename T>
using FidPtr = std::unique_ptr<T, FidCloser>;

struct InfoFreer {
  void operator()(fi_info* info) const noexcept { ::fi_freeinfo(info); }
};
using InfoPtr = std::unique_ptr<fi_info, InfoFreer>;

// The run is over: --timeout passed or Ctrl-C.
struct Expired : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The peer closed its connection (FI_SHUTDOWN, or its posted operations flushed).
struct PeerClosed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string fi_text(ssize_t rc) { return ::fi_strerror(static_cast<int>(rc < 0 ? -rc : rc)); }

void check(ssize_t rc, const std::string& where, const char* call) {
  if (rc != 0) throw std::runtime_error(fmt::format("{}: {} failed: {}", where, call, fi_text(rc)));
}

void check_deadline(Clock::time_point deadline, const std::string& where) {
  if (Clock::now() >= deadline || netio::tools::stop_requested()) {
    throw Expired(fmt::format("{}: --timeout passed (or interrupted)", where));
  }
}

// "fi_strerror text (provider's text)" of an error entry; no provider text for prov_errno 0.
std::string describe_error(int error, int prov_errno, const char* provider_text) {
  std::string text = ::fi_strerror(error);
  if (prov_errno != 0 && provider_text != nullptr && *provider_text != '\0' && text != provider_text) {
    text += fmt::format(" ({})", provider_text);
  }
  return text;
}

// --- connection data ---------------------------------------------------------------------

enum class Role : std::uint32_t { two_way = 0, pings = 1, pongs = 2 };

const char* role_name(Role role) {
  switch (role) {
    case Role::two_way: return "connection";
    case Role::pings: return "ping connection";
    case Role::pongs: return "pong connection";
  }
  return "connection";
}

struct Hello {
  std::array<char, 4> magic{'F', 'I', 'P', 'P'};
  Role role = Role::two_way;
  std::uint64_t size = 0;
};

std::optional<Hello> parse_hello(const std::vector<std::byte>& data) {
  Hello hello;
  if (data.size() < sizeof hello) return std::nullopt;
  std::memcpy(&hello, data.data(), sizeof hello);
  if (hello.magic != Hello{}.magic) return std::nullopt;
  return hello;
}

// --- fabric, domain, queues, endpoints ---------------------------------------------------

struct Fabric {
  InfoPtr info;  // declared first: freed last
  FidPtr<fid_fabric> fabric;
  FidPtr<fid_domain> domain;
};

// The tcp provider, FI_EP_MSG, at node:service (listening: the source address).
Fabric open_fabric(const std::string& node, std::uint16_t port, bool listen, const std::string& where) {
  InfoPtr hints(::fi_allocinfo());
  if (!hints) throw std::bad_alloc();
  hints->caps = FI_MSG;
  hints->mode = FI_CONTEXT;  // every operation carries its own fi_context
  hints->addr_format = FI_SOCKADDR_IN;
  hints->ep_attr->type = FI_EP_MSG;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->fabric_attr->prov_name = ::strdup("tcp");  // fi_freeinfo frees it
  if (hints->fabric_attr->prov_name == nullptr) throw std::bad_alloc();
  fi_info* found = nullptr;
  const int rc = ::fi_getinfo(api_version, node.c_str(), std::to_string(port).c_str(), listen ? FI_SOURCE : 0,
                              hints.get(), &found);
  Fabric f;
  f.info.reset(found);
  if (rc != 0 || !f.info) {
    throw std::runtime_error(fmt::format("{}: fi_getinfo (provider tcp, FI_EP_MSG, FI_MSG) failed: {}", where,
                                         rc != 0 ? fi_text(rc) : std::string("no match")));
  }
  fid_fabric* fabric = nullptr;
  check(::fi_fabric(f.info->fabric_attr, &fabric, nullptr), where, "fi_fabric");
  f.fabric.reset(fabric);
  fid_domain* domain = nullptr;
  check(::fi_domain(f.fabric.get(), f.info.get(), &domain, nullptr), where, "fi_domain");
  f.domain.reset(domain);
  return f;
}

FidPtr<fid_eq> open_event_queue(fid_fabric* fabric, const std::string& where) {
  fi_eq_attr attr{};
  attr.size = 16;
  attr.wait_obj = FI_WAIT_NONE;
  fid_eq* eq = nullptr;
  check(::fi_eq_open(fabric, &attr, &eq, nullptr), where, "fi_eq_open");
  return FidPtr<fid_eq>(eq);
}

// An active endpoint with its own event and completion queues, enabled.
struct Connection {
  std::string name;  // for messages
  FidPtr<fid_eq> eq;
  FidPtr<fid_cq> cq;
  FidPtr<fid_ep> ep;  // declared last: closed first, before the queues it is bound to
};

// fi_endpoint failed: a connection request's handle is still ours to reject.
struct NoEndpoint : std::runtime_error {
  using std::runtime_error::runtime_error;
};

Connection open_connection(const Fabric& f, fi_info& info, std::string name) {
  Connection c;
  c.name = std::move(name);
  fid_ep* ep = nullptr;
  if (const int rc = ::fi_endpoint(f.domain.get(), &info, &ep, nullptr); rc != 0) {
    throw NoEndpoint(fmt::format("{}: fi_endpoint failed: {}", c.name, fi_text(rc)));
  }
  c.ep.reset(ep);
  c.eq = open_event_queue(f.fabric.get(), c.name);
  fi_cq_attr attr{};
  attr.size = info.tx_attr->size + info.rx_attr->size;
  attr.format = FI_CQ_FORMAT_CONTEXT;
  attr.wait_obj = FI_WAIT_NONE;
  fid_cq* cq = nullptr;
  check(::fi_cq_open(f.domain.get(), &attr, &cq, nullptr), c.name, "fi_cq_open");
  c.cq.reset(cq);
  check(::fi_ep_bind(c.ep.get(), &c.eq->fid, 0), c.name, "fi_ep_bind (EQ)");
  check(::fi_ep_bind(c.ep.get(), &c.cq->fid, FI_TRANSMIT | FI_RECV), c.name, "fi_ep_bind (CQ)");
  check(::fi_enable(c.ep.get()), c.name, "fi_enable");
  return c;
}

// The ping/pong buffers, registered when the provider asks for FI_MR_LOCAL.
struct Buffers {
  std::vector<char> bytes;
  FidPtr<fid_mr> mr;  // declared after the bytes: closed before they go
  void* desc = nullptr;
};

void make_buffers(Buffers& b, const Fabric& f, std::size_t length, char fill, const std::string& where) {
  b.bytes.assign(length, fill);
  if ((f.info->domain_attr->mr_mode & FI_MR_LOCAL) == 0) return;
  fid_mr* mr = nullptr;
  check(::fi_mr_reg(f.domain.get(), b.bytes.data(), b.bytes.size(), FI_SEND | FI_RECV, 0, 0, 0, &mr, nullptr), where,
        "fi_mr_reg");
  b.mr.reset(mr);
  b.desc = ::fi_mr_desc(mr);
}

// --- event queues ------------------------------------------------------------------------

struct CmEvent {
  std::uint32_t event = 0;
  InfoPtr info;  // FI_CONNREQ
  std::vector<std::byte> data;
};

class EventReader {
 public:
  // The next event, if any. An error entry throws, with the provider's text (and the reason
  // of a rejection).
  std::optional<CmEvent> read(fid_eq* eq, const std::string& where) {
    std::uint32_t event = 0;
    const ssize_t n = ::fi_eq_read(eq, &event, storage_.data(), storage_.size(), 0);
    if (n == -FI_EAGAIN) return std::nullopt;
    if (n == -FI_EAVAIL) {
      fi_eq_err_entry error{};
      error.err_data = error_data_.data();
      error.err_data_size = error_data_.size();
      const ssize_t got = ::fi_eq_readerr(eq, &error, 0);
      if (got == -FI_EAGAIN) return std::nullopt;
      if (got < 0) throw std::runtime_error(fmt::format("{}: fi_eq_readerr failed: {}", where, fi_text(got)));
      std::array<char, 256> text{};
      std::string message =
          fmt::format("{}: connection error: {}", where,
                      describe_error(error.err, error.prov_errno,
                                     ::fi_eq_strerror(eq, error.prov_errno, error.err_data, text.data(), text.size())));
      if (error.err == FI_ECONNREFUSED && error.err_data != nullptr && error.err_data_size > 0) {
        const auto* reason = static_cast<const char*>(error.err_data);
        message += fmt::format(": {}", std::string(reason, ::strnlen(reason, error.err_data_size)));
      }
      throw std::runtime_error(message);
    }
    if (n < 0) throw std::runtime_error(fmt::format("{}: fi_eq_read failed: {}", where, fi_text(n)));
    CmEvent result;
    result.event = event;
    if (event == FI_CONNREQ || event == FI_CONNECTED || event == FI_SHUTDOWN) {
      fi_eq_cm_entry entry{};
      std::memcpy(&entry, storage_.data(), sizeof entry);
      result.info.reset(entry.info);
      const auto length = static_cast<std::size_t>(n);
      if (length > sizeof entry) {
        result.data.assign(storage_.begin() + static_cast<std::ptrdiff_t>(sizeof entry),
                           storage_.begin() + static_cast<std::ptrdiff_t>(length));
      }
    }
    return result;
  }

  // Connection set-up: polls until `wanted` arrives (other events but FI_SHUTDOWN are
  // skipped), bounded by the deadline.
  CmEvent wait(fid_eq* eq, std::uint32_t wanted, const std::string& where, Clock::time_point deadline) {
    for (;;) {
      if (auto event = read(eq, where)) {
        if (event->event == wanted) return std::move(*event);
        if (event->event == FI_SHUTDOWN) throw PeerClosed(fmt::format("{}: the peer closed the connection", where));
        continue;
      }
      check_deadline(deadline, where);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  // Data path, now and then: throws PeerClosed once the peer has closed the connection.
  void check_shutdown(fid_eq* eq, const std::string& where) {
    while (auto event = read(eq, where)) {
      if (event->event == FI_SHUTDOWN) throw PeerClosed(fmt::format("{}: the peer closed the connection", where));
    }
  }

 private:
  alignas(fi_eq_cm_entry) std::array<std::byte, sizeof(fi_eq_cm_entry) + 256> storage_{};
  std::array<char, 256> error_data_{};
};

// --- the data path -----------------------------------------------------------------------

// The connections one side polls: every CQ on every round (as netio's loop does), every EQ
// every check_every rounds, with the deadline.
class Poller {
 public:
  Poller(std::vector<Connection*> connections, Clock::time_point deadline)
      : connections_(std::move(connections)), deadline_(deadline) {}

  // One round: reads every CQ; calls on_completion(op_context) for each completion.
  template <typename F>
  void poll(F&& on_completion) {
    for (Connection* c : connections_) {
      std::array<fi_cq_entry, 8> entries;
      const ssize_t n = ::fi_cq_read(c->cq.get(), entries.data(), entries.size());
      if (n > 0) {
        for (ssize_t i = 0; i < n; ++i) on_completion(entries[static_cast<std::size_t>(i)].op_context);
      } else if (n != -FI_EAGAIN) {
        fail(*c, n);
      }
    }
    if ((++rounds_ % check_every) == 0) {
      check_deadline(deadline_, connections_.front()->name);
      for (Connection* c : connections_) events_.check_shutdown(c->eq.get(), c->name);
    }
  }

  // Posts with `call` (fi_send, fi_recv), polling while the provider says FI_EAGAIN.
  template <typename Call, typename F>
  void post(const Connection& c, const char* name, Call&& call, F&& on_completion) {
    for (;;) {
      const ssize_t rc = call();
      if (rc == 0) return;
      if (rc != -FI_EAGAIN) check(rc, c.name, name);
      poll(on_completion);
    }
  }

 private:
  [[noreturn]] void fail(const Connection& c, ssize_t rc) {
    if (rc != -FI_EAVAIL) throw std::runtime_error(fmt::format("{}: fi_cq_read failed: {}", c.name, fi_text(rc)));
    fi_cq_err_entry error{};
    const ssize_t got = ::fi_cq_readerr(c.cq.get(), &error, 0);
    if (got < 0) throw std::runtime_error(fmt::format("{}: fi_cq_readerr failed: {}", c.name, fi_text(got)));
    // Operations flushed as the connection went down: the peer closed it.
    if (error.err == FI_ECANCELED) throw PeerClosed(fmt::format("{}: the peer closed the connection", c.name));
    std::array<char, 256> text{};
    throw std::runtime_error(fmt::format(
        "{}: completion error: {}", c.name,
        describe_error(error.err, error.prov_errno,
                       ::fi_cq_strerror(c.cq.get(), error.prov_errno, error.err_data, text.data(), text.size()))));
  }

  std::vector<Connection*> connections_;
  Clock::time_point deadline_;
  std::uint64_t rounds_ = 0;
  EventReader events_;
};

// --- server --------------------------------------------------------------------------------

struct Listener {
  Fabric fabric;
  FidPtr<fid_eq> eq;
  FidPtr<fid_pep> pep;  // declared last: closed first
  std::string name;
};

// A connection request: its info (ours to free) and what the client said.
struct Request {
  InfoPtr info;
  std::optional<Hello> hello;
};

Request next_request(Listener& l, EventReader& events, Clock::time_point deadline) {
  CmEvent event = events.wait(l.eq.get(), FI_CONNREQ, l.name, deadline);
  return Request{std::move(event.info), parse_hello(event.data)};
}

[[noreturn]] void reject(Listener& l, const Request& r, const std::string& reason) {
  ::fi_reject(l.pep.get(), r.info->handle, reason.c_str(), reason.size() + 1);
  throw std::runtime_error(fmt::format("{}: refused a client: {}", l.name, reason));
}

// Opens the endpoint of a request, lets `prepare` post on it, accepts, waits for
// FI_CONNECTED. Rejects the request when no endpoint took it (a failure after that closes
// the endpoint, and so the client's connection).
template <typename F>
Connection accept(Listener& l, Request& r, const std::string& name, EventReader& events, Clock::time_point deadline,
                  F&& prepare) {
  Connection c;
  try {
    c = open_connection(l.fabric, *r.info, name);
  } catch (const NoEndpoint&) {
    ::fi_reject(l.pep.get(), r.info->handle, nullptr, 0);
    throw;
  }
  prepare(c);
  check(::fi_accept(c.ep.get(), nullptr, 0), c.name, "fi_accept");
  events.wait(c.eq.get(), FI_CONNECTED, c.name, deadline);
  return c;
}

// Echoes one client's pings until it closes its connection(s). Two buffers take turns, so
// that a receive is re-posted at once without touching the one a send still reads.
void serve_client(Listener& l, const Options& o, std::uint64_t client, EventReader& events,
                  Clock::time_point deadline) {
  Request first = next_request(l, events, deadline);
  const Role expected = o.one_way ? Role::pings : Role::two_way;
  if (!first.hello) reject(l, first, "not a fi_oneway_pingpong client");
  if (first.hello->role != expected) {
    reject(l, first,
           o.one_way ? "the server runs --one-way: the client must too"
                     : "the server does not run --one-way: the client must not either");
  }
  const std::uint64_t size = first.hello->size;
  if (size == 0 || size > max_size || size > first.info->ep_attr->max_msg_size) {
    reject(l, first, fmt::format("bad message size {}", size));
  }

  Buffers buffers;
  make_buffers(buffers, l.fabric, 2 * size, '\0', l.name);
  char* slot_data[2] = {buffers.bytes.data(), buffers.bytes.data() + size};
  fi_context rx_context[2]{};
  fi_context tx_context[2]{};
  bool sending[2] = {false, false};
  int posted = 0;  // the slot with the receive posted
  bool received = false;

  const std::string prefix = fmt::format("client {}", client);
  Connection in = accept(
      l, first, fmt::format("{} {}", prefix, role_name(first.hello->role)), events, deadline, [&](Connection& c) {
        check(::fi_recv(c.ep.get(), slot_data[0], size, buffers.desc, 0, &rx_context[0]), c.name, "fi_recv");
      });
  Connection back;  // --one-way: the client's second connection carries the pongs
  if (o.one_way) {
    Request second = next_request(l, events, deadline);
    if (!second.hello || second.hello->role != Role::pongs || second.hello->size != size) {
      reject(l, second, "expected the pong connection of the client's --one-way pair");
    }
    back =
        accept(l, second, fmt::format("{} {}", prefix, role_name(Role::pongs)), events, deadline, [](Connection&) {});
  }
  Connection& out = o.one_way ? back : in;

  std::vector<Connection*> polled{&in};
  if (o.one_way) polled.push_back(&back);
  Poller poller(std::move(polled), deadline);
  const auto on_completion = [&](void* context) {
    for (int k = 0; k < 2; ++k) {
      if (context == &rx_context[k]) received = true;
      if (context == &tx_context[k]) sending[k] = false;
    }
  };
  for (;;) {
    poller.poll(on_completion);
    if (!received || sending[1 - posted]) continue;
    // Echo from the slot just filled, then receive into the other one.
    const int filled = posted;
    received = false;
    sending[filled] = true;
    poller.post(
        out, "fi_send",
        [&] { return ::fi_send(out.ep.get(), slot_data[filled], size, buffers.desc, 0, &tx_context[filled]); },
        on_completion);
    posted = 1 - filled;
    poller.post(
        in, "fi_recv",
        [&] { return ::fi_recv(in.ep.get(), slot_data[posted], size, buffers.desc, 0, &rx_context[posted]); },
        on_completion);
  }
}

int run_server(const Options& o) {
  Listener l;
  l.name = fmt::format("listener 127.0.0.1:{}", o.port);
  l.fabric = open_fabric("127.0.0.1", o.port, true, l.name);
  l.eq = open_event_queue(l.fabric.fabric.get(), l.name);
  fid_pep* pep = nullptr;
  check(::fi_passive_ep(l.fabric.fabric.get(), l.fabric.info.get(), &pep, nullptr), l.name, "fi_passive_ep");
  l.pep.reset(pep);
  check(::fi_pep_bind(l.pep.get(), &l.eq->fid, 0), l.name, "fi_pep_bind");
  check(::fi_listen(l.pep.get()), l.name, "fi_listen");
  // Port 0 asked for any free port: report the one the provider bound.
  sockaddr_in bound{};
  std::size_t length = sizeof bound;
  check(::fi_getname(&l.pep->fid, &bound, &length), l.name, "fi_getname");
  if (bound.sin_family != AF_INET) throw std::runtime_error(fmt::format("{}: fi_getname: not IPv4", l.name));
  const std::uint16_t port = ntohs(bound.sin_port);
  l.name = fmt::format("listener 127.0.0.1:{}", port);
  fmt::print(stderr, "{}: listening on 127.0.0.1:{} (libfabric {} provider, FI_EP_MSG{})\n", tool_name, port,
             l.fabric.info->fabric_attr->prov_name, o.one_way ? ", --one-way" : "");
  if (!o.port_file.empty()) netio::tools::write_port_file(o.port_file, port);
  const auto deadline = deadline_after(o.timeout);
  EventReader events;
  // Clients one after another, until the deadline or Ctrl-C.
  for (std::uint64_t client = 1; Clock::now() < deadline && !netio::tools::stop_requested(); ++client) {
    try {
      serve_client(l, o, client, events, deadline);
    } catch (const Expired&) {
      break;
    } catch (const PeerClosed&) {
      // the client is done
    } catch (const std::runtime_error& e) {
      if (Clock::now() >= deadline || netio::tools::stop_requested()) break;
      fmt::print(stderr, "{}: client dropped: {}\n", tool_name, e.what());
    }
  }
  return 0;
}

// --- client --------------------------------------------------------------------------------

Connection connect(const Fabric& f, const Options& o, Role role, EventReader& events, Clock::time_point deadline) {
  Connection c = open_connection(f, *f.info, fmt::format("{} to {}", role_name(role), o.endpoint));
  Hello hello;
  hello.role = role;
  hello.size = o.size;
  check(::fi_connect(c.ep.get(), f.info->dest_addr, &hello, sizeof hello), c.name, "fi_connect");
  events.wait(c.eq.get(), FI_CONNECTED, c.name, deadline);
  return c;
}

int run_client(const Options& o) {
  const HostPort where = parse_tcp_endpoint(o.endpoint);
  const auto deadline = deadline_after(o.timeout);
  const Fabric f = open_fabric(where.host, where.port, false, o.endpoint);
  Buffers buffers;  // the ping, then the pong
  make_buffers(buffers, f, 2 * o.size, 'p', o.endpoint);
  char* ping = buffers.bytes.data();
  char* pong = buffers.bytes.data() + o.size;

  EventReader events;
  Connection first = connect(f, o, o.one_way ? Role::pings : Role::two_way, events, deadline);
  Connection back;  // --one-way: the server answers on this one
  if (o.one_way) back = connect(f, o, Role::pongs, events, deadline);
  Connection& in = o.one_way ? back : first;

  std::vector<Connection*> polled{&first};
  if (o.one_way) polled.push_back(&back);
  Poller poller(std::move(polled), deadline);
  fi_context rx_context{};
  fi_context tx_context{};
  bool sent = false;
  bool got = false;
  const auto on_completion = [&](void* context) {
    if (context == &tx_context) sent = true;
    if (context == &rx_context) got = true;
  };
  measure_round_trips(tool_name, o, [&] {
    sent = got = false;
    poller.post(
        in, "fi_recv", [&] { return ::fi_recv(in.ep.get(), pong, o.size, buffers.desc, 0, &rx_context); },
        on_completion);
    poller.post(
        first, "fi_send", [&] { return ::fi_send(first.ep.get(), ping, o.size, buffers.desc, 0, &tx_context); },
        on_completion);
    while (!(sent && got)) poller.poll(on_completion);
  });
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fi_oneway_pingpong: round-trip time over libfabric's tcp provider (FI_EP_MSG, spinning on the "
      "completion queues like fi_pingpong), without netio; --one-way in the shape of netio's send and "
      "receive sockets. Start a server with --server, then the client.",
      tool_name};
  Options o;
  static constexpr netio::bench::RoleNames names{
      "--server", "Echo what clients send, one client after another", "Server",
      "Client: the server, tcp://HOST:PORT (the port its passive endpoint listens on)", netio::bench::rtt_json_help};
  netio::bench::add_pingpong_options(app, o, names, "Client: ping size");
  app.add_flag("--one-way", o.one_way,
               "Pings and pongs on two connections that carry data one way each, each endpoint with its own CQ and "
               "EQ, like netio's send and receive sockets (both sides must say it)");
  try {
    app.parse(argc, argv);
    netio::bench::check_pingpong_options(o, names);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return netio::bench::run_program(tool_name, o, [&] { return o.listener ? run_server(o) : run_client(o); });
}
