// SPDX-License-Identifier: MIT
// What shm:// adds to the stream sockets it shares with tcp:// (the shared suites run over
// it through support/transports.hpp): abstract names that leave nothing behind, the peer
// credential check on both sides (processes of another user, run as a child process when
// the test runs as root), and peers killed mid-stream (kill -9 of a child process) whose
// connection and descriptors are reclaimed.
#include "backends/shm/ring.hpp"
#include "backends/shm/segment.hpp"
#include "backends/shm/send_area.hpp"
#include "backends/shm/unix_family.hpp"
#include "netio/backend/registry.hpp"
#include "netio/backends/shm.hpp"
#include "netio/context.hpp"
#include "netio/error.hpp"
#include "netio/high_throughput_socket.hpp"
#include "netio/low_latency_socket.hpp"
#include "support/child_process.hpp"
#include "support/transports.hpp"

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using netio::Endpoint;
using netio::test::ChildProcess;
using netio::test::eventually;
using namespace std::chrono_literals;

constexpr std::uint32_t nobody = 65534;

std::size_t descriptors_open() {
  const auto entries = std::filesystem::directory_iterator("/proc/self/fd");
  return static_cast<std::size_t>(std::distance(std::filesystem::begin(entries), std::filesystem::end(entries)));
}

// Whether an abstract Unix socket of that name is bound on the host (/proc/net/unix).
bool abstract_name_bound(const std::string& name) {
  std::ifstream sockets("/proc/net/unix");
  std::string line;
  while (std::getline(sockets, line)) {
    if (line.size() >= name.size() + 1 &&
        line.compare(line.size() - name.size() - 1, std::string::npos, fmt::format("@{}", name)) == 0) {
      return true;
    }
  }
  return false;
}

// The shared segments mapped in this process (both ends of a connection within it map one
// each): their start addresses, from /proc/self/maps.
std::vector<std::byte*> segments_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::vector<std::byte*> starts;
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("/memfd:netio-shm") == std::string::npos) continue;
    starts.push_back(reinterpret_cast<std::byte*>(std::stoull(line.substr(0, line.find('-')), nullptr, 16)));
  }
  return starts;
}

// The send areas mapped in this process ([start, end) each), from /proc/self/maps.
std::vector<std::pair<std::uintptr_t, std::uintptr_t>> send_areas_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> ranges;
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("/memfd:netio-send-area") == std::string::npos) continue;
    const auto dash = line.find('-');
    ranges.emplace_back(std::stoull(line.substr(0, dash), nullptr, 16),
                        std::stoull(line.substr(dash + 1), nullptr, 16));
  }
  return ranges;
}

// Whether `bytes` lie in a send area mapped here: a page read where its sender wrote it.
bool in_a_send_area(const std::byte* bytes) {
  const auto at = reinterpret_cast<std::uintptr_t>(bytes);
  const auto areas = send_areas_mapped();
  return std::any_of(areas.begin(), areas.end(),
                     [&](const auto& range) { return at >= range.first && at < range.second; });
}

netio::HighThroughputSendOptions four_pages(std::size_t page_size) {
  netio::HighThroughputSendOptions options;
  options.page_size = page_size;
  options.page_count = 4;
  return options;
}

std::size_t files_in_dev_shm() {
  const auto entries = std::filesystem::directory_iterator("/dev/shm");
  return static_cast<std::size_t>(std::distance(std::filesystem::begin(entries), std::filesystem::end(entries)));
}

std::string name_of(const Endpoint& endpoint) { return fmt::format("netio-shm/{}:{}", endpoint.host, endpoint.port); }

struct CountingReceiver {
  std::atomic<std::size_t> messages{0};
  std::atomic<std::size_t> connected{0};
  std::atomic<std::size_t> disconnected{0};
  netio::LowLatencyReceiveOptions options() {
    netio::LowLatencyReceiveOptions o;
    o.events.on_connected = [this](const netio::Peer&) { ++connected; };
    o.events.on_disconnected = [this](const netio::Peer&, const netio::Error&) { ++disconnected; };
    return o;
  }
  netio::LowLatencyReceiveSocket::Handler handler() {
    return [this](std::span<const std::byte>, const netio::Peer&) { ++messages; };
  }
};

}  // namespace

TEST_CASE("shm: a listener's name is abstract, there while it listens and gone with it", "[shm]") {
  netio::Context context;
  std::string name;
  {
    CountingReceiver counts;
    netio::LowLatencyReceiveSocket receiver(context, Endpoint::parse("shm://netio-test:0"), counts.handler(),
                                            counts.options());
    const auto bound = receiver.local_endpoint();
    CHECK(bound.scheme == "shm");
    CHECK(bound.host == "netio-test");
    CHECK(bound.port != 0);
    name = name_of(bound);
    CHECK(abstract_name_bound(name));
    // A second listener on the same name and port cannot bind it.
    CHECK_THROWS_AS(netio::LowLatencyReceiveSocket(context, bound, counts.handler()), netio::Error);
  }
  CHECK(eventually([&] { return !abstract_name_bound(name); }));
}

TEST_CASE("shm: a name that is not one fails to resolve, naming it", "[shm]") {
  for (const auto* text :
       {"shm://a*b:5", "shm://x..........................................................................:5"}) {
    try {
      netio::shm::abstract_address(Endpoint::parse(text));
      FAIL("no error for " << text);
    } catch (const netio::Error& e) {
      CHECK(e.code() == netio::Errc::resolve_failed);
      CHECK_THAT(e.what(), Catch::Contains("is not a shm:// name"));
    }
  }
  CHECK_NOTHROW(netio::shm::abstract_address(Endpoint::parse("shm://daq-node_1.readout:5")));
}

TEST_CASE("shm: peers are trusted by user, by the allow-list's users and groups, and by nothing else", "[shm]") {
  const ucred own{123, ::geteuid(), ::getegid()};
  CHECK(netio::shm::distrust(own, {}).empty());
  const ucred stranger{456, ::geteuid() + 1000, 4242};
  const auto why = netio::shm::distrust(stranger, {});
  CHECK_THAT(why, Catch::Contains(fmt::format("process 456 runs as user {}", stranger.uid)));
  CHECK(netio::shm::distrust(stranger, {{stranger.uid}, {}}).empty());
  CHECK(netio::shm::distrust(stranger, {{}, {4242}}).empty());
  CHECK_FALSE(netio::shm::distrust(stranger, {{stranger.uid + 1}, {4243}}).empty());
}

TEST_CASE("shm: a process of another user is refused by the listener, and told why", "[shm]") {
  if (::geteuid() != 0) {
    WARN("skipped: running a peer as another user needs root");
    return;
  }
  netio::Context context;
  CountingReceiver counts;
  netio::LowLatencyReceiveSocket receiver(context, Endpoint::parse("shm://netio-test:0"), counts.handler(),
                                          counts.options());
  const auto descriptors = descriptors_open();

  SECTION("by default") {
    // The child trusts root (its "shm-trust-root" scheme): the refusal is the listener's.
    auto address = receiver.local_endpoint();
    address.scheme = "shm-trust-root";
    ChildProcess child(NETIO_SHM_CHILD, {"send", address.to_string(), std::to_string(nobody)});
    const auto line = child.read_line();
    CHECK_THAT(line, Catch::StartsWith("failed:") && Catch::Contains("rejected the connection") &&
                         Catch::Contains(fmt::format("runs as user {}", nobody)));
  }
  SECTION("unless trusted: the allow-list admits it (and it trusts root)") {
    // The listener's scheme trusts nobody; the child's own "shm-trust-root" trusts root.
    netio::register_backend("shm-trust-nobody", netio::shm_backend_factory({{nobody}, {}}));
    netio::LowLatencyReceiveSocket trusting(context, Endpoint::parse("shm-trust-nobody://netio-test:0"),
                                            counts.handler(), counts.options());
    auto address = trusting.local_endpoint();
    address.scheme = "shm-trust-root";
    ChildProcess child(NETIO_SHM_CHILD, {"send", address.to_string(), std::to_string(nobody)});
    CHECK(child.read_line() == "connected");
    CHECK(eventually([&] { return counts.messages.load() > 0; }));
  }
  CHECK(counts.connected.load() <= 1);
  CHECK(eventually([&] { return descriptors_open() <= descriptors + 3; }));  // the second listener's, at most
}

TEST_CASE("shm: a listener of another user is refused by the connector", "[shm]") {
  if (::geteuid() != 0) {
    WARN("skipped: running a peer as another user needs root");
    return;
  }
  ChildProcess child(NETIO_SHM_CHILD, {"receive", "netio-test", std::to_string(nobody)});
  const auto endpoint = child.read_line();
  REQUIRE_THAT(endpoint, Catch::StartsWith("shm://netio-test:"));
  netio::Context context;
  netio::LowLatencySendSocket sender(context, Endpoint::parse(endpoint));
  try {
    (void)sender.wait_connected(5s);
    FAIL("connected to a listener of user " << nobody);
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::handshake_rejected);
    CHECK_THAT(e.what(),
               Catch::Contains("the listener's process") && Catch::Contains(fmt::format("runs as user {}", nobody)));
  }
}

TEST_CASE("shm: a sender killed mid-stream (kill -9) is detected and its connection reclaimed", "[shm]") {
  const auto dev_shm = files_in_dev_shm();
  netio::Context context;
  CountingReceiver counts;
  netio::LowLatencyReceiveSocket receiver(context, Endpoint::parse("shm://netio-test:0"), counts.handler(),
                                          counts.options());
  const auto descriptors = descriptors_open();
  {
    ChildProcess child(NETIO_SHM_CHILD, {"send", receiver.local_endpoint().to_string()});
    REQUIRE(child.read_line() == "connected");
    REQUIRE(eventually([&] { return counts.messages.load() > 1000; }));
    CHECK(descriptors_open() > descriptors);
    CHECK(segments_mapped().size() == 1);  // the receiver's; the child maps the other
    child.kill();
  }
  CHECK(eventually([&] { return counts.disconnected.load() == 1; }));
  CHECK(eventually([&] { return descriptors_open() == descriptors; }));
  CHECK(eventually([&] { return segments_mapped().empty(); }));
  CHECK(files_in_dev_shm() == dev_shm);
}

TEST_CASE("shm: a receiver killed mid-stream (kill -9) fails the sender, whose descriptors are reclaimed", "[shm]") {
  const auto dev_shm = files_in_dev_shm();
  ChildProcess child(NETIO_SHM_CHILD, {"receive", "netio-test"});
  const auto endpoint = child.read_line();
  REQUIRE_THAT(endpoint, Catch::StartsWith("shm://netio-test:"));
  netio::Context context;
  const auto descriptors = descriptors_open();
  {
    netio::LowLatencySendSocket sender(context, Endpoint::parse(endpoint));
    REQUIRE(sender.wait_connected(5s));
    const std::vector<std::byte> message(1024, std::byte{1});
    for (int i = 0; i < 1000; ++i) sender.send(message);
    child.kill();
    // Sends throw once the connection is known lost: the failure is what counts.
    CHECK(eventually([&] {
      try {
        if (!sender.try_send(message)) std::this_thread::sleep_for(1ms);
      } catch (const netio::Error&) {
      }
      return sender.failure().has_value();
    }));
    CHECK(sender.failure()->code() == netio::Errc::disconnected);
  }
  CHECK(eventually([&] { return descriptors_open() == descriptors; }));
  CHECK(eventually([&] { return segments_mapped().empty(); }));
  CHECK(files_in_dev_shm() == dev_shm);
}

TEST_CASE("shm: 200 connections opened and closed leave no descriptor and no name behind", "[shm]") {
  netio::Context context;
  std::string name;
  const auto descriptors = descriptors_open();
  {
    CountingReceiver counts;
    netio::LowLatencyReceiveSocket receiver(context, Endpoint::parse("shm://netio-test:0"), counts.handler(),
                                            counts.options());
    name = name_of(receiver.local_endpoint());
    const std::vector<std::byte> message(100, std::byte{2});
    for (int i = 0; i < 200; ++i) {
      netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
      REQUIRE(sender.wait_connected(5s));
      sender.send(message);
      REQUIRE(sender.wait_sent(5s));
    }
    CHECK(eventually([&] { return counts.messages.load() == 200 && counts.disconnected.load() == 200; }));
  }
  CHECK(eventually([&] { return descriptors_open() == descriptors; }));
  CHECK(eventually([&] { return segments_mapped().empty(); }));
  CHECK_FALSE(abstract_name_bound(name));
}

namespace {

// A receiver whose handler holds the event loop on the first message until released: the
// sender (in a context of its own) writes on into the ring meanwhile, where the test can
// reach its entries before the receiver reads them.
struct HeldReceiver {
  std::atomic<bool> holding{false};
  std::atomic<bool> release{false};
  std::atomic<std::size_t> messages{0};
  std::mutex mutex;
  std::string failure;  // the disconnect's reason
  netio::LowLatencyReceiveOptions options() {
    netio::LowLatencyReceiveOptions o;
    o.events.on_disconnected = [this](const netio::Peer&, const netio::Error& e) {
      std::lock_guard lock(mutex);
      failure = e.what();
    };
    return o;
  }
  netio::LowLatencyReceiveSocket::Handler handler() {
    return [this](std::span<const std::byte>, const netio::Peer&) {
      if (messages++ == 0) {
        holding = true;
        while (!release) std::this_thread::sleep_for(1ms);
      }
    };
  }
  std::string reason() {
    std::lock_guard lock(mutex);
    return failure;
  }
};

struct SegmentView {
  explicit SegmentView(std::byte* start) : base(start) { std::memcpy(&header, start, sizeof header); }
  netio::shm::RingControl& data_control() const {
    return *reinterpret_cast<netio::shm::RingControl*>(base + netio::shm::data_control_offset);
  }
  std::byte* at(std::uint64_t index) const { return base + netio::shm::data_offset + index % header.data_capacity; }
  std::byte* base;
  netio::shm::SegmentHeader header{};
};

}  // namespace

TEST_CASE("shm: junk written into a live segment disconnects the peer that reads it, naming the link", "[shm]") {
  netio::Context receiving;
  netio::Context sending;
  HeldReceiver receiver_state;
  netio::LowLatencyReceiveSocket receiver(receiving, Endpoint::parse("shm://netio-test:0"), receiver_state.handler(),
                                          receiver_state.options());
  netio::LowLatencySendSocket sender(sending, receiver.local_endpoint());
  REQUIRE(sender.wait_connected(5s));
  const std::vector<std::byte> message(1000, std::byte{7});
  sender.send(message);
  REQUIRE(eventually([&] { return receiver_state.holding.load(); }));
  const auto mapped = segments_mapped();
  REQUIRE(mapped.size() == 2);
  const SegmentView segment(mapped.front());
  REQUIRE(segment.header.magic == netio::shm::segment_magic);
  auto& control = segment.data_control();
  // The entry being handled starts at the tail (everything before it came back).
  const std::uint64_t held = control.tail.load();
  // Read the producer's head first: it published the entry's header before it (the consumer's
  // tail alone does not order this thread after the sender's write while nothing was freed).
  REQUIRE(control.head.load() > held);
  std::uint64_t held_length = 0;
  std::memcpy(&held_length, segment.at(held), sizeof held_length);
  const std::uint64_t next = held + netio::shm::entry_size(held_length);

  SECTION("a length beyond the ring, read by the receiver") {
    sender.send(message);
    REQUIRE(sender.wait_sent(5s));
    REQUIRE(eventually([&] { return control.head.load() > next; }));
    const std::uint64_t junk = 1ull << 40;
    std::memcpy(segment.at(next), &junk, sizeof junk);
    receiver_state.release = true;
    REQUIRE(eventually([&] { return !receiver_state.reason().empty(); }));
    CHECK_THAT(receiver_state.reason(), Catch::Contains("corrupted the shared segment") &&
                                            Catch::Contains("an entry of 1099511627776 bytes") &&
                                            Catch::Contains(receiver.local_endpoint().to_string()));
    CHECK(receiver_state.messages.load() == 1);
    // The receiver's close ends the sender's connection too.
    CHECK(eventually([&] {
      try {
        sender.try_send(message);
      } catch (const netio::Error&) {
      }
      return sender.failure().has_value();
    }));
  }
  SECTION("a tail beyond the head, read by the sender") {
    control.tail.store(control.head.load() + (1u << 20));
    // The sender looks at the tail once its ring is past its first 64 KiB, or full.
    CHECK(eventually([&] {
      try {
        sender.try_send(message);
      } catch (const netio::Error&) {
      }
      return sender.failure().has_value();
    }));
    REQUIRE(sender.failure());
    CHECK(sender.failure()->code() == netio::Errc::protocol_error);
    CHECK_THAT(sender.failure()->what(),
               Catch::Contains("corrupted the shared segment") && Catch::Contains("outside what was produced"));
    receiver_state.release = true;
  }
  receiver_state.release = true;
}

TEST_CASE(
    "shm: a page of the sender's pool goes by reference, read in place, and is the sender's again once given back",
    "[shm]") {
  netio::Context receiving;
  netio::Context sending;
  netio::HighThroughputReceiveSocket receiver(receiving, Endpoint::parse("shm://netio-test:0"));
  netio::HighThroughputSendSocket sender(sending, receiver.local_endpoint(), four_pages(128 * 1024));  // a message each
  REQUIRE(sender.wait_connected(5s));
  const std::vector<std::byte> message(100 * 1024, std::byte{42});
  sender.send(message);
  sender.flush();
  auto received = receiver.recv(5s);
  REQUIRE(received);
  REQUIRE(received->size() == message.size());
  CHECK(std::equal(message.begin(), message.end(), received->bytes().begin()));
  // Where the sender wrote it: in its send area (mapped here twice, once per side).
  CHECK(send_areas_mapped().size() == 2);
  CHECK(in_a_send_area(received->data()));
  // Sent (flushed) as soon as it is in the ring...
  CHECK(sender.flush_and_wait(5s));
  // ...but held by the receiver, the page is not the sender's: with the other 3 held too,
  // the sender has none to fill.
  std::vector<netio::Message> held;
  held.push_back(std::move(*received));
  for (int i = 0; i < 3; ++i) {
    sender.send(message);
    sender.flush();
    auto next = receiver.recv(5s);
    REQUIRE(next);
    held.push_back(std::move(*next));
  }
  CHECK_FALSE(sender.try_send(message));
  held.clear();
  CHECK(eventually([&] { return sender.try_send(message); }));
  sender.flush();
  // Held while ten times the pool's pages go through the other three: pages come back in
  // any order (the ring, which frees in order, stays behind the held one).
  auto pinned = receiver.recv(5s);
  REQUIRE(pinned);
  for (int i = 0; i < 40; ++i) {
    sender.send(message);
    sender.flush();
    auto next = receiver.recv(5s);
    REQUIRE(next);
    CHECK(next->size() == message.size());
  }
  CHECK(std::equal(message.begin(), message.end(), pinned->bytes().begin()));
}

TEST_CASE("shm: a sender started before its receiver still lends its pages once connected", "[shm][connect_retry]") {
  netio::Context receiving;
  netio::Context sending;
  const auto at = Endpoint::parse(fmt::format("shm://netio-test-late-{}:7", ::getpid()));
  auto options = four_pages(128 * 1024);
  options.connect_timeout = 10s;
  netio::HighThroughputSendSocket sender(sending, at, options);  // nobody listens: it retries
  std::this_thread::sleep_for(50ms);                             // a few attempts fail
  netio::HighThroughputReceiveSocket receiver(receiving, at);
  REQUIRE(sender.wait_connected(10s));
  const std::vector<std::byte> message(100 * 1024, std::byte{7});
  sender.send(message);
  sender.flush();
  auto received = receiver.recv(5s);
  REQUIRE(received);
  REQUIRE(received->size() == message.size());
  CHECK(std::equal(message.begin(), message.end(), received->bytes().begin()));
  // Read where the sender wrote it, in its pool's send area: lent, not copied into the ring.
  CHECK(in_a_send_area(received->data()));
}

TEST_CASE("shm: a reference outside the sender's send area disconnects the receiver, naming the link", "[shm]") {
  netio::Context receiving;
  netio::Context sending;
  netio::HighThroughputReceiveOptions receive_options;
  std::mutex mutex;
  std::string reason;
  receive_options.events.on_disconnected = [&](const netio::Peer&, const netio::Error& error) {
    std::lock_guard lock(mutex);
    reason = error.what();
  };
  netio::HighThroughputReceiveSocket receiver(receiving, Endpoint::parse("shm://netio-test:0"), receive_options);
  netio::HighThroughputSendSocket sender(sending, receiver.local_endpoint(), four_pages(256 * 1024));
  REQUIRE(sender.wait_connected(5s));
  const std::vector<std::byte> message(64 * 1024, std::byte{42});
  sender.send(message);
  sender.flush();
  auto first = receiver.recv(5s);
  REQUIRE(first);
  // The first page came by reference, so the receiver has the sender's area. Write one
  // more reference entry into the ring as the sender would, naming bytes past the area's end.
  const auto mapped = segments_mapped();
  REQUIRE(mapped.size() == 2);
  const SegmentView segment(mapped.front());
  auto& control = segment.data_control();
  const std::uint64_t head = control.head.load();
  std::uint64_t kind = 0;
  std::memcpy(&kind, segment.at(head - netio::shm::entry_size(netio::shm::reference_payload_size)) + 8, sizeof kind);
  REQUIRE(kind == static_cast<std::uint64_t>(netio::shm::EntryKind::area_reference));
  const std::uint64_t header[2] = {netio::shm::reference_payload_size,
                                   static_cast<std::uint64_t>(netio::shm::EntryKind::area_reference)};
  const netio::shm::AreaReference junk{1ull << 40, 65536};
  std::memcpy(segment.at(head), header, sizeof header);
  std::memcpy(segment.at(head) + netio::shm::entry_header_size, &junk, sizeof junk);
  control.head.store(head + netio::shm::entry_size(netio::shm::reference_payload_size));
  // The receiver sleeps; the first page given back wakes it to look at the ring again.
  first.reset();
  REQUIRE(eventually([&] {
    std::lock_guard lock(mutex);
    return !reason.empty();
  }));
  std::lock_guard lock(mutex);
  CHECK_THAT(reason, Catch::Contains("corrupted the shared segment") &&
                         Catch::Contains("a reference to 65536 bytes at 1099511627776"));
}
