// SPDX-License-Identifier: MIT
// The fat-tree on ns-3 (fat_tree_fabric.hpp). Compiled as C++17: ns-3 3.37's headers are not
// C++20 code. Nothing of ns-3 leaves this file.
#include "fat_tree_fabric.hpp"

#include <ns3/core-module.h>
#include <ns3/internet-module.h>
#include <ns3/network-module.h>
#include <ns3/point-to-point-module.h>
#include <ns3/traffic-control-module.h>

#include <algorithm>
#include <deque>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace netio::fabric_model {
namespace {

bool fabric_exists = false;  // ns-3's simulator is one per process

// IPv4 (20) and TCP with the timestamp option ns-3 sends (32): what a segment leaves of the MTU.
constexpr std::size_t header_bytes = 52;
// A receiver listens on first_port + channel * hosts + sender: the port names the connection.
constexpr std::size_t first_port = 1024;
constexpr std::size_t max_hosts = (65535 - first_port) / FatTreeFabric::channels;
// The control lane (FatTreeConfig::control_lane): every port's PrioQueueDisc classifies a
// packet by its TCP ports (ControlLaneFilter): channel 1's connections (either direction,
// their ACKs too) into band 0, served first, everything else into band 1. (ns-3's sockets
// attach a priority tag, and an IP TOS when asked, but neither reaches the switches' queue
// discs for the data segments of a connection.)
class ControlLaneFilter : public ns3::Ipv4PacketFilter {
 public:
  static ns3::TypeId GetTypeId() {
    static ns3::TypeId tid = ns3::TypeId("netio::fabric_model::ControlLaneFilter")
                                 .SetParent<ns3::Ipv4PacketFilter>()
                                 .SetGroupName("netio")
                                 .AddConstructor<ControlLaneFilter>();
    return tid;
  }
  // Channel 1's listening ports: [first, end).
  void set_ports(std::uint16_t first, std::uint16_t end) {
    first_ = first;
    end_ = end;
  }

 private:
  std::int32_t DoClassify(ns3::Ptr<ns3::QueueDiscItem> item) const override {
    ns3::TcpHeader tcp;
    if (item->GetPacket()->PeekHeader(tcp) == 0) return 1;
    auto control = [this](std::uint16_t port) { return port >= first_ && port < end_; };
    return control(tcp.GetDestinationPort()) || control(tcp.GetSourcePort()) ? 0 : 1;
  }

  std::uint16_t first_ = 0, end_ = 0;
};

ns3::Time to_ns3(SimTime t) { return ns3::NanoSeconds(t.count()); }
SimTime from_ns3(ns3::Time t) { return SimTime(t.GetNanoSeconds()); }

std::string bytes_size(std::size_t bytes) { return std::to_string(bytes) + "B"; }

void check(const FatTreeConfig& c) {
  auto require = [](bool ok, const char* what) {
    if (!ok) throw std::invalid_argument(std::string("FatTreeConfig: ") + what);
  };
  require(c.leaves > 0 && c.hosts_per_leaf > 0 && c.spines > 0, "leaves, hosts_per_leaf and spines must be > 0");
  require(c.leaves * c.hosts_per_leaf <= max_hosts, "too many hosts (one TCP port per sender)");
  require(c.host_link_bits_per_second > 0 && c.uplink_bits_per_second > 0, "link rates must be > 0");
  require(c.link_delay.count() >= 0, "link_delay must be >= 0");
  require(c.mtu_bytes > header_bytes && c.mtu_bytes <= 65535, "mtu_bytes must be in (52, 65535]");
  require(c.port_buffer_bytes >= c.mtu_bytes && c.host_buffer_bytes >= c.mtu_bytes,
          "port_buffer_bytes and host_buffer_bytes must hold at least one packet (mtu_bytes)");
  require(c.tcp_min_rto.count() > 0, "tcp_min_rto must be > 0");
}

}  // namespace

// One ordered pair of hosts: a TCP connection and the messages queued on it. Messages are
// byte ranges of the stream; a message is delivered when the receiver has read up to its end.
struct Connection {
  ns3::Ptr<ns3::Socket> sender;
  ns3::Ptr<ns3::Socket> receiver;
  bool connected = false;
  std::uint64_t queued = 0;                                                // bytes of every message sent so far
  std::uint64_t written = 0;                                               // bytes handed to the sending socket
  std::uint64_t received = 0;                                              // bytes read by the receiving socket
  std::deque<std::pair<std::uint64_t, FatTreeFabric::Delivered>> pending;  // end offset, callback
};

struct FatTreeFabric::Impl {
  FatTreeConfig config;
  ns3::NodeContainer hosts, leaves, spines;
  std::vector<ns3::Ipv4Address> host_address;
  std::map<std::tuple<std::size_t, std::size_t, std::size_t>, std::unique_ptr<Connection>> connections;
  FabricCounters counters;

  explicit Impl(const FatTreeConfig& c) : config(c) {}

  void build();
  void add_routes(const std::vector<std::vector<std::pair<ns3::Ipv4Address, std::uint32_t>>>& leaf_uplinks,
                  const std::vector<std::vector<std::pair<ns3::Ipv4Address, std::uint32_t>>>& spine_downlinks,
                  const std::vector<ns3::Ipv4Address>& host_gateway);
  void count_packets(ns3::NetDeviceContainer devices);
  void install_lanes(ns3::Ptr<ns3::NetDevice> device, std::size_t band_bytes);
  Connection& connection(std::size_t from, std::size_t to, std::size_t channel);
  void pump(Connection& c);
  void read(Connection& c, ns3::Ptr<ns3::Socket> socket);
};

void FatTreeFabric::Impl::build() {
  using namespace ns3;
  RngSeedManager::SetSeed(config.seed);
  RngSeedManager::SetRun(1);
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(config.mtu_bytes - header_bytes));
  Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(to_ns3(config.tcp_min_rto)));
  // ns-3 delays an ACK by 200 ms by default, as long as its minimum RTO: a message ending in
  // an odd segment then times out spuriously, and the next message on the connection crawls
  // at one segment per delayed ACK (a 100 kB message took 13.8 s after 1 s idle). Linux
  // delays by 40 ms at most against its 200 ms RTO: the same ratio here.
  Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(to_ns3(config.tcp_min_rto) / 5));
  Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpNewReno::GetTypeId()));
  // ns-3 closes a connection after 6 retransmissions of a segment; Linux tries 15 times
  // (tcp_retries2). Under heavy incast with a low minimum RTO, 6 gave up on connections
  // whose messages then never arrived.
  Config::SetDefault("ns3::TcpSocket::DataRetries", UintegerValue(15));
  Config::SetDefault("ns3::Ipv4GlobalRouting::RandomEcmpRouting", BooleanValue(config.ecmp));

  hosts.Create(config.leaves * config.hosts_per_leaf);
  leaves.Create(config.leaves);
  spines.Create(config.spines);
  InternetStackHelper stack;
  stack.InstallAll();
  // Fixed stream numbers: ns-3 otherwise numbers random streams from a process-wide counter,
  // and a second fabric in the process would draw from other streams than the first.
  NodeContainer all(hosts, leaves, spines);
  stack.AssignStreams(all, 0);
  for (std::size_t n = 0; n < all.GetN(); ++n) {
    // A packet the interface cannot queue is dropped before its queue, by the traffic-control
    // layer (the device stops its queue when the next packet would not fit).
    bool connected = all.Get(n)->GetObject<TrafficControlLayer>()->TraceConnectWithoutContext(
        "TcDrop", Callback<void, Ptr<const Packet>>([this](Ptr<const Packet>) { ++counters.packets_dropped; }));
    if (!connected) throw std::logic_error("fat-tree fabric: ns-3's TrafficControlLayer has no TcDrop trace");
  }

  PointToPointHelper host_link, uplink;
  host_link.SetDeviceAttribute("DataRate",
                               DataRateValue(DataRate(static_cast<std::uint64_t>(config.host_link_bits_per_second))));
  uplink.SetDeviceAttribute("DataRate",
                            DataRateValue(DataRate(static_cast<std::uint64_t>(config.uplink_bits_per_second))));
  for (auto* helper : {&host_link, &uplink}) {
    helper->SetChannelAttribute("Delay", TimeValue(to_ns3(config.link_delay)));
    helper->SetDeviceAttribute("Mtu", UintegerValue(config.mtu_bytes));
    helper->SetQueue("ns3::DropTailQueue<Packet>", "MaxSize",
                     QueueSizeValue(QueueSize(bytes_size(config.port_buffer_bytes))));
  }

  Ipv4AddressHelper addresses("10.0.0.0", "255.255.255.252");  // a /30 per link
  TrafficControlHelper traffic_control;
  auto connect = [&](PointToPointHelper& helper, Ptr<Node> a, Ptr<Node> b) {
    NetDeviceContainer devices = helper.Install(a, b);
    Ipv4InterfaceContainer interfaces = addresses.Assign(devices);
    addresses.NewNetwork();
    // Assign() gives every device ns-3's default queue discipline (FqCoDel); the model is the
    // device's own drop-tail FIFO, so take it off.
    traffic_control.Uninstall(devices);
    count_packets(devices);
    if (config.control_lane) {
      for (std::size_t i = 0; i < devices.GetN(); ++i) install_lanes(devices.Get(i), config.port_buffer_bytes);
    }
    return std::make_pair(devices, interfaces);
  };

  std::vector<Ipv4Address> host_gateway;
  for (std::size_t h = 0; h < hosts.GetN(); ++h) {
    auto [devices, interfaces] = connect(host_link, hosts.Get(h), leaves.Get(h / config.hosts_per_leaf));
    if (config.control_lane) {
      traffic_control.Uninstall(devices.Get(0));
      install_lanes(devices.Get(0), config.host_buffer_bytes);
    } else {
      devices.Get(0)->GetObject<PointToPointNetDevice>()->GetQueue()->SetMaxSize(
          QueueSize(bytes_size(config.host_buffer_bytes)));
    }
    host_address.push_back(interfaces.GetAddress(0));
    host_gateway.push_back(interfaces.GetAddress(1));
  }
  // Next hop and interface index: leaf l to spine s, spine s to leaf l.
  std::vector<std::vector<std::pair<Ipv4Address, std::uint32_t>>> leaf_uplinks(config.leaves);
  std::vector<std::vector<std::pair<Ipv4Address, std::uint32_t>>> spine_downlinks(config.spines);
  for (std::size_t l = 0; l < config.leaves; ++l) {
    for (std::size_t s = 0; s < config.spines; ++s) {
      auto [devices, interfaces] = connect(uplink, leaves.Get(l), spines.Get(s));
      auto leaf_ip = leaves.Get(l)->GetObject<Ipv4>();
      auto spine_ip = spines.Get(s)->GetObject<Ipv4>();
      leaf_uplinks[l].emplace_back(interfaces.GetAddress(1),
                                   static_cast<std::uint32_t>(leaf_ip->GetInterfaceForDevice(devices.Get(0))));
      spine_downlinks[s].emplace_back(interfaces.GetAddress(0),
                                      static_cast<std::uint32_t>(spine_ip->GetInterfaceForDevice(devices.Get(1))));
    }
  }
  if (config.ecmp) {
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    for (std::size_t n = 0; n < all.GetN(); ++n) {  // their random uplinks, after the streams above
      Ptr<Ipv4> ip = all.Get(n)->GetObject<Ipv4>();
      int16_t priority = 0;
      auto list = DynamicCast<Ipv4ListRouting>(ip->GetRoutingProtocol());
      for (uint32_t i = 0; list && i < list->GetNRoutingProtocols(); ++i) {
        if (auto global = DynamicCast<Ipv4GlobalRouting>(list->GetRoutingProtocol(i, priority))) {
          global->AssignStreams(static_cast<int64_t>(1000 + n));
        }
      }
    }
  } else {
    add_routes(leaf_uplinks, spine_downlinks, host_gateway);
  }
  // The traffic-control layer learns its devices' queue discs when its node is initialized,
  // which ns-3 schedules for the start of the run; a message sent before that would find the
  // lanes' queue discs unknown (a crash in TrafficControlLayer::Send).
  if (config.control_lane) {
    for (std::size_t n = 0; n < all.GetN(); ++n) all.Get(n)->Initialize();
  }
}

// D-mod-k: traffic to host d climbs to spine d mod spines, from every leaf.
void FatTreeFabric::Impl::add_routes(
    const std::vector<std::vector<std::pair<ns3::Ipv4Address, std::uint32_t>>>& leaf_uplinks,
    const std::vector<std::vector<std::pair<ns3::Ipv4Address, std::uint32_t>>>& spine_downlinks,
    const std::vector<ns3::Ipv4Address>& host_gateway) {
  using namespace ns3;
  Ipv4StaticRoutingHelper helper;
  for (std::size_t h = 0; h < hosts.GetN(); ++h) {
    helper.GetStaticRouting(hosts.Get(h)->GetObject<Ipv4>())->SetDefaultRoute(host_gateway[h], 1);
  }
  for (std::size_t d = 0; d < hosts.GetN(); ++d) {
    std::size_t home = d / config.hosts_per_leaf;
    std::size_t spine = d % config.spines;
    for (std::size_t l = 0; l < config.leaves; ++l) {
      if (l == home) continue;  // the leaf's own hosts are on connected /30 networks
      auto [next_hop, interface] = leaf_uplinks[l][spine];
      helper.GetStaticRouting(leaves.Get(l)->GetObject<Ipv4>())->AddHostRouteTo(host_address[d], next_hop, interface);
    }
    for (std::size_t s = 0; s < config.spines; ++s) {
      auto [next_hop, interface] = spine_downlinks[s][home];
      helper.GetStaticRouting(spines.Get(s)->GetObject<Ipv4>())->AddHostRouteTo(host_address[d], next_hop, interface);
    }
  }
}

void FatTreeFabric::Impl::count_packets(ns3::NetDeviceContainer devices) {
  using namespace ns3;
  for (std::size_t i = 0; i < devices.GetN(); ++i) {
    auto device = devices.Get(i)->GetObject<PointToPointNetDevice>();
    device->TraceConnectWithoutContext(
        "PhyTxBegin", Callback<void, Ptr<const Packet>>([this](Ptr<const Packet>) { ++counters.packets_sent; }));
    device->GetQueue()->TraceConnectWithoutContext(
        "Drop", Callback<void, Ptr<const Packet>>([this](Ptr<const Packet>) { ++counters.packets_dropped; }));
  }
}

// Two bands of `band_bytes` each before the device, band 0 (the control lane) first; the
// device holds one packet, so that what waits, waits in the bands.
void FatTreeFabric::Impl::install_lanes(ns3::Ptr<ns3::NetDevice> device, std::size_t band_bytes) {
  using namespace ns3;
  device->GetObject<PointToPointNetDevice>()->GetQueue()->SetMaxSize(QueueSize(QueueSizeUnit::PACKETS, 1));
  TrafficControlHelper lanes;
  const std::uint16_t root = lanes.SetRootQueueDisc("ns3::PrioQueueDisc");
  const auto bands = lanes.AddQueueDiscClasses(root, 2, "ns3::QueueDiscClass");
  for (const auto band : bands) {
    lanes.AddChildQueueDisc(root, band, "ns3::FifoQueueDisc", "MaxSize",
                            QueueSizeValue(QueueSize(bytes_size(band_bytes))));
  }
  QueueDiscContainer installed = lanes.Install(device);
  auto filter = CreateObject<ControlLaneFilter>();
  const auto hosts_n = static_cast<std::uint16_t>(hosts.GetN());
  filter->set_ports(static_cast<std::uint16_t>(first_port + hosts_n),
                    static_cast<std::uint16_t>(first_port + 2 * hosts_n));
  installed.Get(0)->AddPacketFilter(filter);
  installed.Get(0)->TraceConnectWithoutContext(
      "Drop",
      Callback<void, Ptr<const QueueDiscItem>>([this](Ptr<const QueueDiscItem>) { ++counters.packets_dropped; }));
}

Connection& FatTreeFabric::Impl::connection(std::size_t from, std::size_t to, std::size_t channel) {
  using namespace ns3;
  auto& slot = connections[{from, to, channel}];
  if (slot) return *slot;
  slot = std::make_unique<Connection>();
  Connection* c = slot.get();
  auto port = static_cast<std::uint16_t>(first_port + channel * hosts.GetN() + from);

  Ptr<Socket> listener = Socket::CreateSocket(hosts.Get(to), TcpSocketFactory::GetTypeId());
  listener->Bind(InetSocketAddress(Ipv4Address::GetAny(), port));
  listener->Listen();
  listener->SetAcceptCallback(
      MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
      Callback<void, Ptr<Socket>, const Address&>([this, c](Ptr<Socket> s, const Address&) {
        c->receiver = s;
        s->SetRecvCallback(Callback<void, Ptr<Socket>>([this, c](Ptr<Socket> r) { read(*c, r); }));
      }));

  c->sender = Socket::CreateSocket(hosts.Get(from), TcpSocketFactory::GetTypeId());
  c->sender->Bind();
  c->sender->SetConnectCallback(Callback<void, Ptr<Socket>>([this, c](Ptr<Socket>) {
                                  c->connected = true;
                                  pump(*c);
                                }),
                                Callback<void, Ptr<Socket>>([from, to](Ptr<Socket>) {
                                  throw std::runtime_error("fat-tree fabric: TCP connection from host " +
                                                           std::to_string(from) + " to host " + std::to_string(to) +
                                                           " failed");
                                }));
  // A connection that gives up (DataRetries exhausted) would leave its messages undelivered.
  c->sender->SetCloseCallbacks(
      MakeNullCallback<void, Ptr<Socket>>(), Callback<void, Ptr<Socket>>([from, to](Ptr<Socket>) {
        throw std::runtime_error("fat-tree fabric: TCP connection from host " + std::to_string(from) + " to host " +
                                 std::to_string(to) + " gave up (15 retransmissions of a segment)");
      }));
  c->sender->SetSendCallback(
      Callback<void, Ptr<Socket>, std::uint32_t>([this, c](Ptr<Socket>, std::uint32_t) { pump(*c); }));
  c->sender->Connect(InetSocketAddress(host_address[to], port));
  return *c;
}

void FatTreeFabric::Impl::pump(Connection& c) {
  if (!c.connected) return;
  while (c.written < c.queued) {
    std::uint32_t room = c.sender->GetTxAvailable();
    if (room == 0) return;  // the send callback calls again when the buffer drains
    auto size = static_cast<std::uint32_t>(std::min<std::uint64_t>(room, c.queued - c.written));
    int accepted = c.sender->Send(ns3::Create<ns3::Packet>(size));
    if (accepted <= 0) return;
    c.written += static_cast<std::uint64_t>(accepted);
  }
}

void FatTreeFabric::Impl::read(Connection& c, ns3::Ptr<ns3::Socket> socket) {
  while (ns3::Ptr<ns3::Packet> packet = socket->Recv()) {
    c.received += packet->GetSize();
  }
  while (!c.pending.empty() && c.pending.front().first <= c.received) {
    Delivered done = std::move(c.pending.front().second);
    c.pending.pop_front();  // before the callback, which may send on this connection
    ++counters.messages_delivered;
    if (done) done(from_ns3(ns3::Simulator::Now()));
  }
}

FatTreeFabric::FatTreeFabric(const FatTreeConfig& config) {
  check(config);
  if (fabric_exists) throw std::logic_error("FatTreeFabric: another one exists (ns-3's simulator is one per process)");
  fabric_exists = true;
  try {
    impl_ = std::make_unique<Impl>(config);
    impl_->build();
  } catch (...) {
    impl_.reset();
    ns3::Simulator::Destroy();
    fabric_exists = false;
    throw;
  }
}

FatTreeFabric::~FatTreeFabric() {
  impl_->connections.clear();
  impl_.reset();
  ns3::Simulator::Destroy();  // disposes the nodes: the next fabric starts from an empty world
  fabric_exists = false;
}

std::size_t FatTreeFabric::hosts() const { return impl_->hosts.GetN(); }

double FatTreeFabric::oversubscription() const {
  const auto& c = impl_->config;
  return (static_cast<double>(c.hosts_per_leaf) * c.host_link_bits_per_second) /
         (static_cast<double>(c.spines) * c.uplink_bits_per_second);
}

void FatTreeFabric::send(std::size_t from, std::size_t to, std::uint64_t bytes, Delivered on_delivered,
                         std::size_t channel) {
  if (from >= hosts() || to >= hosts()) {
    throw std::out_of_range("FatTreeFabric::send: host " + std::to_string(std::max(from, to)) + " of " +
                            std::to_string(hosts()));
  }
  if (from == to) throw std::invalid_argument("FatTreeFabric::send: from and to are host " + std::to_string(from));
  if (bytes == 0) throw std::invalid_argument("FatTreeFabric::send: an empty message");
  if (channel >= channels) throw std::out_of_range("FatTreeFabric::send: channel " + std::to_string(channel));
  Connection& c = impl_->connection(from, to, channel);
  c.queued += bytes;
  c.pending.emplace_back(c.queued, std::move(on_delivered));
  impl_->pump(c);
}

void FatTreeFabric::at(SimTime when, std::function<void()> action) {
  SimTime delay = std::max(SimTime::zero(), when - now());
  ns3::Simulator::Schedule(to_ns3(delay), [action = std::move(action)] { action(); });
}

void FatTreeFabric::run_until(SimTime until) {
  if (until < now()) return;
  ns3::EventId stop = ns3::Simulator::Schedule(to_ns3(until - now()), [] { ns3::Simulator::Stop(); });
  ns3::Simulator::Run();
  ns3::Simulator::Cancel(stop);  // if a callback stopped the run earlier
}

void FatTreeFabric::run() { ns3::Simulator::Run(); }

void FatTreeFabric::stop() { ns3::Simulator::Stop(); }

SimTime FatTreeFabric::now() const { return from_ns3(ns3::Simulator::Now()); }

FabricCounters FatTreeFabric::counters() const {
  FabricCounters result = impl_->counters;
  result.events = ns3::Simulator::GetEventCount();
  return result;
}

}  // namespace netio::fabric_model
