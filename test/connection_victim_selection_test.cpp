// SPDX-License-Identifier: MIT
// Victim selection (LRU and LRU-M) as pure logic, on scripted sequences whose victims were
// worked out by hand.
#include "netio/error.hpp"
#include "victim_selector.hpp"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace {

using netio::ConnectionPolicy;
using netio::detail::VictimSelector;

// Replays `accesses` (one letter per message, 'A' is peer 0) with at most `limit` open
// connections, as the connection manager does: a peer not open is opened, after tearing
// down the selector's victim when the limit is reached. Returns the victims as letters.
std::string victims_of(ConnectionPolicy policy, std::size_t limit, const std::string& accesses) {
  VictimSelector selector(policy);
  std::string victims;
  for (const char c : accesses) {
    const auto peer = static_cast<VictimSelector::PeerId>(c - 'A');
    if (selector.is_open(peer)) {
      selector.used(peer);
      continue;
    }
    if (selector.open_count() == limit) {
      const auto victim = selector.victim();
      REQUIRE(victim);
      selector.torn_down(*victim);
      victims.push_back(static_cast<char>('A' + *victim));
    }
    selector.opened(peer);
  }
  return victims;
}

}  // namespace

TEST_CASE("LRU tears down the least recently used connection", "[connections][unit]") {
  VictimSelector lru(ConnectionPolicy::lru);
  CHECK_FALSE(lru.victim());
  lru.opened(1);
  lru.opened(2);
  lru.opened(3);  // most recent first: 3 2 1
  CHECK(lru.victim() == 1u);
  lru.used(1);  // 1 3 2
  CHECK(lru.victim() == 2u);
  lru.torn_down(2);  // 1 3
  CHECK(lru.open_count() == 2);
  CHECK(lru.tear_downs(2) == 1);
  CHECK(lru.victim() == 3u);
  lru.opened(4);  // 4 1 3
  CHECK(lru.victim() == 3u);
  // A peer that may not go now (a sender is using it) is skipped for the next oldest.
  CHECK(lru.victim([](VictimSelector::PeerId p) { return p != 3; }) == 1u);
  CHECK_FALSE(lru.victim([](VictimSelector::PeerId) { return false; }));
  lru.closed(3);  // closed without a tear-down: not counted
  CHECK(lru.tear_downs(3) == 0);
  CHECK(lru.victim() == 1u);
  lru.used(3);  // closed peers are not made open by use
  CHECK_FALSE(lru.is_open(3));
  // LRU ignores the tear-down history: 2, torn down before, is the victim once oldest.
  lru.opened(2);  // 2 4 1
  lru.used(4);
  lru.used(1);  // 1 4 2
  CHECK(lru.victim() == 2u);
}

TEST_CASE("LRU-M tears down the least recently used of the peers torn down least often", "[connections][unit]") {
  VictimSelector m(ConnectionPolicy::lru_m);
  m.opened(1);
  m.opened(2);
  m.opened(3);  // queue 0: 3 2 1
  CHECK(m.victim() == 1u);
  m.torn_down(1);  // count(1) = 1
  m.opened(1);     // queue 1: 1
  m.opened(4);     // queue 0: 4 3 2
  m.used(2);
  m.used(3);
  m.used(4);                // queue 0: 4 3 2; 1 is the least recently used of all
  CHECK(m.victim() == 2u);  // LRU would say 1
  m.torn_down(2);
  m.torn_down(3);
  m.torn_down(4);  // queue 0 empty; queue 1: 1
  CHECK(m.victim() == 1u);
  m.opened(2);  // count(2) = 1: queue 1: 2 1
  CHECK(m.victim() == 1u);
  m.torn_down(1);  // count(1) = 2
  m.opened(1);     // queue 2: 1; queue 1: 2
  m.used(1);
  CHECK(m.victim() == 2u);  // 2 was opened before 1, and its queue is lower anyway
  m.used(2);                // 2 is the most recent now, still the victim: fewer tear-downs
  CHECK(m.victim() == 2u);
  CHECK(m.victim([](VictimSelector::PeerId p) { return p != 2; }) == 1u);
  CHECK(m.tear_downs(1) == 2);
  CHECK(m.tear_downs(4) == 1);
}

TEST_CASE("LRU and LRU-M on scripted access sequences", "[connections][unit]") {
  // Two connections at most. A B A C A B C A: both pick B C A B.
  CHECK(victims_of(ConnectionPolicy::lru, 2, "ABACABCA") == "BCAB");
  CHECK(victims_of(ConnectionPolicy::lru_m, 2, "ABACABCA") == "BCAB");
  // A B C A D E A: LRU tears A down twice (A B C A D). LRU-M, once A came back after its
  // first tear-down, keeps it open and takes the once-met peers instead (A B C D), and A is
  // still open for its third use.
  CHECK(victims_of(ConnectionPolicy::lru, 2, "ABCADEA") == "ABCAD");
  CHECK(victims_of(ConnectionPolicy::lru_m, 2, "ABCADEA") == "ABCD");
  // Three connections, a hot peer A among others met once each: LRU tears A down whenever
  // three others came between, LRU-M only the first time.
  //   LRU:   A B C D(-A) A(-B) E(-C) F(-D) G(-A) A(-E)         victims A B C D A E
  //   LRU-M: A B C D(-A) A(-B) E(-C) F(-D) G(-E, A is in queue 1) A(open)  victims A B C D E
  CHECK(victims_of(ConnectionPolicy::lru, 3, "ABCDAEFGA") == "ABCDAE");
  CHECK(victims_of(ConnectionPolicy::lru_m, 3, "ABCDAEFGA") == "ABCDE");
  // Never more open than the limit, and every peer fits when the limit is large.
  CHECK(victims_of(ConnectionPolicy::lru, 8, "ABCDEFGH").empty());
  CHECK(victims_of(ConnectionPolicy::lru_m, 8, "ABCDEFGHABCDEFGH").empty());
}

TEST_CASE("Connection policies by name", "[connections][unit]") {
  CHECK(netio::parse_connection_policy("lru") == ConnectionPolicy::lru);
  CHECK(netio::parse_connection_policy("lru-m") == ConnectionPolicy::lru_m);
  CHECK(netio::to_string(ConnectionPolicy::lru_m) == "lru-m");
  try {
    (void)netio::parse_connection_policy("fifo");
    FAIL("an unknown policy parsed");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::invalid_option);
    CHECK_THAT(e.what(), Catch::Contains("connection policy 'fifo'"));
  }
}
