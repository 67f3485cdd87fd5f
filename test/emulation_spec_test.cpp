// SPDX-License-Identifier: MIT
// The emulation spec (netio/emulation.hpp) and the delay distributions: parsing, clear
// errors for bad specs and bad table files, and sampling that is deterministic with a seed
// and matches the configured distribution (mean and percentiles over many draws).
#include "backends/emulated/spec_values.hpp"
#include "netio/emulated/delay_sampler.hpp"
#include "netio/emulation.hpp"
#include "netio/error.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

using netio::DelayKind;
using netio::parse_emulation_spec;
using netio::emulated::DelaySampler;

namespace {

std::vector<double> draws(const netio::DelayDistribution& d, std::size_t n, std::uint64_t seed = 1,
                          std::uint64_t stream = 0) {
  DelaySampler sampler(d, seed, stream);
  std::vector<double> v(n);
  for (auto& x : v) x = sampler.next_ns();
  return v;
}

double mean_of(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size()); }

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * double(v.size() - 1))];
}

double stddev_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / double(v.size()));
}

// The error message of parsing `spec`, or "" when it parses.
std::string error_of(const std::string& spec) {
  try {
    parse_emulation_spec(spec);
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::invalid_option);
    return e.what();
  }
  return {};
}

struct TempFile {
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/netio_emulation_table_XXXXXX";
    const int fd = ::mkstemp(name);
    REQUIRE(fd >= 0);
    ::close(fd);
    path = name;
    std::ofstream(path) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
  std::string path;
};

}  // namespace

TEST_CASE("the documented example spec parses: log-normal delay by mean and sigma, a rate", "[emulated]") {
  const auto c = parse_emulation_spec("delay=lognormal:mean=50us,sigma=0.8;rate=10Gbps");
  CHECK(c.delay.kind == DelayKind::lognormal);
  CHECK(c.delay.shape == Approx(0.8));
  CHECK(c.delay.expected_mean() == Approx(50'000).epsilon(1e-9));
  CHECK(c.connection_rate.bytes_per_second == Approx(1.25e9));
  CHECK(c.connection_rate.burst_bytes == 5'000'000);  // 4 ms at the rate
  CHECK(c.shapes_anything());
  CHECK_FALSE(parse_emulation_spec("").shapes_anything());
  CHECK_FALSE(parse_emulation_spec("none").shapes_anything());
}

TEST_CASE("every clause and distribution form parses to the values it names", "[emulated]") {
  CHECK(parse_emulation_spec("delay=50us").delay.value == Approx(50'000));
  CHECK(parse_emulation_spec("delay=constant:1.5ms").delay.value == Approx(1.5e6));
  CHECK(parse_emulation_spec("delay=constant:value=10ns").delay.value == Approx(10));
  const auto u = parse_emulation_spec(" delay = uniform:min=10us, max=90us ; seed=7 ");
  CHECK(u.delay.min == Approx(10'000));
  CHECK(u.delay.max == Approx(90'000));
  CHECK(u.seed == 7);
  const auto uj = parse_emulation_spec("delay=uniform:mean=50us,jitter=20us");
  CHECK(uj.delay.min == Approx(30'000));
  CHECK(uj.delay.max == Approx(70'000));
  const auto n = parse_emulation_spec("delay=normal:mean=50us,sigma=5us,correlation=25%,clip=80us");
  CHECK(n.delay.sigma == Approx(5'000));
  CHECK(n.delay.correlation == Approx(0.25));
  CHECK(*n.delay.clip == Approx(80'000));
  CHECK(parse_emulation_spec("delay=lognormal:median=40us,sigma=1").delay.mu == Approx(std::log(40'000.0)));
  CHECK(parse_emulation_spec("delay=lognormal:mu=3,sigma=1,unit=us").delay.mu == Approx(3 + std::log(1000.0)));
  CHECK(parse_emulation_spec("delay=exponential:mean=20us").delay.expected_mean() == Approx(20'000));
  CHECK(parse_emulation_spec("delay=pareto:mean=30us,shape=3").delay.expected_mean() == Approx(30'000));
  CHECK(parse_emulation_spec("delay=pareto:scale=10us,shape=2").delay.scale == Approx(10'000));
  const auto r = parse_emulation_spec("rate=100Mbps,burst=16KiB;in=1GB/s;out=2GiB/s,burst=1MiB");
  CHECK(r.connection_rate.bytes_per_second == Approx(12.5e6));
  CHECK(r.connection_rate.burst_bytes == 16384);
  CHECK(r.node_in.bytes_per_second == Approx(1e9));
  CHECK(r.node_out.bytes_per_second == Approx(2.0 * 1024 * 1024 * 1024));
  CHECK(r.node_out.burst_bytes == 1024 * 1024);
  CHECK_FALSE(r.core);
  const auto core = parse_emulation_spec("core=10Gbps,burst=256KiB");
  CHECK(core.core.bytes_per_second == Approx(1.25e9));
  CHECK(core.core.burst_bytes == 256 * 1024);
  CHECK(core.shapes_anything());
  const auto s = parse_emulation_spec(
      "node=2;out=10Gbps;slowdown=node:2,at=10s,for=5s,rate=25%;"
      "slowdown=link:127.0.0.1:5000,at=1s,for=100ms,every=1s,delay=2ms");
  REQUIRE(s.slowdowns.size() == 2);
  CHECK(*s.node_id == 2);
  CHECK(*s.slowdowns[0].node_id == 2);
  CHECK(s.slowdowns[0].at == std::chrono::seconds(10));
  CHECK(s.slowdowns[0].duration == std::chrono::seconds(5));
  CHECK(s.slowdowns[0].rate_factor == Approx(0.25));
  CHECK(s.slowdowns[1].target == netio::SlowdownWindow::Target::link);
  CHECK(s.slowdowns[1].link_host == "127.0.0.1");
  CHECK(s.slowdowns[1].link_port == 5000);
  CHECK(*s.slowdowns[1].every == std::chrono::seconds(1));
  CHECK(s.slowdowns[1].extra_delay == std::chrono::milliseconds(2));
}

TEST_CASE("a bad spec is rejected with a message that quotes it and says what is wrong", "[emulated]") {
  struct Case {
    std::string spec;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"delay=lognormal:mean=50us", "lognormal needs sigma="},
      {"delay=lognormal:mean=50us,sigma=0.8,mu=3", "one of mean=, median= or mu="},
      {"delay=gauss:mean=1us", "'gauss' is not a distribution"},
      {"delay=uniform:min=10us", "uniform needs min= and max="},
      {"delay=uniform:min=10us,max=5us", "below min="},
      {"delay=normal:mean=50,sigma=5us", "'50' has no unit"},
      {"delay=50 parsecs", "not a time unit"},
      {"delay=exponential:mean=-3us", "negative"},
      {"delay=pareto:mean=30us,shape=1", "shape must be above 1"},
      {"delay=normal:mean=5us,sigma=1us,correlation=100%", "below 100 %"},
      {"delay=normal:mean=5us,sigma=1us,colour=red", "unknown parameter 'colour'"},
      {"delay=normal:mean=5us,sigma=1us,sigma=2us", "sigma= given twice"},
      {"rate=10Gbit", "not a rate unit"},
      {"rate=fast", "not a rate"},
      {"rate=10GB", "not a rate unit"},
      {"rate=10Gbps,burst=0", "at least 1 byte"},
      {"rate=1Gbps;rate=2Gbps", "rate= given twice"},
      {"speed=1Gbps", "unknown key 'speed'"},
      {"delay", "not KEY=VALUE"},
      {"delay=1us;;rate=1Gbps", "empty clause"},
      {"slowdown=node,at=1s,rate=25%;rate=1Gbps", "needs at= and for="},
      {"slowdown=switch,at=1s,for=1s,rate=25%;rate=1Gbps", "'switch' is not a target"},
      {"slowdown=node,at=1s,for=1s,rate=25%", "none is set"},
      {"slowdown=node,at=1s,for=1s,rate=125%;rate=1Gbps", "outside 0"},
      {"slowdown=node,at=1s,for=2s,every=1s,delay=1ms", "every= (1s) must be longer"},
      {"slowdown=link:localhost,at=1s,for=1s,delay=1ms", "not HOST:PORT"},
      {"delay=table:file=/nonexistent/netio.dist", "cannot open"},
      {"seed=-1", "not an integer"},
  };
  for (const auto& c : cases) {
    INFO(c.spec);
    const std::string message = error_of(c.spec);
    CHECK_THAT(message, Catch::Contains("emulation spec '" + c.spec + "'"));
    CHECK_THAT(message, Catch::Contains(c.says));
  }
}

TEST_CASE("table files are parsed as tc-netem tables, bad ones rejected naming file and line", "[emulated]") {
  SECTION("absolute delays in a unit, comments and any white space") {
    TempFile file("# delays in us\n10 20\t30\n\n40 # the last\n");
    const auto c = parse_emulation_spec("delay=table:file=" + file.path);
    CHECK(c.delay.table == std::vector<double>{10'000, 20'000, 30'000, 40'000});
    CHECK(c.delay.expected_mean() == Approx(25'000));
    const auto ns = parse_emulation_spec("delay=table:file=" + file.path + ",unit=ns");
    CHECK(ns.delay.table.front() == Approx(10));
  }
  SECTION("a netem table (values around 0, scaled by 8192) with mean and jitter") {
    TempFile file("-8192 0 8192 4096\n");
    const auto c = parse_emulation_spec("delay=table:file=" + file.path + ",mean=50us,jitter=10us");
    CHECK(c.delay.table == std::vector<double>{40'000, 50'000, 60'000, 55'000});
    CHECK_THAT(error_of("delay=table:file=" + file.path), Catch::Contains("negative delay"));
  }
  SECTION("sampled by index: every value comes up, each about equally often") {
    TempFile file("1 2 3 4\n");
    const auto c = parse_emulation_spec("delay=table:file=" + file.path + ",unit=ns");
    std::vector<int> seen(5);
    for (double x : draws(c.delay, 40'000)) ++seen.at(static_cast<std::size_t>(x));
    for (int value = 1; value <= 4; ++value) CHECK(seen[value] == Approx(10'000).epsilon(0.05));
  }
  SECTION("tc-netem's own tables, when iproute2 installed them") {
    const std::string path = "/usr/lib/x86_64-linux-gnu/tc/normal.dist";
    if (std::ifstream(path)) {
      const auto c = parse_emulation_spec("delay=table:file=" + path + ",mean=50us,jitter=10us");
      CHECK(c.delay.table.size() == 4096);
      const auto v = draws(c.delay, 100'000);
      CHECK(mean_of(v) == Approx(50'000).epsilon(0.01));
      CHECK(stddev_of(v) == Approx(10'000).epsilon(0.05));
    }
  }
  SECTION("bad files") {
    TempFile junk("10 20\n30 thirty\n");
    CHECK_THAT(error_of("delay=table:file=" + junk.path), Catch::Contains("line 2: 'thirty' is not a number"));
    CHECK_THAT(error_of("delay=table:file=" + junk.path), Catch::Contains(junk.path));
    TempFile empty("# nothing\n\n");
    CHECK_THAT(error_of("delay=table:file=" + empty.path), Catch::Contains("holds no values"));
    CHECK_THROWS_WITH(netio::read_delay_table("/nonexistent/x.dist"), Catch::Contains("'/nonexistent/x.dist'"));
  }
}

TEST_CASE("sampling is deterministic with a seed, and connections get streams of their own", "[emulated]") {
  const auto d = parse_emulation_spec("delay=lognormal:mean=50us,sigma=0.8").delay;
  CHECK(draws(d, 1000, 42) == draws(d, 1000, 42));
  CHECK(draws(d, 1000, 42) != draws(d, 1000, 43));
  CHECK(draws(d, 1000, 42, 0) != draws(d, 1000, 42, 1));
  for (double x : draws(d, 1000)) CHECK(x > 0);
}

TEST_CASE("sample means and percentiles match the configured distributions", "[emulated]") {
  constexpr std::size_t n = 200'000;
  SECTION("uniform") {
    const auto v = draws(parse_emulation_spec("delay=uniform:min=0us,max=100us").delay, n);
    CHECK(mean_of(v) == Approx(50'000).epsilon(0.01));
    CHECK(percentile(v, 0.5) == Approx(50'000).epsilon(0.01));
    CHECK(percentile(v, 0.99) == Approx(99'000).epsilon(0.01));
    CHECK(*std::min_element(v.begin(), v.end()) >= 0);
    CHECK(*std::max_element(v.begin(), v.end()) <= 100'000);
  }
  SECTION("normal") {
    const auto v = draws(parse_emulation_spec("delay=normal:mean=50us,sigma=5us").delay, n);
    CHECK(mean_of(v) == Approx(50'000).epsilon(0.005));
    CHECK(stddev_of(v) == Approx(5'000).epsilon(0.02));
    CHECK(percentile(v, 0.99) == Approx(50'000 + 2.3263 * 5'000).epsilon(0.01));
  }
  SECTION("log-normal by mean and sigma: the mean as asked, the median below it") {
    const auto v = draws(parse_emulation_spec("delay=lognormal:mean=50us,sigma=0.8").delay, n);
    CHECK(mean_of(v) == Approx(50'000).epsilon(0.02));
    const double median = 50'000 * std::exp(-0.8 * 0.8 / 2);
    CHECK(percentile(v, 0.5) == Approx(median).epsilon(0.02));
    CHECK(percentile(v, 0.99) == Approx(median * std::exp(0.8 * 2.3263)).epsilon(0.03));
  }
  SECTION("exponential") {
    const auto v = draws(parse_emulation_spec("delay=exponential:mean=20us").delay, n);
    CHECK(mean_of(v) == Approx(20'000).epsilon(0.01));
    CHECK(percentile(v, 0.5) == Approx(20'000 * std::log(2.0)).epsilon(0.02));
  }
  SECTION("pareto") {
    const auto v = draws(parse_emulation_spec("delay=pareto:scale=10us,shape=3").delay, n);
    CHECK(mean_of(v) == Approx(15'000).epsilon(0.02));
    CHECK(*std::min_element(v.begin(), v.end()) >= 10'000);
    CHECK(percentile(v, 0.5) == Approx(10'000 * std::pow(2.0, 1.0 / 3)).epsilon(0.01));
  }
  SECTION("constant, and clipping") {
    for (double x : draws(parse_emulation_spec("delay=50us").delay, 100)) CHECK(x == 50'000);
    const auto v = draws(parse_emulation_spec("delay=exponential:mean=20us,clip=30us").delay, n);
    CHECK(*std::max_element(v.begin(), v.end()) <= 30'000);
  }
}

TEST_CASE("correlation ties successive draws together and keeps each draw's distribution", "[emulated]") {
  constexpr std::size_t n = 200'000;
  auto lag1 = [](const std::vector<double>& v) {
    const double m = mean_of(v);
    double num = 0, den = 0;
    for (std::size_t i = 0; i + 1 < v.size(); ++i) num += (v[i] - m) * (v[i + 1] - m);
    for (double x : v) den += (x - m) * (x - m);
    return num / den;
  };
  const auto plain = draws(parse_emulation_spec("delay=normal:mean=50us,sigma=5us").delay, n);
  const auto tied = draws(parse_emulation_spec("delay=normal:mean=50us,sigma=5us,correlation=0.8").delay, n);
  CHECK(std::abs(lag1(plain)) < 0.02);
  CHECK(lag1(tied) == Approx(0.8).epsilon(0.03));
  CHECK(mean_of(tied) == Approx(50'000).epsilon(0.01));
  CHECK(stddev_of(tied) == Approx(5'000).epsilon(0.05));
  const auto uniform = draws(parse_emulation_spec("delay=uniform:min=0us,max=100us,correlation=50%").delay, n);
  CHECK(lag1(uniform) > 0.3);
  CHECK(percentile(uniform, 0.5) == Approx(50'000).epsilon(0.03));
  CHECK(percentile(uniform, 0.9) == Approx(90'000).epsilon(0.03));
}

TEST_CASE("value parsers: rates, sizes, durations, fractions", "[emulated]") {
  using namespace netio::emulated;
  CHECK(parse_rate("10Gbps").value() == Approx(1.25e9));
  CHECK(parse_rate("2.5 Gbit/s").value() == Approx(2.5e9 / 8));
  CHECK(parse_rate("100MiB/s").value() == Approx(100.0 * 1024 * 1024));
  CHECK_FALSE(parse_rate("0Gbps").ok());
  CHECK(parse_size("4KiB").value() == 4096);
  CHECK(parse_size("1.5K").value() == 1536);
  CHECK_FALSE(parse_size("1.3B").ok());
  CHECK(parse_duration_ns("1.5ms").value() == Approx(1.5e6));
  CHECK(parse_duration_ns("0").value() == 0);
  CHECK(parse_fraction("25%").value() == Approx(0.25));
  CHECK(parse_fraction("0.5").value() == Approx(0.5));
  CHECK(format_rate(1.25e9) == "10 Gb/s");
}
