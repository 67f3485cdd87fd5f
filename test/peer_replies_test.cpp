// SPDX-License-Identifier: MIT
// Connection identity and replies on the same connection, over real loopback connections on
// every back-end: who sent a message (netio::Peer), and answering exactly that sender.
#include "handshake.hpp"
#include "netio/backend/event_loop.hpp"
#include "netio/high_throughput_socket.hpp"
#include "netio/low_latency_socket.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using netio::Endpoint;
using netio::test::eventually;

namespace {

// A message naming its sender and its number: 16 bytes, then `padding` more.
std::vector<std::byte> numbered(std::uint64_t sender, std::uint64_t sequence, std::size_t padding = 0) {
  std::vector<std::byte> bytes(16 + padding, std::byte{0x5A});
  std::memcpy(bytes.data(), &sender, 8);
  std::memcpy(bytes.data() + 8, &sequence, 8);
  return bytes;
}
// Called on the loop thread and user threads: no Catch2 assertion in here (not thread-safe).
// A message too short to hold the numbers reads as sender and sequence ~0, which no check
// accepts.
std::pair<std::uint64_t, std::uint64_t> numbers(std::span<const std::byte> bytes) {
  if (bytes.size() < 16) return {~std::uint64_t{0}, ~std::uint64_t{0}};
  std::uint64_t sender = 0;
  std::uint64_t sequence = 0;
  std::memcpy(&sender, bytes.data(), 8);
  std::memcpy(&sequence, bytes.data() + 8, 8);
  return {sender, sequence};
}

std::string name_of(std::uint64_t sender) { return "sender-" + std::to_string(sender); }

// What each sender got back, in order; thread-safe.
struct Replies {
  std::mutex mutex;
  std::vector<std::uint64_t> sequences;
  std::atomic<std::size_t> count{0};
  std::atomic<int> wrong_sender{0};
  std::uint64_t sender = 0;

  netio::ReplyOptions options() {
    netio::ReplyOptions o;
    o.on_reply = [this](std::span<const std::byte> reply) {
      const auto [from, sequence] = numbers(reply);
      if (from != sender) ++wrong_sender;
      std::lock_guard lock(mutex);
      sequences.push_back(sequence);
      ++count;
    };
    return o;
  }
  bool in_order(std::uint64_t expected) {
    std::lock_guard lock(mutex);
    if (sequences.size() != expected) return false;
    for (std::uint64_t i = 0; i < expected; ++i) {
      if (sequences[i] != i) return false;
    }
    return true;
  }
};

// Resident memory of this process, from /proc/self/statm.
std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t total_pages = 0;
  std::size_t resident_pages = 0;
  statm >> total_pages >> resident_pages;
  return resident_pages * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

// The Peer of `sender`'s connection, as the receiver's handler records it (under `mutex`
// into `peer`) once the first message came.
netio::Peer first_peer(netio::LowLatencySendSocket& sender, std::mutex& mutex, std::optional<netio::Peer>& peer) {
  sender.send(numbered(0, 0));
  REQUIRE(eventually([&] {
    std::lock_guard lock(mutex);
    return peer.has_value();
  }));
  std::lock_guard lock(mutex);
  return *peer;
}

// A low-latency receive socket that records the Peer of its last message, a sender taking
// replies of up to `reply_size` bytes (two queued for recv_reply()), and the receiver's
// Peer for that sender: what the reply back-pressure tests start from.
struct ReplyPair {
  ReplyPair(const Endpoint& base, netio::ContextOptions context_options, std::size_t reply_window,
            std::size_t reply_size)
      : context(netio::test::context_options(context_options)),
        receiver(
            context, base,
            [this](std::span<const std::byte>, const netio::Peer& from) {
              std::lock_guard lock(mutex);
              peer = from;
            },
            receive_options(reply_window)),
        sender(context, receiver.local_endpoint(), send_options(reply_size)),
        to(first_peer(sender, mutex, peer)) {}

  static netio::LowLatencyReceiveOptions receive_options(std::size_t reply_window) {
    netio::LowLatencyReceiveOptions options;
    options.reply_window = reply_window;
    return options;
  }
  static netio::LowLatencySendOptions send_options(std::size_t reply_size) {
    netio::LowLatencySendOptions options;
    options.replies.max_size = reply_size;
    options.replies.credits = 2;
    return options;
  }

  netio::Context context;
  std::mutex mutex;
  std::optional<netio::Peer> peer;  // guarded by mutex
  netio::LowLatencyReceiveSocket receiver;
  netio::LowLatencySendSocket sender;
  const netio::Peer to;
};

}  // namespace

TEST_CASE("low-latency: every message carries its sender's identity, and replies reach exactly that sender, in order",
          "[replies][identity][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  constexpr std::uint64_t senders = 8;
  constexpr std::uint64_t per_sender = 500;
  // Busy polling reads connections without epoll (EventLoop::spin_fd): replies must flow too.
  const bool busy_poll = GENERATE(false, true);
  INFO("busy polling: " << busy_poll);
  netio::Context context(
      netio::test::context_options({.busy_poll = busy_poll, .cpu = std::nullopt, .wrap_backend = {}, .emulation = {}}));

  std::mutex mutex;
  std::map<std::uint64_t, std::set<netio::ConnectionId>> connections_of;  // sender -> ids seen
  std::map<std::uint64_t, std::string> names_seen;
  std::map<std::uint64_t, std::optional<Endpoint>> endpoints_seen;
  std::atomic<int> refused{0};
  std::vector<std::string> connected_names;
  std::vector<std::string> disconnected_names;

  netio::LowLatencyReceiveOptions receive_options;
  // On an emulated network a reply completes only once its delay has passed, as a delayed
  // send buffer does: the window bounds the replies waiting there too, and a long draw holds
  // those behind it, so 16 fill up. A window of every reply a sender gets keeps try_reply()
  // from refusing there; without emulation the default window must do.
  if (netio::test::emulating()) receive_options.reply_window = per_sender;
  receive_options.events.on_connected = [&](const netio::Peer& peer) {
    std::lock_guard lock(mutex);
    connected_names.push_back(peer.name());
  };
  receive_options.events.on_disconnected = [&](const netio::Peer& peer, const netio::Error&) {
    std::lock_guard lock(mutex);
    disconnected_names.push_back(peer.name());
  };
  netio::LowLatencyReceiveSocket receiver(
      context, base,
      [&](std::span<const std::byte> message, const netio::Peer& peer) {
        const auto [sender, sequence] = numbers(message);
        {
          std::lock_guard lock(mutex);
          connections_of[sender].insert(peer.connection());
          names_seen[sender] = peer.name();
          endpoints_seen[sender] = peer.identity().endpoint;
        }
        // The reply echoes the message: the sender checks it is its own.
        if (!peer.try_reply(message)) ++refused;
      },
      receive_options);

  std::vector<std::unique_ptr<Replies>> replies;
  std::vector<std::unique_ptr<netio::LowLatencySendSocket>> sockets;
  for (std::uint64_t s = 0; s < senders; ++s) {
    replies.push_back(std::make_unique<Replies>());
    replies.back()->sender = s;
    netio::LowLatencySendOptions options;
    options.identity.name = name_of(s);
    if (s % 2 == 0) options.identity.endpoint = Endpoint::parse("tcp://127.0.0.1:" + std::to_string(1000 + s));
    options.replies = replies.back()->options();
    options.replies.credits = 4;
    sockets.push_back(std::make_unique<netio::LowLatencySendSocket>(context, receiver.local_endpoint(), options));
  }
  // All senders at once, each from its own thread.
  std::vector<std::thread> threads;
  for (std::uint64_t s = 0; s < senders; ++s) {
    threads.emplace_back([&, s] {
      try {
        for (std::uint64_t i = 0; i < per_sender; ++i) sockets[s]->send(numbered(s, i));
      } catch (const netio::Error&) {
        ++refused;  // reported below; a thread must not end in an exception
      }
    });
  }
  for (auto& t : threads) t.join();
  for (std::uint64_t s = 0; s < senders; ++s) {
    INFO("sender " << s << " got " << replies[s]->count.load() << ", refused " << refused.load());
    REQUIRE(eventually([&] { return replies[s]->count.load() == per_sender; }, 30s));
    CHECK(replies[s]->in_order(per_sender));
    CHECK(replies[s]->wrong_sender == 0);
  }
  CHECK(refused == 0);                     // replies were taken as they came: the window never filled
  if (netio::test::wrapping_backends()) {  // the decorator saw the replies go both ways
    CHECK(netio::test::wrapped_backend_counts()->replies_sent.load() >= senders * per_sender);
    CHECK(netio::test::wrapped_backend_counts()->replies_received.load() >= senders * per_sender);
  }

  std::set<netio::ConnectionId> all_ids;
  {
    std::lock_guard lock(mutex);
    for (std::uint64_t s = 0; s < senders; ++s) {
      REQUIRE(connections_of[s].size() == 1);  // one id for the connection's whole life
      all_ids.insert(*connections_of[s].begin());
      CHECK(names_seen[s] == name_of(s));
      if (s % 2 == 0) {
        REQUIRE(endpoints_seen[s].has_value());
        CHECK(endpoints_seen[s]->port == 1000 + s);
      } else {
        CHECK_FALSE(endpoints_seen[s].has_value());
      }
    }
    CHECK(connected_names.size() == senders);
  }
  CHECK(all_ids.size() == senders);  // distinct connections have distinct ids

  sockets.clear();
  REQUIRE(eventually([&] {
    std::lock_guard lock(mutex);
    return disconnected_names.size() == senders;
  }));
  std::lock_guard lock(mutex);
  std::sort(connected_names.begin(), connected_names.end());
  std::sort(disconnected_names.begin(), disconnected_names.end());
  CHECK(connected_names == disconnected_names);
}

TEST_CASE("a sender that declares no name is known by host and process", "[identity][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  std::mutex mutex;
  std::string name;
  netio::LowLatencyReceiveSocket receiver(context, base, [&](std::span<const std::byte>, const netio::Peer& peer) {
    std::lock_guard lock(mutex);
    name = peer.name();
  });
  netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
  sender.send(numbered(0, 0));
  REQUIRE(eventually([&] {
    std::lock_guard lock(mutex);
    return !name.empty();
  }));
  std::lock_guard lock(mutex);
  CHECK_THAT(name, Catch::EndsWith(":" + std::to_string(::getpid())));
}

TEST_CASE("high-throughput: messages carry their Peer, replies from a user thread reach their sender via recv_reply",
          "[replies][identity][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  constexpr std::uint64_t senders = 4;
  constexpr std::uint64_t per_sender = 2000;
  netio::Context context(netio::test::context_options());
  netio::HighThroughputReceiveSocket receiver(context, base);

  std::vector<std::unique_ptr<netio::HighThroughputSendSocket>> sockets;
  for (std::uint64_t s = 0; s < senders; ++s) {
    netio::HighThroughputSendOptions options;
    options.page_size = 64 * 1024;
    options.flush_timeout = 1ms;
    options.identity.name = name_of(s);
    sockets.push_back(std::make_unique<netio::HighThroughputSendSocket>(context, receiver.local_endpoint(), options));
  }
  // Each sender takes its replies (every tenth message is answered) with recv_reply() on a
  // thread of its own. Not between its sends: a send() waiting for a page (the receiver is
  // behind) would then leave the replies untaken, the replier would wait for reply room
  // and stop reading, and neither side would move until a timeout (a sender that stops
  // taking its replies stalls the replier, by design).
  std::atomic<int> send_failures{0};
  std::atomic<int> wrong_replies{0};
  std::vector<std::uint64_t> replies_taken(senders, 0);
  std::vector<std::thread> threads;
  for (std::uint64_t s = 0; s < senders; ++s) {
    threads.emplace_back([&, s] {
      try {
        for (std::uint64_t i = 0; i < per_sender; ++i) sockets[s]->send(numbered(s, i, i % 300));
        sockets[s]->flush();
      } catch (const netio::Error&) {
        ++send_failures;  // reported below; a thread must not end in an exception
      }
    });
    threads.emplace_back([&, s] {
      while (replies_taken[s] < per_sender / 10) {
        auto reply = sockets[s]->recv_reply(10s);
        if (!reply) return;
        const auto [sender, sequence] = numbers(reply->bytes());
        if (sender != s || sequence != replies_taken[s]) ++wrong_replies;
        ++replies_taken[s];
      }
    });
  }
  // The receiving user thread answers every tenth message, mixing recv() and recv_each().
  std::map<std::uint64_t, std::uint64_t> received;
  std::uint64_t total = 0;
  int mismatched = 0;
  int reply_failures = 0;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  auto handle = [&](std::span<const std::byte> bytes, const netio::Peer& peer) {
    const auto [sender, sequence] = numbers(bytes);
    if (peer.name() != name_of(sender)) ++mismatched;
    if (sequence != received[sender]++) ++mismatched;
    try {
      if (sequence % 10 == 0) peer.reply(numbered(sender, sequence / 10), 10s);
    } catch (const netio::Error& e) {
      ++reply_failures;
      UNSCOPED_INFO("reply failed: " << e.what());
    }
    ++total;
  };
  while (total < senders * per_sender && std::chrono::steady_clock::now() < deadline) {
    if (total % 2 == 0) {
      if (auto message = receiver.recv(100ms)) handle(message->bytes(), message->peer());
    } else {
      receiver.recv_each(64, 100ms, [&](std::span<const std::byte> bytes, const netio::Peer& peer) {
        handle(bytes, peer);
        return true;
      });
    }
  }
  for (auto& t : threads) t.join();
  CHECK(send_failures == 0);
  CHECK(reply_failures == 0);
  REQUIRE(total == senders * per_sender);
  CHECK(mismatched == 0);
  CHECK(wrong_replies == 0);
  for (std::uint64_t s = 0; s < senders; ++s) {
    CHECK(replies_taken[s] == per_sender / 10);
    CHECK_FALSE(sockets[s]->recv_reply(0ms));
  }
}

TEST_CASE("a sender that never takes its replies stalls the replier, whose memory stays bounded",
          "[replies][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  constexpr std::size_t reply_size = 64 * 1024;
  // Busy polling: the stalled reader's fd leaves epoll and comes back spinning.
  const bool busy_poll = GENERATE(false, true);
  INFO("busy polling: " << busy_poll);
  // Two replies queued for recv_reply(), which this sender does not call yet.
  ReplyPair pair(base, {.busy_poll = busy_poll, .cpu = std::nullopt, .wrap_backend = {}, .emulation = {}},
                 /*reply_window=*/8, reply_size);
  netio::Context& context = pair.context;
  netio::LowLatencySendSocket& sender = pair.sender;
  const netio::Peer& to = pair.to;

  // Offer 1 GiB of replies: the replier must say "no room" long before, and hold no more
  // than its window (plus what the kernel buffers on the way) meanwhile.
  const auto reply = std::vector<std::byte>(reply_size, std::byte{7});
  const std::size_t rss_before = resident_bytes();
  std::size_t accepted = 0;
  std::size_t refusals = 0;
  for (std::size_t i = 0; i < 16384 && refusals < 200; ++i) {
    if (to.try_reply(reply)) {
      ++accepted;
    } else {
      ++refusals;
      std::this_thread::sleep_for(1ms);  // let the loop move what it can
    }
  }
  const std::size_t rss_after = resident_bytes();
  INFO("accepted " << accepted << " replies of 64 KiB; RSS grew by " << (rss_after - std::min(rss_after, rss_before)));
  CHECK(refusals >= 200);
  CHECK(accepted < 1024);  // < 64 MiB: the window and the kernel's buffers, not 1 GiB
  CHECK(rss_after < rss_before + 128 * 1024 * 1024);

  // On the event-loop thread, reply() cannot wait for room (it is made there): it says so.
  std::optional<std::error_code> on_loop;
  // Room may have come back since (the kernel took more bytes); inside this task the loop
  // moves nothing, so the window and the kernel's buffers fill within a bounded number of
  // replies (seen under TSan with busy polling: the first reply here went through).
  context.loop().run_sync([&] {
    for (int i = 0; i < 1024 && !on_loop; ++i) {
      try {
        to.reply(reply, 10s);
        ++accepted;
      } catch (const netio::Error& e) {
        on_loop = e.code();
      }
    }
  });
  CHECK((on_loop && *on_loop == netio::Errc::would_block));

  // Taking the replies makes room again, and they arrive intact, in order.
  std::size_t taken = 0;
  while (auto message = sender.recv_reply(1s)) {
    CHECK(message->size() == reply_size);
    ++taken;
    if (taken == accepted) break;
  }
  CHECK(taken == accepted);
  CHECK(eventually([&] { return to.try_reply(reply); }));
}

// reply() on a user thread waits for room when the reply window is full, and is woken when
// the back-end finishes sending an earlier reply (ReplySender::on_completed). That wake-up
// must not be lost between the waiter's last look at the pool and its wait: the waiter has
// no re-check slices, so a lost one shows as a 10 s timeout.
TEST_CASE("a user thread's reply() waits for room and goes on as the sender takes its replies",
          "[replies][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  constexpr std::size_t reply_size = 64 * 1024;
  constexpr std::uint32_t replies = 600;  // ~38 MiB: well over the window and the kernel's buffers
  ReplyPair pair(base, {}, /*reply_window=*/2, reply_size);
  netio::LowLatencySendSocket& sender = pair.sender;
  const netio::Peer& to = pair.to;

  std::atomic<std::uint32_t> sent{0};
  std::atomic<bool> stop{false};  // bounds the test when replies stop flowing
  std::optional<std::string> failure;
  std::thread replier([&] {
    std::vector<std::byte> reply(reply_size);
    try {
      for (std::uint32_t i = 0; i < replies && !stop.load(); ++i) {
        std::memcpy(reply.data(), &i, sizeof i);
        to.reply(reply, 10s);
        sent.store(i + 1);
      }
    } catch (const std::exception& e) {
      failure = e.what();
    }
  });
  // Nothing is taken yet: the replier fills the window and the kernel, then waits.
  std::this_thread::sleep_for(200ms);
  CHECK(sent.load() < replies);
  std::uint32_t taken = 0;
  const auto start = std::chrono::steady_clock::now();
  while (taken < replies && std::chrono::steady_clock::now() - start < 20s) {
    auto message = sender.recv_reply(1s);
    if (!message) continue;
    std::uint32_t index = 0;
    std::memcpy(&index, message->bytes().data(), sizeof index);
    CHECK(index == taken);
    ++taken;
  }
  const auto took = std::chrono::steady_clock::now() - start;
  stop = true;
  replier.join();
  INFO("failure: " << failure.value_or("none"));
  CHECK(!failure);
  CHECK(taken == replies);
  // Well under the 10 s a lost wake-up costs (the transfer itself takes milliseconds).
  CHECK(took < 8s);
}

// A close that awaits its receiver (close_awaits_receiver) ends when the receiver has read
// everything and closed. Over TCP that close is a hang-up, which a sender whose reply buffers
// are all held (its user is not taking replies) used to set aside until it read again: the
// close then ran to send_timeout and failed with "the receiver did not read it all".
TEST_CASE("a close that awaits its receiver ends when the receiver closes, though the sender's replies are not taken",
          "[replies][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  // Busy polling: a stalled reader's descriptor is out of epoll, where the hang-up shows.
  const bool busy_poll = GENERATE(false, true);
  INFO("busy polling: " << busy_poll);
  netio::Context context(
      netio::test::context_options({.busy_poll = busy_poll, .cpu = std::nullopt, .wrap_backend = {}, .emulation = {}}));
  std::mutex mutex;
  std::optional<netio::Peer> peer;
  netio::LowLatencyReceiveSocket receiver(context, base, [&](std::span<const std::byte>, const netio::Peer& from) {
    std::lock_guard lock(mutex);
    peer = from;
  });
  netio::LowLatencySendOptions options;
  options.replies.max_size = 1024;
  options.replies.credits = 2;  // both held by the recv_reply() queue, which is never read
  options.close_awaits_receiver = true;
  options.send_timeout = 6s;
  netio::LowLatencySendSocket sender(context, receiver.local_endpoint(), options);
  const netio::Peer to = first_peer(sender, mutex, peer);
  // Two replies fill the sender's reply buffers; over TCP more wait in its kernel buffer
  // (libfabric's reply credits stop the replier at two).
  const auto reply = std::vector<std::byte>(512, std::byte{3});
  int accepted = 0;
  for (int refusals = 0; accepted < 4 && refusals < 50;) {
    if (to.try_reply(reply)) {
      ++accepted;
    } else {
      ++refusals;
      std::this_thread::sleep_for(2ms);
    }
  }
  REQUIRE(accepted >= 2);
  std::this_thread::sleep_for(100ms);  // the sender's reader takes what it has room for, and stalls

  std::mutex closed_mutex;
  std::optional<std::string> outcome;  // "" for success
  const auto started = std::chrono::steady_clock::now();
  sender.close([&](const netio::Error* error) {
    std::lock_guard lock(closed_mutex);
    outcome = error != nullptr ? std::string(error->what()) : std::string();
  });
  REQUIRE(eventually(
      [&] {
        std::lock_guard lock(closed_mutex);
        return outcome.has_value();
      },
      10s));
  const auto took = std::chrono::steady_clock::now() - started;
  INFO("the close took " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
  {
    std::lock_guard lock(closed_mutex);
    CHECK(*outcome == "");
  }
  CHECK(took < 3s);  // not send_timeout (6 s)
  // The replies that were taken before the close stay the caller's.
  const auto first = sender.recv_reply(1s);
  REQUIRE(first.has_value());
  CHECK(first->size() == reply.size());
}

TEST_CASE("replies: limits and a vanished sender are reported clearly", "[replies][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  std::mutex mutex;
  std::vector<netio::Peer> peers;
  netio::LowLatencyReceiveSocket receiver(context, base, [&](std::span<const std::byte>, const netio::Peer& from) {
    std::lock_guard lock(mutex);
    peers.push_back(from);
  });
  auto peer_number = [&](std::size_t i) {
    REQUIRE(eventually([&] {
      std::lock_guard lock(mutex);
      return peers.size() > i;
    }));
    std::lock_guard lock(mutex);
    return peers[i];
  };

  netio::LowLatencySendOptions no_replies;
  no_replies.replies.max_size = 0;
  no_replies.identity.name = "mute";
  {
    netio::LowLatencySendSocket sender(context, receiver.local_endpoint(), no_replies);
    sender.send(numbered(0, 0));
    const auto peer = peer_number(0);
    try {
      peer.try_reply(numbered(0, 0));
      FAIL("replied to a sender that takes no replies");
    } catch (const netio::Error& e) {
      CHECK(e.code() == netio::Errc::message_too_large);
      CHECK_THAT(e.what(), Catch::Contains("takes no replies"));
    }
  }
  netio::LowLatencySendOptions small;
  small.replies.max_size = 100;
  {
    netio::LowLatencySendSocket sender(context, receiver.local_endpoint(), small);
    sender.send(numbered(1, 0));
    const auto peer = peer_number(1);
    try {
      peer.try_reply(std::vector<std::byte>(101));
      FAIL("sent a reply larger than the sender takes");
    } catch (const netio::Error& e) {
      CHECK(e.code() == netio::Errc::message_too_large);
      CHECK_THAT(e.what(), Catch::Contains("101") && Catch::Contains("100"));
    }
    CHECK(peer.try_reply(std::vector<std::byte>(100)));
    auto reply = sender.recv_reply(5s);
    REQUIRE(reply);
    CHECK(reply->size() == 100);
  }
  // The sender is gone: replying says so, naming it.
  const auto gone = peer_number(1);
  REQUIRE(eventually([&] {
    try {
      gone.try_reply(numbered(1, 1));
      return false;
    } catch (const netio::Error& e) {
      return e.code() == netio::Errc::disconnected;
    }
  }));
}

TEST_CASE("a connection whose first buffer is no introduction is dropped, the others go on",
          "[identity][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  std::atomic<int> connected{0};
  std::atomic<int> messages{0};
  netio::LowLatencyReceiveOptions options;
  options.events.on_connected = [&](const netio::Peer&) { ++connected; };
  // The impostor and the honest sender are one process: over shm:// the impostor's drop would
  // hold the honest one off too (misbehaviour_cooldown, shm_hostile_peers_test.cpp).
  options.admission.misbehaviour_cooldown = {};
  netio::LowLatencyReceiveSocket receiver(
      context, base, [&](std::span<const std::byte>, const netio::Peer&) { ++messages; }, options);

  // A low-level sender with a valid hello whose first buffer is junk, not an introduction.
  std::unique_ptr<netio::LowLevelSendSocket> impostor;
  std::vector<std::byte> junk(64, std::byte{0x5A});
  netio::Buffer buffer{junk.data(), junk.size(), junk.size()};
  std::atomic<bool> up{false};
  std::atomic<bool> dropped{false};
  context.loop().run_sync([&] {
    impostor = context.backend(receiver.local_endpoint()).make_send_socket();
    netio::LowLevelSendSocket::Callbacks callbacks;
    callbacks.on_connected = [&](const netio::ConnectionInfo&) {
      up = true;
      impostor->send(&buffer);
    };
    callbacks.on_connect_failed = [&](const netio::Error&) { dropped = true; };
    callbacks.on_disconnected = [&](const netio::Error&) { dropped = true; };
    const auto hello = netio::detail::encode_hello({netio::detail::SocketKind::low_latency_send, 0});
    impostor->connect(receiver.local_endpoint(), hello, std::move(callbacks));
  });
  REQUIRE(eventually([&] { return dropped.load(); }));
  CHECK(up);  // the hello was fine: it was the introduction that was refused
  CHECK(receiver.stats().disconnects == 1);

  // A real sender is served as usual.
  netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
  sender.send(numbered(0, 0));
  REQUIRE(eventually([&] { return messages.load() == 1; }));
  CHECK(connected == 1);  // only the real sender was ever reported connected
  context.loop().run_sync([&] { impostor.reset(); });
}
