// SPDX-License-Identifier: MIT
// Writes the seed corpus of the fuzz targets: well-formed messages of every kind, made by
// the encoders themselves, plus a few near misses. Run by scripts/fuzz.sh --seeds; the
// output is kept in the repository (test/fuzz/corpus/<target>/).
//
//   netio_fuzz_seeds CORPUS_DIR
#include "backends/posix/wire.hpp"
#include "backends/shm/ring.hpp"
#include "backends/shm/segment.hpp"
#include "backends/shm/segment_passing.hpp"
#include "common/bench_message.hpp"
#include "control_message.hpp"
#include "handshake.hpp"
#include "introduction.hpp"
#include "netio/scheduled_push/wire.hpp"
#include "netio/scheduler/control_messages.hpp"
#include "page_format.hpp"
#ifdef NETIO_WITH_FABRIC
#include "backends/fabric/fabric_wire.hpp"
#endif

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::byte>;

fs::path corpus;

template <typename Container>
void write(const std::string& target, const std::string& name, const Container& bytes) {
  const fs::path dir = corpus / target;
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(std::data(bytes)), static_cast<std::streamsize>(std::size(bytes)));
}

Bytes text(std::string_view s) {
  Bytes b(s.size());
  if (!s.empty()) std::memcpy(b.data(), s.data(), s.size());
  return b;
}

// Input shaped for FuzzedDataProvider: ConsumeBytes() reads from the front, integers and
// bools from the back (the first one consumed is the last byte).
class ProviderInput {
 public:
  void boolean(bool value) { tail_.push_back(std::byte{value ? std::uint8_t{1} : std::uint8_t{0}}); }
  void integral(std::uint64_t min, std::uint64_t max, std::uint64_t value) {
    const std::uint64_t range = max - min;
    const std::uint64_t v = value - min;
    int n = 0;
    for (int offset = 0; offset < 64 && (range >> offset) > 0; offset += 8) ++n;
    for (int i = n - 1; i >= 0; --i) tail_.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
  }
  void bytes(std::span<const std::byte> b) { front_.insert(front_.end(), b.begin(), b.end()); }
  Bytes done() const {
    Bytes all = front_;
    all.insert(all.end(), tail_.rbegin(), tail_.rend());
    return all;
  }

 private:
  Bytes front_;
  Bytes tail_;
};

void handshake() {
  using namespace netio::detail;
  const auto ht = encode_hello({SocketKind::high_throughput_send, 1 << 20, protocol_version});
  const auto ll = encode_hello({SocketKind::low_latency_send, 0, protocol_version});
  write("handshake", "hello_ht", ht);
  write("handshake", "hello_ll", ll);
  write("handshake", "introduction",
        encode_introduction({"daq-node-1:4242", netio::Endpoint::parse("tcp://10.0.0.1:5000")}));
  write("handshake", "introduction_no_endpoint", encode_introduction({"x", std::nullopt}));
  write("handshake", "posix_request", netio::posix::encode_request(4096, ht));
  write("handshake", "posix_reply_accept", netio::posix::encode_reply({true, 1 << 20, "", {}}));
  write("handshake", "posix_reply_reject",
        netio::posix::encode_reply({false, 0, "the peer is a low-latency send socket", {}}));
}

void page_parser() {
  // Round trip (first bool true): page size, then messages.
  ProviderInput round_trip;
  round_trip.boolean(true);
  round_trip.integral(netio::detail::message_header_size, 4096, 64);
  for (std::size_t size : {0, 5, 56, 57, 100, 200}) {
    round_trip.integral(0, 3 * 64, size);
    round_trip.bytes(text(std::string(size, 'm')));
  }
  write("page_parser", "round_trip", round_trip.done());
  // Arbitrary pages (first bool false): a message spanning three pages, joined in spare room.
  ProviderInput pages;
  pages.boolean(false);
  pages.integral(0, 4 << 20, 1 << 20);
  Bytes page(8 + 10);
  page[0] = std::byte{30};  // a 30-byte message, 10 bytes in this page
  for (int i = 0; i < 3; ++i) {
    const Bytes& p = i == 0 ? page : text(std::string(10, 'p'));
    pages.integral(0, 70000, p.size());
    pages.bytes(p);
    pages.integral(0, 70000, i == 0 ? 64 : 0);
  }
  write("page_parser", "spanning_pages", pages.done());
}

void pubsub_control() {
  namespace d = netio::pubsub::detail;
  using netio::pubsub::Backpressure;
  using netio::pubsub::Mode;
  write("pubsub_control", "subscribe",
        d::encode(d::SubscriptionRequest{
            true, Mode::high_throughput, Backpressure::block, 7, {0x101, 0x102}, "tcp://10.0.0.2:6001"}));
  write("pubsub_control", "unsubscribe",
        d::encode(d::SubscriptionRequest{false, Mode::low_latency, Backpressure::drop, 8, {2}, ""}));
  write("pubsub_control", "answer_accept", d::encode(d::SubscriptionAnswer{true, 7, ""}));
  write("pubsub_control", "answer_refuse", d::encode(d::SubscriptionAnswer{false, 9, "no such mode"}));
  write("pubsub_control", "drops", d::encode(d::DropReport{Mode::high_throughput, 3, 1000}));
}

void scheduled_push_wire() {
  namespace sp = netio::scheduled_push;
  sp::Hello hello;
  hello.input = 1;
  hello.compute = 2;
  hello.input_count = 4;
  hello.compute_count = 4;
  hello.timeslices_per_interval = 400;
  hello.max_contribution_bytes = 1 << 20;
  write("scheduled_push_wire", "hello", sp::encode(hello));
  write("scheduled_push_wire", "contribution", sp::encode_contribution(1, 42, text("contribution bytes")));
  write("scheduled_push_wire", "welcome", sp::encode(sp::Welcome{2, 16}));
  write("scheduled_push_wire", "refusal", sp::encode_refusal("configuration mismatch"));
  write("scheduled_push_wire", "acknowledgement", sp::encode_acknowledgement(42));
  write("scheduled_push_wire", "credit", sp::encode(sp::Credit{42, false}));
}

void scheduler_control() {
  namespace s = netio::scheduler;
  using std::chrono::nanoseconds;
  write("scheduler_control", "report",
        s::encode(s::MetadataReport{1, 5, nanoseconds(1000), nanoseconds(500), nanoseconds(20), nanoseconds(450)}));
  write("scheduler_control", "report_unpaced",
        s::encode(s::MetadataReport{1, 0, nanoseconds(0), nanoseconds(500), nanoseconds(20), std::nullopt}));
  write("scheduler_control", "request", s::encode(s::ProposalRequest{3, 7}));
  write("scheduler_control", "proposal", s::encode(s::Proposal{7, nanoseconds(123456), nanoseconds(1000)}));
}

void strings() {
  int n = 0;
  for (const char* s : {"tcp://127.0.0.1:5000", "fabric://[::1]:0?provider=tcp", "tcp://daq-node-2:65535", "64", "4KiB",
                        "1.5MiB", "500ms", "2s", "0.5us", "10", "delay=lognormal:mean=50us,sigma=0.8;rate=10Gbps",
                        "delay=uniform:min=0us,max=100us,correlation=25%;seed=7",
                        "node=2;out=10Gbps;slowdown=node:2,at=10s,for=5s,rate=25%",
                        "slowdown=link:10.0.0.7:5000,at=1s,for=2s,every=10s,delay=2ms", "in=1.25GB/s,burst=64KiB",
                        "delay=pareto:mean=50us,shape=2.5,clip=2ms", "shm://daq-node_1.readout:0"}) {
    write("strings", "seed_" + std::to_string(++n), text(s));
  }
}

void bench_stream() {
  using namespace netio::tools;
  ProviderInput in;
  in.boolean(true);  // verify
  const RunKey key{0, 64};
  auto frame = [&](const auto& bytes) {
    in.integral(0, 256, bytes.size());
    in.bytes(std::span<const std::byte>(bytes.data(), bytes.size()));
  };
  frame(encode_run_begin(key, 3));
  DataMessageBuilder builder(key, PayloadMode::per_message);
  for (std::uint64_t sequence = 0; sequence < 3; ++sequence) {
    const auto message = builder.stamp(sequence);
    frame(Bytes(message.begin(), message.end()));
  }
  frame(encode_run_end(key, 3));
  frame(encode_end_of_stream(1));
  write("bench_stream", "one_run", in.done());
}

// fuzz_shm_control: the first byte picks the part (0 message, 1 header, 2 ring).
void shm_control() {
  namespace shm = netio::shm;
  Bytes message{std::byte{0}};
  for (const char c : shm::segment_message) message.push_back(static_cast<std::byte>(c));
  write("shm_control", "segment_message", message);

  Bytes header{std::byte{1}};
  const auto put = [](Bytes& out, auto value) {
    const auto* p = reinterpret_cast<const std::byte*>(&value);
    out.insert(out.end(), p, p + sizeof value);
  };
  constexpr std::uint64_t data = 4096, reply = 1024;
  put(header, shm::SegmentHeader{shm::segment_magic, shm::segment_version, data, reply});
  put(header, std::uint8_t{7});                                // sealed against growing, shrinking, sealing
  put(header, static_cast<std::uint16_t>(64 + data + reply));  // the file: data_offset + both rings
  put(header, std::uint16_t{8192});                            // the rings the connector allows
  put(header, std::uint16_t{4096});
  write("shm_control", "segment_header", header);

  Bytes ring{std::byte{2}};
  put(ring, std::uint8_t{2});     // 256-byte ring
  put(ring, std::uint16_t{100});  // payloads of up to 100 bytes
  ring.resize(ring.size() + 256);
  for (int i = 0; i < 6; ++i) {  // push (tail 0), read and free, again (wraps)
    put(ring, std::uint8_t{4});
    put(ring, std::uint64_t{0});
    put(ring, std::uint8_t{90});
    put(ring, std::uint8_t{3 | 0x80});
  }
  write("shm_control", "ring", ring);
}

#ifdef NETIO_WITH_FABRIC
void fabric_wire() {
  namespace f = netio::fabric::wire;
  const auto hello =
      netio::detail::encode_hello({netio::detail::SocketKind::low_latency_send, 0, netio::detail::protocol_version});
  write("fabric_wire", "connect", f::encode_connect(hello));
  write("fabric_wire", "connect_replies", f::encode_connect(hello, {4096, 8}));
  write("fabric_wire", "accept", f::encode_accept({1 << 20, 16}));
  write("fabric_wire", "reject", f::encode_reject("the peer is a low-latency send socket", 56));
  std::array<std::byte, f::backward_header_size> header{};
  f::encode_backward_header(header.data(), {f::BackwardKind::credits, 0, 5});
  write("fabric_wire", "credits", header);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: netio_fuzz_seeds CORPUS_DIR\n");
    return 2;
  }
  corpus = argv[1];
  handshake();
  page_parser();
  pubsub_control();
  scheduled_push_wire();
  scheduler_control();
  strings();
  bench_stream();
  shm_control();
#ifdef NETIO_WITH_FABRIC
  fabric_wire();
#endif
  return 0;
}
