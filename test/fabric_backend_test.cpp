// SPDX-License-Identifier: MIT
// The libfabric back-end through the low-level socket interface, over 127.0.0.1 with the
// tcp provider (and a smoke test with sockets): connection set-up and refusal, data intact
// and in order, peer shutdown, many connections, memory registration, credit-based
// back-pressure, provider selection and the polling fallback.
#include "backends/fabric/credit_policy.hpp"
#include "backends/fabric/deferred_registrar.hpp"
#include "backends/fabric/fabric_domain.hpp"
#include "backends/fabric/fabric_endpoint.hpp"
#include "backends/fabric/fabric_memory_registrar.hpp"
#include "backends/fabric/fabric_wire.hpp"
#include "backends/fabric/provider_selection.hpp"
#include "kernel_tcp.hpp"
#include "netio/backend/backend.hpp"
#include "netio/backend/buffer.hpp"
#include "netio/backend/event_loop.hpp"
#include "netio/context.hpp"
#include "netio/endpoint.hpp"
#include "netio/error.hpp"
#include "netio/internal/little_endian.hpp"
#include "support/loopback_port.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using netio::AcceptDecision;
using netio::Buffer;
using netio::BufferPool;
using netio::Endpoint;
using netio::Errc;
using netio::Error;
using netio::test::eventually;
using netio::test::pattern;

namespace {

// The sockets provider's progress thread naps 10 ms by default; it reads the variable once,
// when libfabric first loads it, so before any test runs (CTest sets it too).
const bool sockets_provider_awake = [] {
  ::setenv("FI_SOCKETS_PE_WAITTIME", "0", 0);
  return true;
}();

Endpoint local_endpoint(const std::string& provider = "tcp") {
  return Endpoint::parse("fabric://127.0.0.1:0?provider=" + provider);
}

// Sets an environment variable for one scope.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnvironment() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::vector<std::byte> bytes_of(const std::string& text) {
  std::vector<std::byte> out(text.size());
  std::memcpy(out.data(), text.data(), text.size());
  return out;
}

// A reply buffer in plain memory (reply_registrar() is nullptr: replies are copied).
struct OwnedBuffer {
  explicit OwnedBuffer(const std::vector<std::byte>& bytes) : storage(bytes) {
    storage.resize(std::max<std::size_t>(bytes.size(), 1));
    buffer.data = storage.data();
    buffer.capacity = storage.size();
    buffer.size = bytes.size();
  }
  std::vector<std::byte> storage;
  Buffer buffer;
};

// One accepted connection as the test sees it. Guarded by Receiver::mutex.
struct Connection {
  std::unique_ptr<netio::LowLevelReceiveSocket> socket;  // loop thread
  Endpoint peer;
  std::vector<std::vector<std::byte>> messages;
  std::vector<netio::ReceivedBuffer> held;  // kept (not given back) while Receiver::hold
  std::optional<Error> disconnected;
  std::vector<Buffer*> replies_completed;  // in the order on_reply_completed reported them
  std::deque<OwnedBuffer> reply_buffers;   // every reply sent, in order; outlives the socket
};

// A listen socket whose accepted connections record what they receive.
struct Receiver {
  std::mutex mutex;
  std::function<AcceptDecision(const Endpoint&, std::span<const std::byte>)> decide =
      [](const Endpoint&, std::span<const std::byte>) { return AcceptDecision::accept(1 << 20, 8); };
  bool hold = false;
  std::vector<std::pair<Endpoint, std::vector<std::byte>>> requests;
  std::vector<std::unique_ptr<Connection>> connections;
  std::vector<Error> errors;
  std::unique_ptr<netio::LowLevelListenSocket> listener;  // loop thread
  std::atomic<std::size_t> total_messages{0};
  // When set, each message received is answered with the reply it returns (loop thread).
  std::function<std::optional<std::vector<std::byte>>(std::size_t index, std::span<const std::byte>)> replier;

  netio::LowLevelListenSocket::Callbacks callbacks() {
    netio::LowLevelListenSocket::Callbacks cb;
    cb.on_request = [this](const Endpoint& peer, std::span<const std::byte> hello) {
      std::lock_guard lock(mutex);
      requests.emplace_back(peer, std::vector<std::byte>(hello.begin(), hello.end()));
      return decide(peer, hello);
    };
    cb.on_accepted = [this](std::unique_ptr<netio::LowLevelReceiveSocket> socket) {
      auto connection = std::make_unique<Connection>();
      Connection* c = connection.get();
      c->peer = socket->peer();
      c->socket = std::move(socket);
      netio::LowLevelReceiveSocket* raw = c->socket.get();
      {
        std::lock_guard lock(mutex);
        connections.push_back(std::move(connection));
      }
      raw->start({[this, c](netio::ReceivedBuffer buffer) {
                    Buffer* reply = nullptr;
                    {
                      std::lock_guard lock(mutex);
                      c->messages.emplace_back(buffer.bytes().begin(), buffer.bytes().end());
                      if (replier) {
                        if (auto bytes = replier(c->messages.size() - 1, buffer.bytes())) {
                          reply = &c->reply_buffers.emplace_back(*bytes).buffer;
                        }
                      }
                      if (hold) c->held.push_back(std::move(buffer));
                      ++total_messages;
                    }
                    if (reply != nullptr) c->socket->send_reply(reply);
                  },
                  [this, c](const Error& error) {
                    std::lock_guard lock(mutex);
                    c->disconnected = error;
                  },
                  [this, c](Buffer* reply) {
                    std::lock_guard lock(mutex);
                    c->replies_completed.push_back(reply);
                  }});
    };
    cb.on_error = [this](const Error& error) {
      std::lock_guard lock(mutex);
      errors.push_back(error);
    };
    return cb;
  }

  std::size_t connection_count() {
    std::lock_guard lock(mutex);
    return connections.size();
  }
  std::size_t messages_on(std::size_t index) {
    std::lock_guard lock(mutex);
    return index < connections.size() ? connections[index]->messages.size() : 0;
  }
  std::optional<Error> disconnect_of(std::size_t index) {
    std::lock_guard lock(mutex);
    return index < connections.size() ? connections[index]->disconnected : std::nullopt;
  }
  std::size_t replies_completed_on(std::size_t index) {
    std::lock_guard lock(mutex);
    return index < connections.size() ? connections[index]->replies_completed.size() : 0;
  }
  // Queues replies on connection `index` (loop thread), in order.
  void send_replies(std::size_t index, const std::vector<std::vector<std::byte>>& replies) {
    std::vector<Buffer*> buffers;
    Connection* c = nullptr;
    {
      std::lock_guard lock(mutex);
      c = connections.at(index).get();
      for (const auto& bytes : replies) buffers.push_back(&c->reply_buffers.emplace_back(bytes).buffer);
    }
    for (Buffer* buffer : buffers) c->socket->send_reply(buffer);
  }
  void release_held() {
    std::vector<netio::ReceivedBuffer> released;
    {
      std::lock_guard lock(mutex);
      hold = false;
      for (auto& c : connections) {
        for (auto& b : c->held) released.push_back(std::move(b));
        c->held.clear();
      }
    }
    released.clear();  // given back on this (test) thread
  }
};

// A send socket and what happened to it. Fields guarded by mutex.
struct Sender {
  std::unique_ptr<netio::LowLevelSendSocket> socket;  // loop thread
  std::unique_ptr<BufferPool> pool;                   // completed buffers go back here
  std::mutex mutex;
  bool connected = false;
  netio::ConnectionInfo info;
  std::optional<Error> failed;
  std::optional<Error> disconnected;
  std::atomic<std::size_t> completed{0};
  std::vector<Buffer*> completed_buffers;
  std::vector<std::uint64_t> completed_first_words;  // the first 8 bytes of each completed buffer
  std::vector<std::vector<std::byte>> replies;
  std::vector<netio::ReceivedBuffer> held_replies;  // kept (not given back) while hold_replies
  bool hold_replies = false;
  std::size_t most_replies_held = 0;
  std::atomic<std::size_t> reply_count{0};

  netio::LowLevelSendSocket::Callbacks callbacks() {
    netio::LowLevelSendSocket::Callbacks cb;
    cb.on_connected = [this](const netio::ConnectionInfo& connection) {
      std::lock_guard lock(mutex);
      connected = true;
      info = connection;
    };
    cb.on_connect_failed = [this](const Error& error) {
      std::lock_guard lock(mutex);
      failed = error;
    };
    cb.on_disconnected = [this](const Error& error) {
      std::lock_guard lock(mutex);
      disconnected = error;
    };
    cb.on_send_completed = [this](Buffer* buffer) {
      {
        std::lock_guard lock(mutex);
        completed_buffers.push_back(buffer);
        if (buffer->size >= 8) completed_first_words.push_back(netio::detail::load_le<std::uint64_t>(buffer->data));
      }
      if (pool) pool->release(buffer);
      ++completed;
    };
    cb.on_reply = [this](netio::ReceivedBuffer reply) {
      std::lock_guard lock(mutex);
      replies.emplace_back(reply.bytes().begin(), reply.bytes().end());
      if (hold_replies) held_replies.push_back(std::move(reply));
      most_replies_held = std::max(most_replies_held, held_replies.size());
      ++reply_count;
    };
    return cb;
  }
  // Gives every held reply back from this (test) thread; `keep_holding` for later ones.
  void release_replies(bool keep_holding = false) {
    std::vector<netio::ReceivedBuffer> released;
    {
      std::lock_guard lock(mutex);
      hold_replies = keep_holding;
      released.swap(held_replies);
    }
    released.clear();
  }
  bool is_connected() {
    std::lock_guard lock(mutex);
    return connected;
  }
  std::optional<Error> failure() {
    std::lock_guard lock(mutex);
    return failed;
  }
  std::optional<Error> disconnect() {
    std::lock_guard lock(mutex);
    return disconnected;
  }
};

// A context with the fabric back-end, and the sockets of one test. The destructor closes
// every socket on the loop thread before the pools and the context go.
class FabricHarness {
 public:
  FabricHarness() : backend_(context_.backend("fabric")) {}
  ~FabricHarness() {
    run([this] {
      for (auto& sender : senders_) sender->socket.reset();
      for (auto& receiver : receivers_) {
        receiver->listener.reset();
        for (auto& connection : receiver->connections) connection->socket.reset();
      }
    });
    // Buffers still held go back after their sockets closed: they are freed, not re-posted.
    for (auto& receiver : receivers_) receiver->release_held();
    for (auto& sender : senders_) sender->release_replies();
  }
  FabricHarness(const FabricHarness&) = delete;
  FabricHarness& operator=(const FabricHarness&) = delete;

  netio::Context& context() { return context_; }
  netio::Backend& backend() { return backend_; }

  void run(const std::function<void()>& task) { context_.loop().run_sync(task); }

  Receiver& listen(const Endpoint& at) {
    receivers_.push_back(std::make_unique<Receiver>());
    Receiver& receiver = *receivers_.back();
    run([&] {
      receiver.listener = backend_.make_listen_socket();
      receiver.listener->listen(at, receiver.callbacks());
    });
    return receiver;
  }

  Endpoint bound(Receiver& receiver) {
    Endpoint endpoint;
    run([&] { endpoint = receiver.listener->local_endpoint(); });
    return endpoint;
  }

  // A send socket connecting to `remote`; with a pool of `pool_buffers` buffers of
  // `buffer_size` bytes registered through the socket's registrar() after connect().
  Sender& connect(const Endpoint& remote, std::span<const std::byte> hello = {}, std::size_t pool_buffers = 0,
                  std::size_t buffer_size = 0, std::optional<netio::ReplyWindow> replies = std::nullopt) {
    senders_.push_back(std::make_unique<Sender>());
    Sender& sender = *senders_.back();
    run([&] {
      sender.socket = backend_.make_send_socket();
      if (replies) sender.socket->accept_replies(*replies);
      sender.socket->connect(remote, hello, sender.callbacks());
      if (pool_buffers != 0) {
        sender.pool = std::make_unique<BufferPool>(pool_buffers, buffer_size, sender.socket->registrar());
      }
    });
    return sender;
  }

  void send(Sender& sender, Buffer* buffer) {
    run([&] { sender.socket->send(buffer); });
  }

  // Sends a copy of `bytes` from the sender's pool (waits for a free buffer).
  void send_bytes(Sender& sender, const std::vector<std::byte>& bytes) {
    Buffer* buffer = sender.pool->acquire(10s);
    REQUIRE(buffer != nullptr);
    sender.pool->reserve(buffer, bytes.size());
    if (!bytes.empty()) std::memcpy(buffer->data, bytes.data(), bytes.size());
    buffer->size = bytes.size();
    send(sender, buffer);
  }

 private:
  netio::Context context_;
  netio::Backend& backend_;
  std::vector<std::unique_ptr<Receiver>> receivers_;
  std::vector<std::unique_ptr<Sender>> senders_;
};

// A connecting endpoint driven by hand, to send what a FabricSendSocket never would.
// Loop thread only, like the back-end; the flags are read from the test thread.
class RawConnector final : private netio::fabric::FabricEndpoint::Handler {
 public:
  RawConnector(netio::EventLoop& loop, const Endpoint& remote, std::vector<std::byte> connect_data)
      : loop_(loop), connect_data_(std::move(connect_data)) {
    const auto info = netio::fabric::query_connect_info(remote);
    endpoint_ = std::make_unique<netio::fabric::FabricEndpoint>(
        loop, domains_.get(*info), *info, netio::fabric::FabricEndpoint::Depth{4, 4}, "raw connector", [this] {
          if (!endpoint_->drain_completions(*this, 64)) return;
          endpoint_->drain_events(*this);
        });
    const int rc =
        ::fi_connect(endpoint_->ep(), endpoint_->info().dest_addr, connect_data_.data(), connect_data_.size());
    REQUIRE(rc == 0);
    endpoint_->start();
  }
  ~RawConnector() override {
    loop_.run_sync([this] { endpoint_.reset(); });
  }
  RawConnector(const RawConnector&) = delete;
  RawConnector& operator=(const RawConnector&) = delete;

  void send(std::size_t size) {
    payload_.assign(size, std::byte{0x5a});
    REQUIRE(::fi_send(endpoint_->ep(), payload_.data(), payload_.size(), nullptr, 0, operation_.as_context()) == 0);
    endpoint_->driver().kick();
  }
  // A message with remote CQ data (fi_senddata).
  void send_with_data(std::size_t size, std::uint64_t data) {
    payload_.assign(size, std::byte{0x5a});
    REQUIRE(::fi_senddata(endpoint_->ep(), payload_.data(), payload_.size(), nullptr, data, 0,
                          operation_.as_context()) == 0);
    endpoint_->driver().kick();
  }

  std::atomic<bool> connected{false};
  std::atomic<bool> refused{false};
  std::mutex mutex;
  std::vector<std::byte> refusal_data;  // guarded by mutex

 private:
  void on_completion(netio::fabric::OperationContext&, const netio::fabric::CompletionEntry&) override {}
  void on_completion_error(const netio::fabric::CompletionEntry&) override {}
  void on_connection_event(const netio::fabric::EventEntry& event) override {
    if (event.event == FI_CONNECTED) connected = true;
  }
  void on_connection_error(const netio::fabric::EventEntry& error) override {
    std::lock_guard lock(mutex);
    refusal_data.assign(error.data.begin(), error.data.end());
    refused = error.error == FI_ECONNREFUSED;
  }

  netio::EventLoop& loop_;
  netio::fabric::DomainCache domains_{false};
  std::unique_ptr<netio::fabric::FabricEndpoint> endpoint_;
  std::vector<std::byte> connect_data_;
  std::vector<std::byte> payload_;
  netio::fabric::OperationContext operation_;
};

// A listening endpoint driven by hand, that accepts one connection and sends back what a
// FabricReceiveSocket never would. Loop thread only; poll_request() from repeated loop tasks.
class RawReplier final : private netio::fabric::FabricEndpoint::Handler {
 public:
  explicit RawReplier(netio::EventLoop& loop) : loop_(loop) {
    const auto info = netio::fabric::query_listen_info(local_endpoint());
    domain_ = domains_.get(*info);
    eq_ = domain_->open_event_queue(16);
    fid_pep* pep = nullptr;
    REQUIRE(::fi_passive_ep(domain_->fabric(), info.get(), &pep, nullptr) == 0);
    pep_.reset(pep);
    REQUIRE(::fi_pep_bind(pep_.get(), &eq_.queue->fid, 0) == 0);
    REQUIRE(::fi_listen(pep_.get()) == 0);
    sockaddr_storage bound{};
    std::size_t length = sizeof bound;
    REQUIRE(::fi_getname(&pep_->fid, &bound, &length) == 0);
    bound_ = local_endpoint().with_port(netio::fabric::socket_address(&bound, length)->port());
  }
  ~RawReplier() override {
    loop_.run_sync([this] {
      endpoint_.reset();
      pep_.reset();
      eq_.queue.reset();
    });
  }
  RawReplier(const RawReplier&) = delete;
  RawReplier& operator=(const RawReplier&) = delete;

  const Endpoint& bound() const { return bound_; }

  // Accepts a pending connection request, if there is one.
  bool poll_request() {
    if (endpoint_) return true;
    netio::fabric::EventEntry entry;
    if (!reader_.next(eq_.queue.get(), entry) || entry.event != FI_CONNREQ) return false;
    const netio::fabric::InfoPtr request(entry.info);
    endpoint_ = std::make_unique<netio::fabric::FabricEndpoint>(
        loop_, domain_, *request, netio::fabric::FabricEndpoint::Depth{4, 4}, "raw replier", [this] {
          if (!endpoint_->drain_completions(*this, 64)) return;
          endpoint_->drain_events(*this);
        });
    receive_.resize(4096);
    REQUIRE(::fi_recv(endpoint_->ep(), receive_.data(), receive_.size(), nullptr, 0, receive_operation_.as_context()) ==
            0);
    accept_data_ = netio::fabric::wire::encode_accept({4096, 2});
    REQUIRE(::fi_accept(endpoint_->ep(), accept_data_.data(), accept_data_.size()) == 0);
    endpoint_->start();
    return true;
  }

  void send(std::vector<std::byte> message) {
    message_ = std::move(message);
    REQUIRE(::fi_send(endpoint_->ep(), message_.data(), message_.size(), nullptr, 0, send_operation_.as_context()) ==
            0);
    endpoint_->driver().kick();
  }

  std::atomic<bool> connected{false};

 private:
  void on_completion(netio::fabric::OperationContext&, const netio::fabric::CompletionEntry&) override {}
  void on_completion_error(const netio::fabric::CompletionEntry&) override {}
  void on_connection_event(const netio::fabric::EventEntry& event) override {
    if (event.event == FI_CONNECTED) connected = true;
  }
  void on_connection_error(const netio::fabric::EventEntry&) override {}

  netio::EventLoop& loop_;
  netio::fabric::DomainCache domains_{false};
  std::shared_ptr<netio::fabric::Domain> domain_;
  netio::fabric::OpenedQueue<fid_eq> eq_;
  netio::fabric::FidPtr<fid_pep> pep_;
  std::unique_ptr<netio::fabric::FabricEndpoint> endpoint_;
  netio::fabric::EventQueueReader reader_;
  Endpoint bound_;
  std::vector<std::byte> accept_data_;
  std::vector<std::byte> receive_;
  std::vector<std::byte> message_;
  netio::fabric::OperationContext receive_operation_;
  netio::fabric::OperationContext send_operation_;
};

// A backward message as a FabricReceiveSocket would send it.
std::vector<std::byte> reply_message(std::size_t payload, std::uint64_t credits_returned = 0) {
  std::vector<std::byte> message(netio::fabric::wire::backward_header_size + payload, std::byte{0x33});
  netio::fabric::wire::encode_backward_header(message.data(), {netio::fabric::wire::BackwardKind::reply,
                                                               static_cast<std::uint32_t>(payload), credits_returned});
  return message;
}

double cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

}  // namespace

TEST_CASE("fabric: listening on port 0 reports the bound port", "[fabric]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  const Endpoint bound = h.bound(receiver);
  CHECK(bound.port != 0);
  CHECK(bound.host == "127.0.0.1");
  CHECK(bound.scheme == "fabric");
  CHECK(bound.option("provider") == "tcp");
}

TEST_CASE("fabric: hello, accept and buffers from 0 B to 4 MiB arrive intact", "[fabric]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  receiver.decide = [](const Endpoint&, std::span<const std::byte>) { return AcceptDecision::accept(4 << 20, 4); };
  const Endpoint remote = h.bound(receiver);
  const auto hello = bytes_of("netio-hello\x01\x02");
  auto& sender = h.connect(remote, hello, 4, 4 << 20);
  REQUIRE(eventually([&] { return sender.is_connected() || sender.failure(); }));
  REQUIRE_FALSE(sender.failure());
  CHECK(sender.info.peer == remote);
  CHECK(sender.info.peer_max_buffer_size == (4u << 20));
  // The tcp provider writes a buffer with one sendmsg(): larger than this is slower.
  std::size_t efficient = 0;
  h.run([&] { efficient = sender.socket->efficient_buffer_size(); });
  CHECK(efficient == netio::detail::kernel_tcp_write_limit);
  {
    std::lock_guard lock(receiver.mutex);
    REQUIRE(receiver.requests.size() == 1);
    CHECK(receiver.requests[0].second == hello);
    CHECK(receiver.requests[0].first.host == "127.0.0.1");
    CHECK(receiver.requests[0].first.port != 0);
    CHECK(receiver.requests[0].first.port != remote.port);
  }

  const std::vector<std::size_t> sizes = {0, 1, 7, 8, 64, 4095, 4096, 65537, 1 << 20, (4 << 20) - 1, 4 << 20};
  for (std::size_t i = 0; i < sizes.size(); ++i) h.send_bytes(sender, pattern(sizes[i], i));
  REQUIRE(eventually([&] { return receiver.total_messages == sizes.size(); }, 30s));
  REQUIRE(eventually([&] { return sender.completed == sizes.size(); }));
  std::lock_guard lock(receiver.mutex);
  REQUIRE(receiver.connections.size() == 1);
  auto& connection = *receiver.connections[0];
  CHECK(connection.peer == receiver.requests[0].first);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    INFO("message " << i << " of " << sizes[i] << " bytes");
    CHECK(connection.messages[i] == pattern(sizes[i], i));
  }
  CHECK_FALSE(connection.disconnected);
}

TEST_CASE("fabric: 10,000 buffers arrive, and complete, in the order sent", "[fabric]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  receiver.decide = [](const Endpoint&, std::span<const std::byte>) { return AcceptDecision::accept(256, 16); };
  auto& sender = h.connect(h.bound(receiver), {}, 64, 256);
  REQUIRE(eventually([&] { return sender.is_connected(); }));

  constexpr std::uint64_t count = 10'000;
  for (std::uint64_t i = 0; i < count; ++i) {
    Buffer* buffer = sender.pool->acquire(10s);
    REQUIRE(buffer != nullptr);
    const auto body = pattern(8 + i % 200, i);
    netio::detail::store_le<std::uint64_t>(buffer->data, i);
    std::memcpy(buffer->data + 8, body.data(), body.size());
    buffer->size = 8 + body.size();
    // Two pointers: no allocation, no waiting for the loop.
    auto* socket = sender.socket.get();
    h.context().loop().post([socket, buffer] { socket->send(buffer); });
  }
  REQUIRE(eventually([&] { return receiver.total_messages == count; }, 60s));
  std::lock_guard lock(receiver.mutex);
  const auto& messages = receiver.connections.at(0)->messages;
  REQUIRE(messages.size() == count);
  std::uint64_t out_of_order = 0;
  std::uint64_t corrupt = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    const auto& m = messages[i];
    if (m.size() < 8 || netio::detail::load_le<std::uint64_t>(m.data()) != i) {
      ++out_of_order;
      continue;
    }
    const auto body = pattern(8 + i % 200, i);
    if (m.size() != 8 + body.size() || std::memcmp(m.data() + 8, body.data(), body.size()) != 0) ++corrupt;
  }
  CHECK(out_of_order == 0);
  CHECK(corrupt == 0);
  // Small ones go out with fi_inject (no completion of their own) when nothing else is in
  // flight, larger ones with fi_send: the sender must still see them complete in order.
  REQUIRE(eventually([&] { return sender.completed == count; }));
  std::lock_guard sender_lock(sender.mutex);
  REQUIRE(sender.completed_first_words.size() == count);
  std::uint64_t completed_out_of_order = 0;
  for (std::uint64_t i = 0; i < count; ++i) completed_out_of_order += sender.completed_first_words[i] != i;
  CHECK(completed_out_of_order == 0);
}

TEST_CASE("fabric: connecting to a closed port is refused, naming the endpoint", "[fabric]") {
  FabricHarness h;
  // Held, not a listener closed again: another test process could bind a freed port.
  const netio::test::LoopbackPort refusing(netio::test::LoopbackPort::Kind::refusing);
  const Endpoint remote = refusing.endpoint(local_endpoint());
  auto& sender = h.connect(remote);
  REQUIRE(eventually([&] { return sender.failure().has_value(); }));
  const auto error = *sender.failure();
  CHECK(error.code() == Errc::connection_refused);
  CHECK_THAT(error.what(), Catch::Contains(remote.to_string()));
  CHECK_FALSE(sender.is_connected());
}

TEST_CASE("fabric: a rejected hello reaches the connector with the reason", "[fabric]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  receiver.decide = [](const Endpoint&, std::span<const std::byte> hello) {
    return AcceptDecision::reject("wrong hello: " +
                                  std::string(reinterpret_cast<const char*>(hello.data()), hello.size()));
  };
  const Endpoint remote = h.bound(receiver);
  auto& sender = h.connect(remote, bytes_of("version 0"));
  REQUIRE(eventually([&] { return sender.failure().has_value(); }));
  const auto error = *sender.failure();
  CHECK(error.code() == Errc::handshake_rejected);
  CHECK_THAT(error.what(), Catch::Contains("wrong hello: version 0"));
  CHECK_THAT(error.what(), Catch::Contains(remote.to_string()));
  CHECK(receiver.connection_count() == 0);

  SECTION("a reason longer than the provider's connection data is cut, not lost") {
    receiver.decide = [](const Endpoint&, std::span<const std::byte>) {
      return AcceptDecision::reject("too long " + std::string(5000, 'x'));
    };
    auto& second = h.connect(remote, bytes_of("again"));
    REQUIRE(eventually([&] { return second.failure().has_value(); }));
    CHECK(second.failure()->code() == Errc::handshake_rejected);
    CHECK_THAT(second.failure()->what(), Catch::Contains("too long xxxx"));
  }
}

TEST_CASE("fabric: a hello larger than the provider's connection data is refused at connect()", "[fabric]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  const std::vector<std::byte> hello(4096, std::byte{1});
  std::unique_ptr<netio::LowLevelSendSocket> socket;
  h.run([&] {
    socket = h.backend().make_send_socket();
    try {
      socket->connect(h.bound(receiver), hello, {});
      FAIL("connect() accepted a 4 KiB hello");
    } catch (const Error& e) {
      CHECK(e.code() == Errc::message_too_large);
      CHECK_THAT(e.what(), Catch::Contains("4096"));
    }
    socket.reset();
  });
}

TEST_CASE("fabric: the receiver sees the sender close after everything it sent", "[fabric]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  auto& sender = h.connect(h.bound(receiver), {}, 8, 1024);
  REQUIRE(eventually([&] { return sender.is_connected(); }));
  for (std::size_t i = 0; i < 50; ++i) h.send_bytes(sender, pattern(1000, i));
  REQUIRE(eventually([&] { return sender.completed == 50; }));
  h.run([&] { sender.socket->close(); });

  REQUIRE(eventually([&] { return receiver.disconnect_of(0).has_value(); }));
  std::lock_guard lock(receiver.mutex);
  auto& connection = *receiver.connections.at(0);
  CHECK(connection.messages.size() == 50);
  for (std::size_t i = 0; i < connection.messages.size(); ++i) CHECK(connection.messages[i] == pattern(1000, i));
  CHECK(connection.disconnected->code() == Errc::disconnected);
  CHECK_THAT(connection.disconnected->what(), Catch::Contains(connection.peer.to_string()));
}

TEST_CASE("fabric: the sender sees the receiver close mid-stream", "[fabric]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  receiver.decide = [](const Endpoint&, std::span<const std::byte>) { return AcceptDecision::accept(1024, 4); };
  receiver.hold = true;  // the sender runs out of credits and queues
  const Endpoint remote = h.bound(receiver);
  auto& sender = h.connect(remote, {}, 16, 1024);
  REQUIRE(eventually([&] { return sender.is_connected(); }));
  for (std::size_t i = 0; i < 10; ++i) h.send_bytes(sender, pattern(100, i));
  REQUIRE(eventually([&] { return receiver.total_messages == 4; }));
  h.run([&] {
    std::lock_guard lock(receiver.mutex);
    receiver.connections.at(0)->socket->close();
  });
  REQUIRE(eventually([&] { return sender.disconnect().has_value(); }));
  CHECK(sender.disconnect()->code() == Errc::disconnected);
  CHECK_THAT(sender.disconnect()->what(), Catch::Contains(remote.to_string()));
  // After the failure, send() ignores buffers instead of throwing.
  Buffer spare;
  h.send(sender, &spare);
}

TEST_CASE("fabric: 100 connections to one listener", "[fabric]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  receiver.decide = [](const Endpoint&, std::span<const std::byte>) { return AcceptDecision::accept(64, 4); };
  const Endpoint remote = h.bound(receiver);
  constexpr std::size_t connections = 100;
  constexpr std::size_t per_connection = 3;
  std::vector<Sender*> senders;
  for (std::size_t i = 0; i < connections; ++i) {
    const auto id = bytes_of("sender " + std::to_string(i));
    senders.push_back(&h.connect(remote, id, per_connection, 64));
  }
  REQUIRE(eventually(
      [&] {
        for (auto* s : senders) {
          if (!s->is_connected()) return false;
        }
        return true;
      },
      30s));
  for (std::size_t i = 0; i < connections; ++i) {
    for (std::uint64_t k = 0; k < per_connection; ++k) {
      std::vector<std::byte> message(16);
      netio::detail::store_le<std::uint64_t>(message.data(), i);
      netio::detail::store_le<std::uint64_t>(message.data() + 8, k);
      h.send_bytes(*senders[i], message);
    }
  }
  REQUIRE(eventually([&] { return receiver.total_messages == connections * per_connection; }, 30s));
  std::lock_guard lock(receiver.mutex);
  REQUIRE(receiver.connections.size() == connections);
  REQUIRE(receiver.requests.size() == connections);
  std::vector<bool> seen(connections, false);
  for (const auto& connection : receiver.connections) {
    REQUIRE(connection->messages.size() == per_connection);
    const auto sender_id = netio::detail::load_le<std::uint64_t>(connection->messages[0].data());
    REQUIRE(sender_id < connections);
    CHECK_FALSE(seen[sender_id]);
    seen[sender_id] = true;
    for (std::uint64_t k = 0; k < per_connection; ++k) {
      CHECK(netio::detail::load_le<std::uint64_t>(connection->messages[k].data()) == sender_id);
      CHECK(netio::detail::load_le<std::uint64_t>(connection->messages[k].data() + 8) == k);
    }
  }
  CHECK(receiver.errors.empty());
}

TEST_CASE("fabric: back-pressure: held receive buffers stall the sender until given back", "[fabric]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  constexpr std::size_t credits = 4;
  constexpr std::size_t count = 40;
  receiver.decide = [](const Endpoint&, std::span<const std::byte>) { return AcceptDecision::accept(4096, credits); };
  receiver.hold = true;
  auto& sender = h.connect(h.bound(receiver), {}, count, 4096);
  REQUIRE(eventually([&] { return sender.is_connected(); }));
  for (std::size_t i = 0; i < count; ++i) h.send_bytes(sender, pattern(4096, i));

  REQUIRE(eventually([&] { return receiver.total_messages == credits; }));
  std::this_thread::sleep_for(300ms);  // time for anything that would overrun to arrive
  CHECK(receiver.total_messages == credits);
  CHECK(sender.completed <= credits);
  CHECK_FALSE(sender.disconnect());

  receiver.release_held();  // gives the buffers back from this thread; later ones go straight back
  REQUIRE(eventually([&] { return receiver.total_messages == count; }, 20s));
  REQUIRE(eventually([&] { return sender.completed == count; }));
  std::lock_guard lock(receiver.mutex);
  const auto& messages = receiver.connections.at(0)->messages;
  for (std::size_t i = 0; i < count; ++i) CHECK(messages[i] == pattern(4096, i));
}

TEST_CASE("fabric: a buffer larger than the receiver takes fails the connection locally, without a throw", "[fabric]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  receiver.decide = [](const Endpoint&, std::span<const std::byte>) { return AcceptDecision::accept(1000, 4); };
  auto& sender = h.connect(h.bound(receiver), {}, 2, 4096);
  REQUIRE(eventually([&] { return sender.is_connected(); }));
  Buffer* fits = sender.pool->acquire(1s);
  REQUIRE(fits != nullptr);
  fits->size = 1000;
  h.send(sender, fits);
  REQUIRE(eventually([&] { return receiver.total_messages == 1; }));
  REQUIRE(eventually([&] { return sender.completed == 1; }));

  Buffer* buffer = sender.pool->acquire(1s);
  REQUIRE(buffer != nullptr);
  buffer->size = 1001;
  h.run([&] { CHECK_NOTHROW(sender.socket->send(buffer)); });  // reported from inside send()
  const auto error = sender.disconnect();
  REQUIRE(error);
  CHECK(error->code() == Errc::message_too_large);
  CHECK_THAT(error->what(), Catch::Contains("1001") && Catch::Contains("1000"));
  // The socket is closed: the refused buffer never completes (the caller owns it), and
  // later sends are ignored.
  buffer->size = 10;
  h.send(sender, buffer);
  std::this_thread::sleep_for(50ms);
  CHECK(sender.completed == 1);
  CHECK(receiver.total_messages == 1);
  sender.pool->release(buffer);
}

TEST_CASE("fabric: received buffers given back after their socket closed are freed", "[fabric]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  receiver.hold = true;
  auto& sender = h.connect(h.bound(receiver), {}, 8, 512);
  REQUIRE(eventually([&] { return sender.is_connected(); }));
  for (std::size_t i = 0; i < 5; ++i) h.send_bytes(sender, pattern(512, i));
  REQUIRE(eventually([&] { return receiver.total_messages == 5; }));
  std::vector<netio::ReceivedBuffer> kept;
  h.run([&] {
    std::lock_guard lock(receiver.mutex);
    auto& connection = *receiver.connections.at(0);
    for (auto& b : connection.held) kept.push_back(std::move(b));
    connection.held.clear();
    connection.socket.reset();  // closed and destroyed with five buffers lent out
  });
  for (std::size_t i = 0; i < kept.size(); ++i)
    CHECK(std::vector<std::byte>(kept[i].bytes().begin(), kept[i].bytes().end()) == pattern(512, i));
  kept.clear();  // on this thread, long after the socket: ASan checks the rest
}

TEST_CASE("fabric: many buffers register and deregister through registrar()", "[fabric]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  receiver.decide = [](const Endpoint&, std::span<const std::byte>) { return AcceptDecision::accept(64 << 10, 8); };
  auto& sender = h.connect(h.bound(receiver));
  REQUIRE(eventually([&] { return sender.is_connected(); }));
  netio::MemoryRegistrar* registrar = nullptr;
  h.run([&] { registrar = sender.socket->registrar(); });
  REQUIRE(registrar != nullptr);

  constexpr std::size_t count = 1000;
  BufferPool pool(count, 64 << 10, registrar);
  std::vector<Buffer*> buffers;
  for (std::size_t i = 0; i < count; ++i) {
    Buffer* buffer = pool.try_acquire();
    REQUIRE(buffer != nullptr);
    REQUIRE(buffer->registration != nullptr);
    buffers.push_back(buffer);
  }
  // Every tenth one goes over the wire.
  for (std::size_t i = 0; i < count; i += 10) {
    const auto bytes = pattern(1 << 10, i);
    std::memcpy(buffers[i]->data, bytes.data(), bytes.size());
    buffers[i]->size = bytes.size();
    h.send(sender, buffers[i]);
  }
  REQUIRE(eventually([&] { return sender.completed == count / 10; }, 20s));
  REQUIRE(eventually([&] { return receiver.total_messages == count / 10; }));
  h.run([&] { sender.socket.reset(); });
  for (Buffer* buffer : buffers) pool.release(buffer);
  // The pool deregisters all of them when it goes, before the context: LSan and the domain's
  // close (which fails with registrations still open) would tell.
}

TEST_CASE("fabric: a pool built before connect() registers through the deferred registrar", "[fabric]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  const Endpoint remote = h.bound(receiver);
  std::unique_ptr<netio::LowLevelSendSocket> socket;
  std::unique_ptr<BufferPool> pool;
  Sender state;
  h.run([&] {
    socket = h.backend().make_send_socket();
    pool = std::make_unique<BufferPool>(4, 2048, socket->registrar());  // as BufferSender does
    socket->connect(remote, {}, state.callbacks());
  });
  REQUIRE(eventually([&] { return state.is_connected(); }));
  for (std::size_t i = 0; i < 4; ++i) {
    Buffer* buffer = pool->try_acquire();
    REQUIRE(buffer != nullptr);
    CHECK(buffer->registration != nullptr);
    const auto bytes = pattern(2048, i);
    std::memcpy(buffer->data, bytes.data(), bytes.size());
    buffer->size = bytes.size();
    h.run([&] { socket->send(buffer); });
  }
  REQUIRE(eventually([&] { return receiver.total_messages == 4; }));
  h.run([&] { socket.reset(); });
  std::vector<Buffer*> done;
  {
    std::lock_guard lock(state.mutex);
    done = state.completed_buffers;
  }
  for (Buffer* buffer : done) pool->release(buffer);
  pool.reset();
}

TEST_CASE("fabric: FI_MR_LOCAL rules: unregistered buffers are refused, ours move domains", "[fabric]") {
  // The tcp provider does not need registration; a registrar told otherwise (as verbs
  // would) exercises the checks on a real domain. prepare_for_send() throws; the send
  // socket turns that into a failed connection (on_disconnected, Errc::backend_error), so
  // that its send() never throws (backend.hpp).
  const auto info = netio::fabric::query_connect_info(Endpoint::parse("fabric://127.0.0.1:9?provider=tcp"));
  auto domain = std::make_shared<netio::fabric::Domain>(*info, false);
  netio::fabric::FabricMemoryRegistrar strict(domain->domain(), FI_MR_LOCAL, "test domain");
  netio::fabric::DeferredRegistrar deferred;

  std::vector<std::byte> memory(4096);
  Buffer buffer{memory.data(), memory.size(), 100, nullptr, nullptr};
  try {
    deferred.prepare_for_send(buffer, strict, [] { return std::string("test socket"); });
    FAIL("an unregistered buffer was accepted under FI_MR_LOCAL");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::backend_error);
    CHECK_THAT(e.what(), Catch::Contains("FI_MR_LOCAL") && Catch::Contains("test socket"));
  }

  // Registered before any domain existed: registered for real at the first send.
  deferred.register_buffer(buffer);
  REQUIRE(buffer.registration != nullptr);
  CHECK_FALSE(strict.owns(buffer));
  deferred.add_domain_registrar(strict);
  deferred.prepare_for_send(buffer, strict, [] { return std::string("test socket"); });
  CHECK(strict.owns(buffer));
  CHECK(strict.live_registrations() == 1);

  // Registered with another domain's registrar of this back-end: moved.
  netio::fabric::FabricMemoryRegistrar other(domain->domain(), FI_MR_LOCAL, "other domain");
  deferred.add_domain_registrar(other);
  deferred.deregister_buffer(buffer);
  CHECK(strict.live_registrations() == 0);
  other.register_buffer(buffer);
  deferred.prepare_for_send(buffer, strict, [] { return std::string("test socket"); });
  CHECK(strict.owns(buffer));
  CHECK(other.live_registrations() == 0);
  deferred.deregister_buffer(buffer);
  CHECK(buffer.registration == nullptr);
  CHECK(strict.live_registrations() == 0);
}

TEST_CASE("fabric: provider selection errors name the provider and the address", "[fabric]") {
  FabricHarness h;
  const auto bogus = Endpoint::parse("fabric://127.0.0.1:0?provider=no-such-provider");
  h.run([&] {
    auto listener = h.backend().make_listen_socket();
    try {
      listener->listen(bogus, {});
      FAIL("listen() on an unknown provider succeeded");
    } catch (const Error& e) {
      CHECK(e.code() == Errc::provider_unavailable);
      CHECK_THAT(e.what(), Catch::Contains("no-such-provider") && Catch::Contains("127.0.0.1") &&
                               Catch::Contains("tcp"));  // the providers that do exist
    }
    auto sender = h.backend().make_send_socket();
    try {
      sender->connect(bogus.with_port(5555), {}, {});
      FAIL("connect() on an unknown provider succeeded");
    } catch (const Error& e) {
      CHECK(e.code() == Errc::provider_unavailable);
      CHECK_THAT(e.what(), Catch::Contains("no-such-provider"));
    }
  });

  SECTION("NETIO_FABRIC_PROVIDER applies when the endpoint names none") {
    ScopedEnvironment environment("NETIO_FABRIC_PROVIDER", "another-missing-one");
    h.run([&] {
      auto listener = h.backend().make_listen_socket();
      CHECK_THROWS_WITH(listener->listen(Endpoint::parse("fabric://127.0.0.1:0"), {}),
                        Catch::Contains("another-missing-one"));
    });
  }
}

TEST_CASE("fabric: NETIO_FABRIC_PROVIDER selects the provider", "[fabric]") {
  ScopedEnvironment environment("NETIO_FABRIC_PROVIDER", "tcp");
  FabricHarness h;
  auto& receiver = h.listen(Endpoint::parse("fabric://127.0.0.1:0"));
  auto& sender = h.connect(h.bound(receiver), bytes_of("env"), 2, 64);
  REQUIRE(eventually([&] { return sender.is_connected() || sender.failure(); }));
  REQUIRE_FALSE(sender.failure());
  h.send_bytes(sender, pattern(64, 1));
  REQUIRE(eventually([&] { return receiver.total_messages == 1; }));
}

TEST_CASE("fabric: the sockets provider works too (smoke)", "[fabric][sockets]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint("sockets"));
  receiver.decide = [](const Endpoint&, std::span<const std::byte> hello) {
    if (hello.size() == 3) return AcceptDecision::reject("three is a crowd");
    return AcceptDecision::accept(1 << 16, 4);
  };
  const Endpoint remote = h.bound(receiver);
  CHECK(remote.port != 0);
  auto& sender = h.connect(remote, bytes_of("sockets smoke"), 4, 1 << 16);
  REQUIRE(eventually([&] { return sender.is_connected() || sender.failure(); }));
  REQUIRE_FALSE(sender.failure());
  std::size_t efficient = 0;
  h.run([&] { efficient = sender.socket->efficient_buffer_size(); });
  CHECK(efficient == netio::detail::kernel_tcp_write_limit);
  for (std::size_t i = 0; i < 20; ++i) h.send_bytes(sender, pattern(100 * i, i));
  REQUIRE(eventually([&] { return receiver.total_messages == 20; }));
  {
    std::lock_guard lock(receiver.mutex);
    for (std::size_t i = 0; i < 20; ++i) CHECK(receiver.connections.at(0)->messages[i] == pattern(100 * i, i));
  }
  auto& rejected = h.connect(remote, bytes_of("abc"));
  REQUIRE(eventually([&] { return rejected.failure().has_value(); }));
  CHECK(rejected.failure()->code() == Errc::handshake_rejected);
  CHECK_THAT(rejected.failure()->what(), Catch::Contains("three is a crowd"));

  Endpoint closed_port;
  {
    auto& gone = h.listen(local_endpoint("sockets"));
    closed_port = h.bound(gone);
    h.run([&] { gone.listener->close(); });
  }
  auto& refused = h.connect(closed_port);
  REQUIRE(eventually([&] { return refused.failure().has_value(); }));
  CHECK(refused.failure()->code() == Errc::connection_refused);
}

TEST_CASE("fabric: queues without wait fds are polled (NETIO_FABRIC_WAIT=poll)", "[fabric]") {
  ScopedEnvironment environment("NETIO_FABRIC_WAIT", "poll");
  FabricHarness h;  // a fresh back-end: its domains read the variable
  auto& receiver = h.listen(local_endpoint());
  auto& sender = h.connect(h.bound(receiver), bytes_of("polled"), 8, 1024);
  REQUIRE(eventually([&] { return sender.is_connected() || sender.failure(); }));
  REQUIRE_FALSE(sender.failure());
  for (std::size_t i = 0; i < 100; ++i) h.send_bytes(sender, pattern(1024, i));
  REQUIRE(eventually([&] { return receiver.total_messages == 100; }));
  std::lock_guard lock(receiver.mutex);
  for (std::size_t i = 0; i < 100; ++i) CHECK(receiver.connections.at(0)->messages[i] == pattern(1024, i));
}

TEST_CASE("fabric: idle and disconnected connections do not spin the loop", "[fabric]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  auto& sender = h.connect(h.bound(receiver), {}, 4, 64);
  REQUIRE(eventually([&] { return sender.is_connected(); }));
  h.send_bytes(sender, pattern(64, 0));
  REQUIRE(eventually([&] { return receiver.total_messages == 1; }));

  auto busy = [] {
    const double before = cpu_seconds();
    std::this_thread::sleep_for(500ms);
    return cpu_seconds() - before;
  };
  CHECK(busy() < 0.25);  // a spinning loop burns ~0.5 s of CPU here

  h.run([&] { sender.socket->close(); });
  REQUIRE(eventually([&] { return receiver.disconnect_of(0).has_value(); }));
  CHECK(busy() < 0.25);  // the receive socket is disconnected but not closed yet
}

TEST_CASE("fabric: connection data and credit messages survive padding and reject junk", "[fabric][wire]") {
  namespace wire = netio::fabric::wire;
  const auto hello = bytes_of("hello");
  auto connect = wire::encode_connect(hello);
  connect.resize(connect.size() + 7);  // providers may pad what they deliver
  REQUIRE(wire::decode_connect(connect));
  CHECK(wire::decode_connect(connect)->hello == hello);
  CHECK(wire::decode_connect(connect)->replies.max_size == 0);
  CHECK(wire::decode_connect(std::vector<std::byte>(3)) == std::nullopt);
  CHECK(wire::decode_connect(bytes_of("GET / HTTP/1.1")) == std::nullopt);

  const auto accept = wire::encode_accept({12345, 17});
  REQUIRE(wire::decode_accept(accept));
  CHECK(wire::decode_accept(accept)->max_buffer_size == 12345);
  CHECK(wire::decode_accept(accept)->receive_credits == 17);
  CHECK(wire::decode_accept(connect) == std::nullopt);

  const auto reject = wire::encode_reject(std::string(100, 'r'), 40);
  CHECK(reject.size() == 40);
  REQUIRE(wire::decode_reject(reject));
  CHECK(*wire::decode_reject(reject) == std::string(40 - wire::reject_overhead, 'r'));

  std::byte credits[wire::credit_message_size];
  wire::encode_credits(credits, 99);
  CHECK(wire::decode_credits(credits) == 99u);
  credits[0] = std::byte{'X'};
  CHECK(wire::decode_credits(credits) == std::nullopt);
}

TEST_CASE("fabric: a message larger than the receive buffers disconnects that peer only", "[fabric]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  receiver.decide = [](const Endpoint&, std::span<const std::byte>) { return AcceptDecision::accept(1000, 4); };
  const Endpoint remote = h.bound(receiver);
  auto& good = h.connect(remote, bytes_of("good"), 2, 1000);
  REQUIRE(eventually([&] { return good.is_connected(); }));

  std::unique_ptr<RawConnector> raw;
  h.run([&] {
    raw = std::make_unique<RawConnector>(h.context().loop(), remote,
                                         netio::fabric::wire::encode_connect(bytes_of("bad")));
  });
  REQUIRE(eventually([&] { return raw->connected.load(); }));
  h.run([&] { raw->send(2000); });
  REQUIRE(eventually([&] { return receiver.connection_count() == 2 && receiver.disconnect_of(1).has_value(); }));
  const auto error = *receiver.disconnect_of(1);
  CHECK(error.code() == Errc::protocol_error);
  CHECK_THAT(error.what(), Catch::Contains("1000 bytes"));

  h.send_bytes(good, pattern(1000, 7));  // the other connection is undisturbed
  REQUIRE(eventually([&] { return receiver.messages_on(0) == 1; }));
  CHECK_FALSE(receiver.disconnect_of(0));
  raw.reset();
}

TEST_CASE("fabric: a connection request that is not from netio is rejected and reported", "[fabric]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  const Endpoint remote = h.bound(receiver);
  std::unique_ptr<RawConnector> raw;
  h.run([&] { raw = std::make_unique<RawConnector>(h.context().loop(), remote, bytes_of("GET / HTTP/1.1")); });
  REQUIRE(eventually([&] { return raw->refused.load(); }));
  {
    std::lock_guard lock(raw->mutex);
    const auto reason = netio::fabric::wire::decode_reject(raw->refusal_data);
    REQUIRE(reason);
    CHECK_THAT(*reason, Catch::Contains("malformed"));
  }
  REQUIRE(eventually([&] {
    std::lock_guard lock(receiver.mutex);
    return !receiver.errors.empty();
  }));
  {
    std::lock_guard lock(receiver.mutex);
    CHECK(receiver.errors[0].code() == Errc::handshake_rejected);
    CHECK(receiver.requests.empty());  // on_request never saw it
  }
  raw.reset();
}

TEST_CASE("fabric: callbacks may close their own socket, nothing is called after", "[fabric]") {
  FabricHarness h;
  std::unique_ptr<netio::LowLevelListenSocket> listener;
  std::unique_ptr<netio::LowLevelReceiveSocket> accepted;
  std::atomic<int> messages{0};
  std::atomic<int> late_calls{0};
  std::atomic<bool> listener_closed{false};
  Endpoint remote;
  h.run([&] {
    listener = h.backend().make_listen_socket();
    netio::LowLevelListenSocket::Callbacks callbacks;
    callbacks.on_request = [&](const Endpoint&, std::span<const std::byte> hello) {
      if (hello.size() == 9) {  // "close-now"
        listener->close();      // from inside on_request: this request is still answered
        listener_closed = true;
      }
      return AcceptDecision::accept(1024, 4);
    };
    callbacks.on_accepted = [&](std::unique_ptr<netio::LowLevelReceiveSocket> socket) {
      accepted = std::move(socket);
      accepted->start({[&](netio::ReceivedBuffer) {
                         if (++messages == 2) accepted->close();
                         if (messages > 2) ++late_calls;
                       },
                       [&](const Error&) { ++late_calls; },
                       {}});
    };
    listener->listen(local_endpoint(), callbacks);
    remote = listener->local_endpoint();
  });

  auto& sender = h.connect(remote, bytes_of("first"), 10, 64);
  REQUIRE(eventually([&] { return sender.is_connected(); }));
  for (std::size_t i = 0; i < 10; ++i) h.send_bytes(sender, pattern(64, i));
  REQUIRE(eventually([&] { return sender.disconnect().has_value(); }));
  CHECK(messages == 2);
  CHECK(late_calls == 0);

  SECTION("a send socket closed inside on_connected reports nothing more") {
    std::unique_ptr<netio::LowLevelSendSocket> socket;
    std::atomic<int> calls{0};
    h.run([&] {
      socket = h.backend().make_send_socket();
      netio::LowLevelSendSocket::Callbacks callbacks;
      callbacks.on_connected = [&](const netio::ConnectionInfo&) {
        ++calls;
        socket->close();
      };
      callbacks.on_connect_failed = [&](const Error&) { calls += 100; };
      callbacks.on_disconnected = [&](const Error&) { calls += 100; };
      socket->connect(remote, {}, callbacks);
    });
    REQUIRE(eventually([&] { return calls.load() != 0; }));
    std::this_thread::sleep_for(100ms);
    CHECK(calls == 1);
    h.run([&] { socket.reset(); });
  }

  SECTION("a listener closed inside on_request answers that request, then stops") {
    auto& last = h.connect(remote, bytes_of("close-now"));
    REQUIRE(eventually([&] { return listener_closed.load(); }));
    REQUIRE(eventually([&] { return last.failure().has_value(); }));
    CHECK(last.failure()->code() == Errc::handshake_rejected);
    CHECK_THAT(last.failure()->what(), Catch::Contains("listener closed"));
  }
  h.run([&] {
    accepted.reset();
    listener.reset();
  });
}

// --- Replies on the same connection -------------------------------------------------------

TEST_CASE("fabric: replies reach the sender intact and in order, interleaved with data both ways",
          "[fabric][replies][sockets]") {
  const std::string provider = GENERATE(std::string("tcp"), std::string("sockets"));
  INFO("provider " << provider);
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint(provider));
  receiver.decide = [](const Endpoint&, std::span<const std::byte>) { return AcceptDecision::accept(4096, 4); };
  constexpr std::size_t max_reply = 1000;
  // Around the header and the providers' inject sizes (tcp 128, sockets 255 bytes with the
  // 16-byte header), up to the largest reply the sender takes.
  const std::vector<std::size_t> reply_sizes = {0, 1, 15, 16, 111, 112, 113, 239, 240, 500, 999, max_reply};
  receiver.replier = [&](std::size_t index, std::span<const std::byte>) {
    return std::optional(pattern(reply_sizes[index % reply_sizes.size()], 1000 + index));
  };
  auto& sender = h.connect(h.bound(receiver), bytes_of("replies"), 8, 4096, netio::ReplyWindow{max_reply, 4});
  REQUIRE(eventually([&] { return sender.is_connected() || sender.failure(); }));
  REQUIRE_FALSE(sender.failure());
  REQUIRE(eventually([&] { return receiver.connection_count() == 1; }));
  h.run([&] {
    CHECK(receiver.connections[0]->socket->max_reply_size() == max_reply);
    CHECK(receiver.connections[0]->socket->reply_registrar() == nullptr);
  });

  // Data in bursts and one at a time; every message answered from on_data, more replies than
  // the window, with the data window (4) smaller than the count, so credits of both kinds
  // must flow back (in CQ data, reply headers and control and credit messages).
  constexpr std::size_t count = 120;
  for (std::size_t i = 0; i < count; ++i) {
    h.send_bytes(sender, pattern((i * 37) % 4097, i));
    if (i % 10 == 0) REQUIRE(eventually([&] { return sender.reply_count == i + 1; }));
  }
  REQUIRE(eventually([&] { return receiver.total_messages == count && sender.reply_count == count; }, 20s));
  REQUIRE(eventually([&] { return receiver.replies_completed_on(0) == count; }));
  std::lock_guard lock(receiver.mutex);
  std::lock_guard sender_lock(sender.mutex);
  auto& connection = *receiver.connections.at(0);
  std::size_t wrong_data = 0;
  std::size_t wrong_replies = 0;
  std::size_t wrong_completions = 0;
  for (std::size_t i = 0; i < count; ++i) {
    wrong_data += connection.messages[i] != pattern((i * 37) % 4097, i);
    wrong_replies += sender.replies[i] != pattern(reply_sizes[i % reply_sizes.size()], 1000 + i);
    wrong_completions += connection.replies_completed[i] != &connection.reply_buffers[i].buffer;
  }
  CHECK(wrong_data == 0);
  CHECK(wrong_replies == 0);
  CHECK(wrong_completions == 0);
  CHECK_FALSE(connection.disconnected);
  CHECK_FALSE(sender.disconnected);
}

TEST_CASE("fabric: many replies through a window of 2, given back late: all arrive, in order", "[fabric][replies]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  auto& sender = h.connect(h.bound(receiver), {}, 4, 64, netio::ReplyWindow{300, 2});
  REQUIRE(eventually([&] { return sender.is_connected(); }));
  REQUIRE(eventually([&] { return receiver.connection_count() == 1; }));
  {
    std::lock_guard lock(sender.mutex);
    sender.hold_replies = true;
  }
  constexpr std::size_t count = 300;
  std::vector<std::vector<std::byte>> replies;
  for (std::size_t i = 0; i < count; ++i) replies.push_back(pattern(i % 301, i));
  h.run([&] { receiver.send_replies(0, replies); });
  // The sender gives its replies back in batches, late, from this thread.
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (sender.reply_count < count && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(2ms);
    sender.release_replies(true);
  }
  sender.release_replies();
  REQUIRE(sender.reply_count == count);
  REQUIRE(eventually([&] { return receiver.replies_completed_on(0) == count; }));
  std::lock_guard lock(sender.mutex);
  CHECK(sender.most_replies_held <= 2);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < count; ++i) wrong += sender.replies[i] != replies[i];
  CHECK(wrong == 0);
  CHECK_FALSE(sender.disconnected);
}

TEST_CASE("fabric: a sender holding its replies stalls the replier, giving them back resumes", "[fabric][replies]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  receiver.decide = [](const Endpoint&, std::span<const std::byte>) { return AcceptDecision::accept(256, 4); };
  constexpr std::size_t window = 3;
  constexpr std::size_t count = 20;
  auto& sender = h.connect(h.bound(receiver), {}, 16, 256, netio::ReplyWindow{512, window});
  REQUIRE(eventually([&] { return sender.is_connected(); }));
  REQUIRE(eventually([&] { return receiver.connection_count() == 1; }));
  {
    std::lock_guard lock(sender.mutex);
    sender.hold_replies = true;
  }
  std::vector<std::vector<std::byte>> replies;
  for (std::size_t i = 0; i < count; ++i) replies.push_back(pattern(200 + i, i));  // fi_send, not inject
  h.run([&] { receiver.send_replies(0, replies); });
  REQUIRE(eventually([&] { return sender.reply_count == window; }));

  SECTION("and data still flows both ways while the receiver holds all its data buffers") {
    receiver.hold = true;
    for (std::size_t i = 0; i < 10; ++i) h.send_bytes(sender, pattern(256, i));
    REQUIRE(eventually([&] { return receiver.total_messages == 4; }));
    // Reply credits travel in control messages that take the reserved receive: with every
    // data buffer held by the receiver's user, the replies still come, if given back.
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (sender.reply_count < count && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(2ms);
      sender.release_replies(true);
    }
    CHECK(sender.reply_count == count);
    CHECK(receiver.total_messages == 4);
    receiver.release_held();
    REQUIRE(eventually([&] { return receiver.total_messages == 10; }));
  }

  SECTION("the replies beyond the window stay queued and uncompleted") {
    std::this_thread::sleep_for(300ms);  // time for anything that would overrun to arrive
    CHECK(sender.reply_count == window);
    CHECK(receiver.replies_completed_on(0) <= window);
    CHECK_FALSE(sender.disconnect());
    sender.release_replies();
    REQUIRE(eventually([&] { return sender.reply_count == count; }));
    REQUIRE(eventually([&] { return receiver.replies_completed_on(0) == count; }));
  }
  std::lock_guard lock(sender.mutex);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < sender.replies.size(); ++i) wrong += sender.replies[i] != replies[i];
  CHECK(wrong == 0);
}

TEST_CASE("fabric: a reply larger than max_reply_size fails the connection, naming the peer", "[fabric][replies]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  auto& sender = h.connect(h.bound(receiver), {}, 4, 64, netio::ReplyWindow{1000, 4});
  REQUIRE(eventually([&] { return sender.is_connected(); }));
  REQUIRE(eventually([&] { return receiver.connection_count() == 1; }));
  h.run([&] { receiver.send_replies(0, {pattern(1000, 1), pattern(1001, 2)}); });
  REQUIRE(eventually([&] { return receiver.disconnect_of(0).has_value(); }));
  const auto error = *receiver.disconnect_of(0);
  CHECK(error.code() == Errc::message_too_large);
  CHECK_THAT(error.what(), Catch::Contains("1001 bytes") && Catch::Contains("1000 bytes"));
  {
    std::lock_guard lock(receiver.mutex);
    CHECK_THAT(error.what(), Catch::Contains(receiver.connections[0]->peer.to_string()));
  }
  REQUIRE(eventually([&] { return sender.disconnect().has_value(); }));
}

TEST_CASE("fabric: a sender that takes no replies: replying fails with a clear error", "[fabric][replies]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  auto& sender = h.connect(h.bound(receiver), {}, 4, 64);  // no accept_replies()
  REQUIRE(eventually([&] { return sender.is_connected(); }));
  REQUIRE(eventually([&] { return receiver.connection_count() == 1; }));
  h.run([&] { CHECK(receiver.connections[0]->socket->max_reply_size() == 0); });
  h.run([&] { receiver.send_replies(0, {pattern(0, 0)}); });
  REQUIRE(eventually([&] { return receiver.disconnect_of(0).has_value(); }));
  const auto error = *receiver.disconnect_of(0);
  CHECK(error.code() == Errc::message_too_large);
  CHECK_THAT(error.what(), Catch::Contains("takes no replies"));
  REQUIRE(eventually([&] { return sender.disconnect().has_value(); }));
  CHECK(sender.reply_count == 0);
}

TEST_CASE("fabric: accept_replies() after connect() is refused", "[fabric][replies]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  auto& sender = h.connect(h.bound(receiver));
  h.run([&] { CHECK_THROWS_AS(sender.socket->accept_replies({64, 2}), Error); });
}

TEST_CASE("fabric: no callback after close() with replies in flight", "[fabric][replies]") {
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  auto& sender = h.connect(h.bound(receiver), {}, 4, 64, netio::ReplyWindow{64, 4});
  REQUIRE(eventually([&] { return sender.is_connected(); }));
  REQUIRE(eventually([&] { return receiver.connection_count() == 1; }));
  std::vector<std::vector<std::byte>> replies(50, pattern(40, 3));

  SECTION("the replier closes with replies queued and in flight") {
    h.run([&] {
      receiver.send_replies(0, replies);
      receiver.connections[0]->socket->close();
    });
    REQUIRE(eventually([&] { return sender.disconnect().has_value(); }));
    std::this_thread::sleep_for(100ms);
    CHECK(receiver.replies_completed_on(0) == 0);  // reported from a later drain: none
    CHECK_FALSE(receiver.disconnect_of(0));
  }

  SECTION("the sender closes inside on_reply with more replies on the way") {
    std::atomic<int> late{0};
    std::atomic<int> replies_seen{0};
    std::atomic<bool> closed{false};
    h.run([&] {
      // Replace the sender by one that closes itself on its second reply.
      sender.socket.reset();
    });
    std::unique_ptr<netio::LowLevelSendSocket> socket;
    h.run([&] {
      socket = h.backend().make_send_socket();
      socket->accept_replies({64, 4});
      netio::LowLevelSendSocket::Callbacks callbacks;
      callbacks.on_reply = [&](netio::ReceivedBuffer) {
        if (closed) ++late;
        if (++replies_seen == 2) {
          socket->close();
          closed = true;
        }
      };
      callbacks.on_disconnected = [&](const Error&) { ++late; };
      socket->connect(h.bound(receiver), {}, callbacks);
    });
    REQUIRE(eventually([&] { return receiver.connection_count() == 2; }));
    REQUIRE(eventually([&] {
      std::lock_guard lock(receiver.mutex);
      return receiver.connections[1]->socket != nullptr;
    }));
    h.run([&] { receiver.send_replies(1, replies); });
    REQUIRE(eventually([&] { return closed.load(); }));
    std::this_thread::sleep_for(100ms);
    CHECK(late == 0);
    CHECK(replies_seen == 2);
    h.run([&] { socket.reset(); });
  }
}

TEST_CASE("fabric: reply wire formats: window in the connect data, headers, CQ data, junk rejected", "[fabric][wire]") {
  namespace wire = netio::fabric::wire;
  const auto hello = bytes_of("0123456789abcdef");
  auto connect = wire::encode_connect(hello, {70000, 9});
  CHECK(connect.size() == wire::connect_replies_overhead + hello.size());
  CHECK(connect.size() <= 48);         // verbs' connection data, with netio's 16-byte hello
  connect.resize(connect.size() + 5);  // padding
  auto decoded = wire::decode_connect(connect);
  REQUIRE(decoded);
  CHECK(decoded->hello == hello);
  CHECK(decoded->replies.max_size == 70000);
  CHECK(decoded->replies.credits == 9);
  connect.resize(wire::connect_replies_overhead + hello.size() - 1);  // window cut short
  CHECK(wire::decode_connect(connect) == std::nullopt);
  auto no_credits = wire::encode_connect(hello, {100, 1});
  no_credits[no_credits.size() - 2] = std::byte{0};  // credits 0
  CHECK(wire::decode_connect(no_credits) == std::nullopt);

  std::vector<std::byte> reply(wire::backward_header_size + 5);
  wire::encode_backward_header(reply.data(), {wire::BackwardKind::reply, 5, 77});
  auto header = wire::decode_backward(reply);
  REQUIRE(header);
  CHECK(header->kind == wire::BackwardKind::reply);
  CHECK(header->payload_size == 5);
  CHECK(header->credits_returned == 77u);
  CHECK(wire::decode_backward(std::span(reply).first(reply.size() - 1)) == std::nullopt);  // length mismatch
  reply.push_back(std::byte{0});
  CHECK(wire::decode_backward(reply) == std::nullopt);
  std::byte credits[wire::credit_message_size];
  wire::encode_credits(credits, 5);
  REQUIRE(wire::decode_backward(credits));
  CHECK(wire::decode_backward(credits)->kind == wire::BackwardKind::credits);
  netio::detail::store_le<std::uint32_t>(credits + 4, 1);  // a credit message with a payload
  CHECK(wire::decode_backward(credits) == std::nullopt);
  CHECK(wire::decode_credits(reply) == std::nullopt);
  CHECK(wire::decode_backward(std::vector<std::byte>(8)) == std::nullopt);

  const auto data = wire::encode_forward_data(wire::ForwardKind::control, (1u << 24) + 3);
  CHECK(data <= UINT32_MAX);  // verbs carries 4 bytes
  const auto forward = wire::decode_forward_data(data);
  REQUIRE(forward);
  CHECK(forward->kind == wire::ForwardKind::control);
  CHECK(forward->reply_credits_returned == 3u);
  CHECK(wire::decode_forward_data(wire::encode_forward_data(wire::ForwardKind::data, 7))->kind ==
        wire::ForwardKind::data);
  CHECK(wire::decode_forward_data(0x5800'0001) == std::nullopt);       // unknown kind
  CHECK(wire::decode_forward_data(0x1'4400'0001ull) == std::nullopt);  // beyond 32 bits
  CHECK(wire::reply_credits_between(wire::reply_credit_modulus - 2, 3) == 5u);
}

TEST_CASE("fabric: reply credits go back in control messages only when the replier runs low", "[fabric][credits]") {
  using netio::fabric::should_return_reply_credits;
  // Window 2, request/reply: the next request carries the credit of the reply before it.
  CHECK_FALSE(should_return_reply_credits(2, 0, 1, 1));  // one left: the next request will carry it
  CHECK(should_return_reply_credits(2, 0, 2, 2));        // none left: a control message
  CHECK_FALSE(should_return_reply_credits(2, 2, 2, 2));  // nothing to return
  // Window 8: a quarter left.
  CHECK_FALSE(should_return_reply_credits(8, 0, 5, 5));
  CHECK(should_return_reply_credits(8, 0, 6, 6));
  CHECK(should_return_reply_credits(1, 0, 1, 1));
}

TEST_CASE("fabric: the sender rejects replies it did not ask for, too large, or malformed", "[fabric][replies]") {
  struct Case {
    const char* what;
    std::optional<netio::ReplyWindow> window;
    std::vector<std::byte> message;
    const char* error;
  };
  const auto junk = [] {
    auto message = reply_message(8);
    message[2] = std::byte{'X'};
    return message;
  };
  const auto lying = [] {
    auto message = reply_message(8);
    netio::detail::store_le<std::uint32_t>(message.data() + 4, 9);  // says 9, carries 8
    return message;
  };
  const Case c =
      GENERATE_COPY(Case{"a reply to a sender that takes none", std::nullopt, reply_message(0), "takes no replies"},
                    Case{"a reply beyond the window, within the slot", netio::ReplyWindow{100, 2}, reply_message(110),
                         "larger than the 100 bytes"},
                    Case{"a reply beyond the receive slot", netio::ReplyWindow{100, 2}, reply_message(2000),
                         "larger than a reply of 100"},
                    Case{"an unknown kind", netio::ReplyWindow{100, 2}, junk(), "neither a credit message nor a reply"},
                    Case{"a length that does not match", netio::ReplyWindow{100, 2}, lying(),
                         "neither a credit message nor a reply"});
  INFO(c.what);
  FabricHarness h;
  std::unique_ptr<RawReplier> raw;
  h.run([&] { raw = std::make_unique<RawReplier>(h.context().loop()); });
  auto& sender = h.connect(raw->bound(), {}, 0, 0, c.window);
  bool accepted = false;
  REQUIRE(eventually([&] {
    h.run([&] { accepted = raw->poll_request(); });
    return accepted;
  }));
  REQUIRE(eventually([&] { return sender.is_connected() && raw->connected.load(); }));
  h.run([&] { raw->send(c.message); });
  REQUIRE(eventually([&] { return sender.disconnect().has_value(); }));
  const auto error = *sender.disconnect();
  CHECK(error.code() == Errc::protocol_error);
  CHECK_THAT(error.what(), Catch::Contains(c.error) && Catch::Contains(raw->bound().to_string()));
  CHECK(sender.reply_count == 0);
  raw.reset();
}

TEST_CASE("fabric: the receiver rejects control data it cannot trust, naming the peer", "[fabric][replies]") {
  namespace wire = netio::fabric::wire;
  struct Case {
    const char* what;
    wire::ReplyWindowData window;
    std::size_t size;
    std::uint64_t data;
    const char* error;
  };
  const Case c = GENERATE(Case{"CQ data from a sender that takes no replies",
                               {},
                               8,
                               wire::encode_forward_data(wire::ForwardKind::data, 0),
                               "takes no replies"},
                          Case{"an unknown kind", {64, 2}, 8, 0x5800'0000, "does not expect"},
                          Case{"a control message with a payload",
                               {64, 2},
                               8,
                               wire::encode_forward_data(wire::ForwardKind::control, 0),
                               "does not expect"},
                          Case{"credits for replies never sent",
                               {64, 2},
                               0,
                               wire::encode_forward_data(wire::ForwardKind::control, 1),
                               "more than the replies sent"});
  INFO(c.what);
  FabricHarness h;
  auto& receiver = h.listen(local_endpoint());
  const Endpoint remote = h.bound(receiver);
  std::unique_ptr<RawConnector> raw;
  h.run([&] {
    raw = std::make_unique<RawConnector>(h.context().loop(), remote, wire::encode_connect(bytes_of("raw"), c.window));
  });
  REQUIRE(eventually([&] { return raw->connected.load() && receiver.connection_count() == 1; }));
  h.run([&] { raw->send_with_data(c.size, c.data); });
  REQUIRE(eventually([&] { return receiver.disconnect_of(0).has_value(); }));
  const auto error = *receiver.disconnect_of(0);
  CHECK(error.code() == Errc::protocol_error);
  std::lock_guard lock(receiver.mutex);
  CHECK_THAT(error.what(), Catch::Contains(c.error) && Catch::Contains(receiver.connections[0]->peer.to_string()));
  CHECK(receiver.connections[0]->messages.empty());
  raw.reset();
}
