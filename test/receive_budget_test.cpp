// SPDX-License-Identifier: MIT
// The receive-memory budget (netio/receive_budget.hpp): the receiver, not its senders,
// bounds what it holds for them.
#include "budget_charge.hpp"
#include "netio/internal/little_endian.hpp"
#include "page_format.hpp"
#include "support/pinned_buffers_backend.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include "netio/high_throughput_socket.hpp"
#include "netio/low_latency_socket.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>

using netio::Endpoint;
using Accounting = netio::detail::BudgetAccounting;  // what the sockets count, which applications only read
using netio::test::eventually;
using netio::test::pattern;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * KiB;

// A page holding one message's length and the first bytes of its body.
std::vector<std::byte> page_starting(std::uint64_t length, std::size_t body_bytes) {
  std::vector<std::byte> page(8 + body_bytes, std::byte{7});
  netio::detail::store_le<std::uint64_t>(page.data(), length);
  return page;
}

// A 3000-byte message in two pages (its length and 1000 bytes, then 2000 bytes): the parser
// reassembles it. begin_3000() feeds the first page, end_3000() the second.
const std::vector<std::byte>& first_of_3000() {
  static const auto page = page_starting(3000, 1000);
  return page;
}
void begin_3000(netio::detail::PageParser& parser) {
  parser.set_page(first_of_3000());
  REQUIRE(parser.next() == netio::detail::PageParser::Result::need_page);
}
void end_3000(netio::detail::PageParser& parser) {
  static const std::vector<std::byte> rest(2000, std::byte{2});
  parser.set_page(rest);
  REQUIRE(parser.next() == netio::detail::PageParser::Result::message);
  REQUIRE(parser.reassembled());
}

netio::HighThroughputSendOptions pages_of(std::size_t page_size, std::size_t count = 4) {
  netio::HighThroughputSendOptions options;
  options.page_size = page_size;
  options.page_count = count;
  return options;
}

}  // namespace

TEST_CASE("a receive budget counts what fits, refuses what does not, and keeps its peak", "[budget]") {
  netio::ReceiveBudget budget(100);
  CHECK(Accounting::try_take(budget, 60));
  CHECK_FALSE(Accounting::try_take(budget, 41));
  CHECK(budget.used() == 60);
  CHECK(Accounting::try_take(budget, 40));
  CHECK(budget.available() == 0);
  Accounting::give_back(budget, 70);
  CHECK(budget.used() == 30);
  CHECK(budget.peak() == 100);
  CHECK_FALSE(Accounting::try_take(budget, std::size_t(-1)));  // no wrap-around
}

TEST_CASE("reassembly memory grows with the bytes received, not with the length field", "[budget]") {
  auto budget = std::make_shared<netio::ReceiveBudget>(1024 * MiB);
  netio::detail::PageParser parser(512 * MiB, budget);
  // A peer announces a 200 MiB message and sends 100 bytes of it.
  const auto first = page_starting(200 * MiB, 100);
  parser.set_page(first);
  REQUIRE(parser.next() == netio::detail::PageParser::Result::need_page);
  CHECK(budget->used() <= 2 * 100);
  const std::vector<std::byte> more(1000, std::byte{1});
  parser.set_page(more);
  REQUIRE(parser.next() == netio::detail::PageParser::Result::need_page);
  CHECK(budget->used() >= 1100);
  CHECK(budget->used() <= 2 * 1100);
}

TEST_CASE("a reassembled message is counted until it is handed out", "[budget]") {
  auto budget = std::make_shared<netio::ReceiveBudget>(MiB);
  netio::detail::PageParser parser(MiB, budget);
  begin_3000(parser);
  end_3000(parser);
  CHECK(budget->used() >= 3000);
  const auto message = parser.take_reassembled();
  CHECK(message.size() == 3000);
  CHECK(budget->used() == 0);
}

TEST_CASE("the memory a reassembly leaves as the spare is counted whole until a reassembly takes it", "[budget]") {
  auto budget = std::make_shared<netio::ReceiveBudget>(MiB);
  netio::detail::ReassemblySpare spare;
  // A connection whose buffers the budget counts already with 1000 bytes of reassembly room.
  netio::detail::PageParser parser(MiB, budget, 1000, &spare);
  begin_3000(parser);
  end_3000(parser);
  const std::size_t capacity = 3000;  // doubling from a 1008-byte buffer, capped at the length
  CHECK(budget->used() == capacity - 1000);
  parser.recycle_reassembled();
  CHECK(spare.capacity() == capacity);
  CHECK(budget->used() == capacity);  // idle, it is nobody's reassembly room

  // The next reassembly takes it back and counts only what exceeds its room.
  begin_3000(parser);
  CHECK(spare.capacity() == 0);
  CHECK(budget->used() == capacity - 1000);
  end_3000(parser);
  CHECK(parser.take_reassembled().size() == 3000);
  CHECK(budget->used() == 0);

  SECTION("a spare the budget cannot count whole is freed") {
    begin_3000(parser);
    end_3000(parser);
    const std::size_t others = budget->available() - 10;  // others take nearly all that is left
    REQUIRE(Accounting::try_take(*budget, others));
    parser.recycle_reassembled();
    CHECK(spare.capacity() == 0);
    CHECK(budget->used() == others);  // the reassembly's own charge given back too
  }
}

TEST_CASE("a parser whose reassembly went to the spare still counts its next one", "[budget]") {
  auto budget = std::make_shared<netio::ReceiveBudget>(MiB);
  netio::detail::ReassemblySpare spare;
  netio::detail::PageParser one(MiB, budget, 0, &spare), other(MiB, budget, 0, &spare);
  auto reassemble = [](netio::detail::PageParser& parser) {
    begin_3000(parser);
    end_3000(parser);
  };
  reassemble(one);
  one.recycle_reassembled();
  reassemble(other);  // takes the spare
  CHECK(spare.capacity() == 0);
  reassemble(one);  // in memory of its own, counted as before
  CHECK(budget->used() == 2 * 3000);
  CHECK(one.take_reassembled().size() == 3000);
  CHECK(other.take_reassembled().size() == 3000);
  CHECK(budget->used() == 0);
}

TEST_CASE("a message whose reassembly does not fit the budget is an error naming the budget", "[budget]") {
  auto budget = std::make_shared<netio::ReceiveBudget>(16 * KiB);
  std::optional<netio::detail::PageParser> parser(std::in_place, MiB, budget);
  const auto first = page_starting(100 * KiB, 4 * KiB);
  parser->set_page(first);
  REQUIRE(parser->next() == netio::detail::PageParser::Result::need_page);
  const std::vector<std::byte> chunk(8 * KiB, std::byte{3});
  netio::detail::PageParser::Result result = netio::detail::PageParser::Result::need_page;
  for (int i = 0; i < 12 && result == netio::detail::PageParser::Result::need_page; ++i) {
    parser->set_page(chunk);
    result = parser->next();
  }
  REQUIRE(result == netio::detail::PageParser::Result::error);
  CHECK_THAT(parser->error(), Catch::Contains("102400-byte message") && Catch::Contains("memory budget"));
  CHECK(budget->used() <= budget->limit());
  parser.reset();
  CHECK(budget->used() == 0);
}

// Where the back-end holds its buffers from the accept (libfabric on a provider that pins
// registered memory, verbs: a decorator says so over the tcp provider); the charge as
// buffers fill is tested in idle_peers_budget_test.cpp.
bool posts_buffers(const std::string& base) { return base.rfind("fabric://", 0) == 0; }

TEST_CASE(
    "a receive socket's budget cuts credits, then rejects senders with the reason, and takes them again "
    "when room comes back",
    "[budget][integration]") {
  const std::string text = GENERATE(netio::test::loopback_endpoints());
  if (!posts_buffers(text)) return;
  const auto base = Endpoint::parse(text);
  netio::Context context(netio::test::pin_receive_buffers(netio::test::context_options()));
  constexpr std::size_t page = 64 * KiB;
  netio::HighThroughputReceiveOptions options;
  options.page_credits = 4;                         // 4 pages and one to reassemble in: 320 KiB per connection
  options.memory_budget = 2 * 5 * page + 3 * page;  // two whole connections, 2 credits for a third
  netio::HighThroughputReceiveSocket receiver(context, base, options);
  const auto& budget = receiver.memory_budget();

  std::vector<std::unique_ptr<netio::HighThroughputSendSocket>> senders;
  for (int i = 0; i < 3; ++i) {
    senders.push_back(
        std::make_unique<netio::HighThroughputSendSocket>(context, receiver.local_endpoint(), pages_of(page)));
    REQUIRE(senders.back()->wait_connected(10s));
    // Each sends: a silent one would be evicted to make room for the next.
    senders.back()->send(pattern(KiB, 99));
    senders.back()->flush();
    REQUIRE(receiver.recv(10s));
  }
  CHECK(budget.used() == options.memory_budget);  // the third got two credits

  netio::HighThroughputSendSocket refused(context, receiver.local_endpoint(), pages_of(page));
  try {
    if (!refused.wait_connected(10s)) FAIL("timed out");
    FAIL("a sender beyond the budget was accepted");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::handshake_rejected);
    CHECK_THAT(e.what(), Catch::Contains("memory budget is used up"));
  }
  CHECK(budget.refusals() == 1);

  // The senders within the budget, the one with fewer credits too, deliver everything, in
  // order per sender.
  constexpr std::uint64_t per_sender = 300;
  auto message = [](std::uint64_t s, std::uint64_t i) {
    auto m = pattern(10 * KiB, s * 1000 + i);
    std::memcpy(m.data(), &s, 8);
    std::memcpy(m.data() + 8, &i, 8);
    return m;
  };
  std::vector<std::thread> threads;
  for (std::uint64_t s = 0; s < senders.size(); ++s) {
    threads.emplace_back([&, s] {
      for (std::uint64_t i = 0; i < per_sender; ++i) senders[s]->send(message(s, i));
      senders[s]->flush();
    });
  }
  std::array<std::uint64_t, 3> next{};
  std::size_t broken = 0;
  for (std::uint64_t k = 0; k < 3 * per_sender; ++k) {
    auto m = receiver.recv(20s);
    INFO("message " << k << " of " << 3 * per_sender);
    REQUIRE(m);
    REQUIRE(m->size() == 10 * KiB);
    std::uint64_t s = 0;
    std::memcpy(&s, m->data(), 8);
    REQUIRE(s < 3);
    const auto expected = message(s, next[s]++);
    if (!std::equal(m->bytes().begin(), m->bytes().end(), expected.begin(), expected.end())) ++broken;
  }
  for (auto& t : threads) t.join();
  CHECK(broken == 0);

  // A sender that leaves gives its share back: a new one fits again.
  senders.front().reset();
  REQUIRE(eventually([&] { return budget.used() == options.memory_budget - 5 * page; }));
  netio::HighThroughputSendSocket late(context, receiver.local_endpoint(), pages_of(page));
  REQUIRE(late.wait_connected(10s));
  CHECK(budget.used() == options.memory_budget);
}

TEST_CASE("receive sockets given one shared budget are bounded together", "[budget][integration]") {
  const std::string text = GENERATE(netio::test::loopback_endpoints());
  if (!posts_buffers(text)) return;
  const auto base = Endpoint::parse(text);
  netio::Context context(netio::test::pin_receive_buffers(netio::test::context_options()));
  auto shared = std::make_shared<netio::ReceiveBudget>(4 * 64 * KiB);
  netio::LowLatencyReceiveOptions low_options;
  low_options.max_message_size = 64 * KiB;
  low_options.receive_credits = 2;  // 128 KiB
  low_options.shared_budget = shared;
  netio::LowLatencyReceiveSocket low(
      context, base, [](auto, const netio::Peer&) {}, low_options);
  netio::HighThroughputReceiveOptions high_options;
  high_options.page_credits = 2;
  high_options.shared_budget = shared;
  netio::HighThroughputReceiveSocket high(context, base, high_options);
  CHECK(&low.memory_budget() == shared.get());

  netio::LowLatencySendSocket low_sender(context, low.local_endpoint());
  REQUIRE(low_sender.wait_connected(10s));
  CHECK(shared->used() == 128 * KiB);
  low_sender.send(pattern(KiB, 1));  // a sender that sends is not evicted for the next
  REQUIRE(eventually([&] { return low.stats().messages == 1; }));
  netio::HighThroughputSendSocket high_sender(context, high.local_endpoint(), pages_of(64 * KiB));
  REQUIRE(high_sender.wait_connected(10s));  // one of its two credits fits, with its reassembly room
  CHECK(shared->used() == 4 * 64 * KiB);
  high_sender.send(pattern(KiB, 2));
  high_sender.flush();
  REQUIRE(high.recv(10s));
  netio::HighThroughputSendSocket second(context, high.local_endpoint(), pages_of(64 * KiB));
  CHECK_THROWS_WITH(second.wait_connected(10s), Catch::Contains("memory budget"));
}

TEST_CASE("a sender whose message does not fit the reassembly budget is dropped, another sender is not disturbed",
          "[budget][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  constexpr std::size_t page = 16 * KiB;
  netio::HighThroughputReceiveOptions options;
  options.page_credits = 4;
  options.memory_budget = 2 * 5 * page + 32 * KiB;  // two connections, 32 KiB more to reassemble in
  netio::HighThroughputReceiveSocket receiver(context, base, options);

  auto big_options = pages_of(page, 16);                                      // the 100 KiB message is queued whole
  big_options.zero_copy_threshold = std::numeric_limits<std::size_t>::max();  // copied into pages
  netio::HighThroughputSendSocket big(context, receiver.local_endpoint(), big_options);
  netio::HighThroughputSendSocket small(context, receiver.local_endpoint(), pages_of(page));
  REQUIRE(big.wait_connected(10s));
  REQUIRE(small.wait_connected(10s));
  // The small sender has sent before: a peer that has sent no data is the receiver's to evict
  // for one that sends (ReceiveConnections::evict_silent), which on a loaded machine the big
  // sender's pages would make it do.
  small.send(pattern(1000, 99));
  small.flush();
  auto first = receiver.recv(10s);
  REQUIRE(first);
  CHECK(std::vector<std::byte>(first->bytes().begin(), first->bytes().end()) == pattern(1000, 99));

  // 20 KiB spans two pages and fits (a page's room comes with the connection); 100 KiB does not.
  big.send(pattern(20 * KiB, 1));
  big.flush();
  auto fits = receiver.recv(10s);
  REQUIRE(fits);
  CHECK(std::vector<std::byte>(fits->bytes().begin(), fits->bytes().end()) == pattern(20 * KiB, 1));
  big.send(pattern(100 * KiB, 2));
  big.flush();
  REQUIRE(eventually([&] {
    if (auto m = receiver.try_recv()) FAIL("the oversized message was delivered");
    return receiver.stats().disconnects == 1;
  }));

  constexpr std::uint64_t n = 200;
  std::string send_error;
  std::thread sending([&] {
    try {
      for (std::uint64_t i = 0; i < n; ++i) small.send(pattern(1000, 100 + i));
      small.flush();
    } catch (const std::exception& e) {
      send_error = e.what();
    }
  });
  std::size_t broken = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    auto m = receiver.recv(10s);
    if (!m) break;
    const auto expected = pattern(1000, 100 + i);
    if (!std::equal(m->bytes().begin(), m->bytes().end(), expected.begin(), expected.end())) ++broken;
  }
  sending.join();
  CHECK(send_error.empty());
  CHECK(broken == 0);
  CHECK(receiver.stats().messages == 2 + n);
  CHECK(receiver.memory_budget().used() <= options.memory_budget);
}
