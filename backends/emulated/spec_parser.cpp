// SPDX-License-Identifier: MIT
// parse_emulation_spec() and read_delay_table(): the grammar of netio/emulation.hpp.
#include "netio/emulation.hpp"

#include "backends/emulated/spec_values.hpp"
#include "netio/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <system_error>

namespace netio {
namespace {

using emulated::trim;
using Nanos = std::chrono::nanoseconds;

// What went wrong in one clause; turned into a netio::Error that quotes the spec.
struct SpecError {
  std::string message;
};

[[noreturn]] void fail(std::string message) { throw SpecError{std::move(message)}; }

template <typename T>
T need(const emulated::Parsed<T>& parsed, std::string_view what) {
  if (!parsed.ok()) fail(fmt::format("{}: {}", what, parsed.error()));
  return parsed.value();
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const auto end = text.find(separator, start);
    parts.push_back(trim(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start)));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

// "k=v,k=v" into a map; each name at most once and among `allowed`.
using Params = std::map<std::string, std::string, std::less<>>;
Params parse_params(const std::vector<std::string_view>& items, std::string_view what,
                    const std::set<std::string_view>& allowed) {
  Params params;
  for (std::string_view item : items) {
    if (item.empty()) fail(fmt::format("{}: an empty parameter (two commas in a row, or a trailing comma)", what));
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) fail(fmt::format("{}: '{}' is not NAME=VALUE", what, item));
    const std::string name(trim(item.substr(0, eq)));
    const std::string value(trim(item.substr(eq + 1)));
    if (!allowed.count(name)) {
      std::string list;
      for (auto a : allowed) list += fmt::format("{}{}=", list.empty() ? "" : ", ", a);
      fail(fmt::format("{}: unknown parameter '{}' (it takes {})", what, name, list));
    }
    if (value.empty()) fail(fmt::format("{}: {}= has no value", what, name));
    if (!params.emplace(name, value).second) fail(fmt::format("{}: {}= given twice", what, name));
  }
  return params;
}

double duration_param(const Params& p, std::string_view name, std::string_view what) {
  const double ns = need(emulated::parse_duration_ns(p.find(name)->second), fmt::format("{} {}=", what, name));
  // Durations become nanosecond counts (int64): a century is plenty, and more would overflow
  // the conversion (found by fuzz_strings: every=11111111111111s).
  constexpr double max_nanoseconds = 100.0 * 365 * 24 * 3600 * 1e9;
  if (!(ns <= max_nanoseconds)) fail(fmt::format("{} {}={}: longer than a century", what, name, p.find(name)->second));
  return ns;
}
double number_param(const Params& p, std::string_view name, std::string_view what) {
  return need(emulated::parse_number(p.find(name)->second), fmt::format("{} {}=", what, name));
}
bool has(const Params& p, std::string_view name) { return p.count(name) != 0; }

DelayDistribution parse_delay(std::string_view value) {
  DelayDistribution d;
  const auto colon = value.find(':');
  const std::string_view name = trim(value.substr(0, colon));
  // delay=50us: a constant.
  if (colon == std::string_view::npos && !name.empty() &&
      (std::isdigit(static_cast<unsigned char>(name[0])) || name[0] == '.')) {
    d.kind = DelayKind::constant;
    d.value = need(emulated::parse_duration_ns(name), "delay");
    return d;
  }
  const std::string what = fmt::format("delay {}", name);
  std::vector<std::string_view> items =
      colon == std::string_view::npos ? std::vector<std::string_view>{} : split(value.substr(colon + 1), ',');
  if (items.size() == 1 && items[0].empty()) items.clear();

  std::set<std::string_view> allowed{"correlation", "clip"};
  auto allow = [&](std::initializer_list<std::string_view> names) { allowed.insert(names.begin(), names.end()); };
  if (name == "none") {
    d.kind = DelayKind::none;
    if (!items.empty()) fail("delay none takes no parameters");
    return d;
  } else if (name == "constant") {
    // constant:50us or constant:value=50us
    if (items.size() == 1 && items[0].find('=') == std::string_view::npos) {
      d.kind = DelayKind::constant;
      d.value = need(emulated::parse_duration_ns(items[0]), "delay constant");
      return d;
    }
    allow({"value"});
  } else if (name == "uniform") {
    allow({"min", "max", "mean", "jitter"});
  } else if (name == "normal") {
    allow({"mean", "sigma", "stddev"});
  } else if (name == "lognormal") {
    allow({"mean", "median", "mu", "sigma", "unit"});
  } else if (name == "exponential") {
    allow({"mean"});
  } else if (name == "pareto") {
    allow({"scale", "shape", "mean"});
  } else if (name == "table") {
    allow({"file", "unit", "mean", "jitter"});
  } else if (name.empty()) {
    fail("delay= needs a distribution or a duration (e.g. delay=50us, delay=lognormal:mean=50us,sigma=0.8)");
  } else {
    fail(
        fmt::format("'{}' is not a distribution (constant, uniform, normal, lognormal, exponential, pareto, table) "
                    "nor a duration",
                    name));
  }
  const Params p = parse_params(items, what, allowed);

  if (name == "constant") {
    if (!has(p, "value")) fail("delay constant needs a duration: constant:50us or constant:value=50us");
    d.kind = DelayKind::constant;
    d.value = duration_param(p, "value", what);
  } else if (name == "uniform") {
    d.kind = DelayKind::uniform;
    if (has(p, "min") && has(p, "max") && !has(p, "mean") && !has(p, "jitter")) {
      d.min = duration_param(p, "min", what);
      d.max = duration_param(p, "max", what);
      if (d.max < d.min) fail(fmt::format("delay uniform: max= ({}) is below min= ({})", p.at("max"), p.at("min")));
    } else if (has(p, "mean") && has(p, "jitter") && !has(p, "min") && !has(p, "max")) {
      const double mean = duration_param(p, "mean", what);
      const double jitter = duration_param(p, "jitter", what);
      if (jitter > mean)
        fail(fmt::format("delay uniform: jitter= ({}) exceeds mean= ({}): delays would go below 0", p.at("jitter"),
                         p.at("mean")));
      d.min = mean - jitter;
      d.max = mean + jitter;
    } else {
      fail(
          "delay uniform needs min= and max= (uniform:min=10us,max=90us) or mean= and jitter= "
          "(uniform:mean=50us,jitter=40us)");
    }
  } else if (name == "normal") {
    d.kind = DelayKind::normal;
    if (!has(p, "mean") || has(p, "sigma") == has(p, "stddev")) {
      fail("delay normal needs mean= and sigma= (a duration, e.g. normal:mean=50us,sigma=10us)");
    }
    d.mean = duration_param(p, "mean", what);
    d.sigma = duration_param(p, has(p, "sigma") ? "sigma" : "stddev", what);
  } else if (name == "lognormal") {
    d.kind = DelayKind::lognormal;
    const int forms = int(has(p, "mean")) + int(has(p, "median")) + int(has(p, "mu"));
    if (forms != 1 || !has(p, "sigma")) {
      fail(
          "delay lognormal needs sigma= (the shape, e.g. sigma=0.8) and one of mean=, median= or mu= "
          "(lognormal:mean=50us,sigma=0.8)");
    }
    d.shape = number_param(p, "sigma", what);
    if (d.shape < 0 || d.shape > 10)
      fail(
          fmt::format("delay lognormal: sigma= ({}) must be from 0 to 10 (the shape "
                      "of ln(delay), dimensionless)",
                      p.at("sigma")));
    if (has(p, "unit") && !has(p, "mu")) fail("delay lognormal: unit= goes with mu= only");
    if (has(p, "mean")) {
      const double mean = duration_param(p, "mean", what);
      if (mean <= 0) fail("delay lognormal: mean= must be above 0");
      d.mu = std::log(mean) - d.shape * d.shape / 2;
    } else if (has(p, "median")) {
      const double median = duration_param(p, "median", what);
      if (median <= 0) fail("delay lognormal: median= must be above 0");
      d.mu = std::log(median);
    } else {
      const double unit = has(p, "unit") ? need(emulated::parse_time_unit(p.at("unit")), what + " unit=") : 1e3;
      d.mu = number_param(p, "mu", what) + std::log(unit);
    }
  } else if (name == "exponential") {
    d.kind = DelayKind::exponential;
    if (!has(p, "mean")) fail("delay exponential needs mean= (exponential:mean=50us)");
    const double mean = duration_param(p, "mean", what);
    if (mean <= 0) fail("delay exponential: mean= must be above 0");
    d.lambda = 1 / mean;
  } else if (name == "pareto") {
    d.kind = DelayKind::pareto;
    if (!has(p, "shape") || has(p, "scale") == has(p, "mean")) {
      fail("delay pareto needs shape= and one of scale= or mean= (pareto:scale=20us,shape=2.5)");
    }
    d.alpha = number_param(p, "shape", what);
    if (d.alpha <= 0) fail(fmt::format("delay pareto: shape= ({}) must be above 0", p.at("shape")));
    if (has(p, "scale")) {
      d.scale = duration_param(p, "scale", what);
    } else {
      if (d.alpha <= 1)
        fail(
            fmt::format("delay pareto: with mean= the shape must be above 1 (the mean of shape {} "
                        "is infinite); give scale= instead",
                        p.at("shape")));
      d.scale = duration_param(p, "mean", what) * (d.alpha - 1) / d.alpha;
    }
    if (d.scale <= 0) fail("delay pareto: the scale must be above 0");
  } else if (name == "table") {
    d.kind = DelayKind::table;
    if (!has(p, "file"))
      fail("delay table needs file= (table:file=PATH[,unit=us] or table:file=PATH,mean=50us,jitter=10us)");
    d.table_file = p.at("file");
    std::vector<double> values;
    try {
      values = read_delay_table(d.table_file);
    } catch (const Error& e) {
      fail(e.what());
    }
    if (has(p, "mean") || has(p, "jitter")) {
      if (!has(p, "mean") || !has(p, "jitter") || has(p, "unit")) {
        fail("delay table: a tc-netem table takes mean= and jitter= together (and no unit=)");
      }
      const double mean = duration_param(p, "mean", what);
      const double jitter = duration_param(p, "jitter", what);
      for (double& v : values) v = mean + jitter * v / 8192;  // NETEM_DIST_SCALE
    } else {
      const double unit = has(p, "unit") ? need(emulated::parse_time_unit(p.at("unit")), what + " unit=") : 1e3;
      for (double v : values) {
        if (v < 0)
          fail(
              fmt::format("delay table: '{}' holds a negative delay ({}); a tc-netem table (values around "
                          "0) needs mean= and jitter=",
                          d.table_file, v));
      }
      for (double& v : values) v *= unit;
    }
    d.table = std::move(values);
  }
  if (has(p, "correlation")) {
    d.correlation = need(emulated::parse_fraction(p.at("correlation")), what + " correlation=");
    if (d.correlation >= 1) fail(fmt::format("{}: correlation= must be below 100 %", what));
  }
  if (has(p, "clip")) d.clip = duration_param(p, "clip", what);
  return d;
}

RateLimit parse_rate_clause(std::string_view key, std::string_view value) {
  const auto items = split(value, ',');
  RateLimit limit;
  limit.bytes_per_second = need(emulated::parse_rate(items[0]), fmt::format("{}=", key));
  // Beyond any link, and beyond what the bucket's byte counts hold (found by fuzz_strings:
  // the default burst below overflowed its conversion to an integer).
  constexpr double max_bytes_per_second = 1e15;  // 8 Pb/s
  if (!(limit.bytes_per_second <= max_bytes_per_second)) {
    fail(fmt::format("{}={}: more than 8 Pb/s is no network rate", key, items[0]));
  }
  // Default burst: 4 ms at the rate, at least 64 KiB. Shallower buckets lose tokens whenever
  // the pipeline behind them pauses (a held connection takes a while to send again): 4
  // receivers' worth of 1 MiB pages into in=10Gbps reached 5.6 Gb/s with a 1 ms bucket, 10.0
  // with 4 MiB (README, "Emulated network").
  limit.burst_bytes = std::max<std::uint64_t>(64 * 1024, static_cast<std::uint64_t>(limit.bytes_per_second * 0.004));
  const Params p = parse_params({items.begin() + 1, items.end()}, fmt::format("{}=", key), {"burst"});
  if (has(p, "burst")) {
    limit.burst_bytes = need(emulated::parse_size(p.at("burst")), fmt::format("{}= burst=", key));
    if (limit.burst_bytes == 0) fail(fmt::format("{}= burst= must be at least 1 byte", key));
  }
  return limit;
}

SlowdownWindow parse_slowdown(std::string_view value) {
  const auto items = split(value, ',');
  SlowdownWindow w;
  const std::string_view target = items[0];
  if (target == "node") {
    w.target = SlowdownWindow::Target::node;
  } else if (target.substr(0, 5) == "node:") {
    w.target = SlowdownWindow::Target::node;
    w.node_id =
        static_cast<std::uint32_t>(need(emulated::parse_unsigned(target.substr(5), 0xFFFFFFFFu), "slowdown node:ID"));
  } else if (target.substr(0, 5) == "link:") {
    w.target = SlowdownWindow::Target::link;
    const std::string_view endpoint = target.substr(5);
    const auto colon = endpoint.rfind(':');
    if (colon == std::string_view::npos || colon == 0) {
      fail(fmt::format("slowdown link: '{}' is not HOST:PORT (e.g. link:127.0.0.1:5000)", endpoint));
    }
    std::string_view host = endpoint.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    w.link_host = std::string(host);
    w.link_port = static_cast<std::uint16_t>(
        need(emulated::parse_unsigned(endpoint.substr(colon + 1), 65535), "slowdown link port"));
  } else {
    fail(
        fmt::format("slowdown: '{}' is not a target (node, node:ID or link:HOST:PORT come first, e.g. "
                    "slowdown=node:2,at=10s,for=5s,rate=25%)",
                    target));
  }
  const Params p = parse_params({items.begin() + 1, items.end()}, "slowdown", {"at", "for", "every", "rate", "delay"});
  if (!has(p, "at") || !has(p, "for")) fail("slowdown needs at= and for= (e.g. slowdown=node,at=10s,for=5s,rate=25%)");
  if (!has(p, "rate") && !has(p, "delay"))
    fail("slowdown needs rate= (a percentage of the rates) and/or delay= (added to each draw)");
  w.at = Nanos(static_cast<Nanos::rep>(duration_param(p, "at", "slowdown")));
  w.duration = Nanos(static_cast<Nanos::rep>(duration_param(p, "for", "slowdown")));
  if (w.duration <= Nanos(0)) fail("slowdown: for= must be above 0");
  if (has(p, "every")) {
    w.every = Nanos(static_cast<Nanos::rep>(duration_param(p, "every", "slowdown")));
    if (*w.every <= w.duration)
      fail(fmt::format("slowdown: every= ({}) must be longer than for= ({})", p.at("every"), p.at("for")));
  }
  if (has(p, "rate")) w.rate_factor = need(emulated::parse_fraction(p.at("rate")), "slowdown rate=");
  if (has(p, "delay")) w.extra_delay = Nanos(static_cast<Nanos::rep>(duration_param(p, "delay", "slowdown")));
  return w;
}

}  // namespace

bool EmulationConfig::shapes_anything() const noexcept {
  return delay.kind != DelayKind::none || connection_rate || node_in || node_out || core || !slowdowns.empty();
}

std::vector<double> read_delay_table(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw Error(Errc::invalid_option,
                fmt::format("delay table '{}': cannot open it: {}", path, std::generic_category().message(errno)));
  }
  std::vector<double> values;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      const auto parsed = emulated::parse_number(word);
      if (!parsed.ok()) {
        throw Error(Errc::invalid_option,
                    fmt::format("delay table '{}', line {}: '{}' is not a number", path, number, word));
      }
      values.push_back(parsed.value());
    }
  }
  if (values.empty()) {
    throw Error(Errc::invalid_option,
                fmt::format("delay table '{}' holds no values (numbers separated by white space, '#' comments)", path));
  }
  return values;
}

EmulationConfig parse_emulation_spec(std::string_view spec) {
  EmulationConfig config;
  config.spec = std::string(spec);
  const std::string_view text = trim(spec);
  if (text.empty() || text == "none") return config;
  std::set<std::string> seen;
  const auto clauses = split(text, ';');
  for (std::size_t i = 0; i < clauses.size(); ++i) {
    const std::string_view clause = clauses[i];
    try {
      if (clause.empty()) {
        if (i + 1 == clauses.size()) continue;  // a trailing ';'
        fail("an empty clause (two ';' in a row)");
      }
      const auto eq = clause.find('=');
      if (eq == std::string_view::npos) {
        fail("not KEY=VALUE (keys: delay, rate, in, out, core, slowdown, seed, node)");
      }
      const std::string key(trim(clause.substr(0, eq)));
      const std::string_view value = trim(clause.substr(eq + 1));
      if (value.empty()) fail(fmt::format("{}= has no value", key));
      if (key != "slowdown" && !seen.insert(key).second) fail(fmt::format("{}= given twice", key));
      if (key == "delay")
        config.delay = parse_delay(value);
      else if (key == "rate")
        config.connection_rate = parse_rate_clause(key, value);
      else if (key == "in")
        config.node_in = parse_rate_clause(key, value);
      else if (key == "out")
        config.node_out = parse_rate_clause(key, value);
      else if (key == "core")
        config.core = parse_rate_clause(key, value);
      else if (key == "slowdown")
        config.slowdowns.push_back(parse_slowdown(value));
      else if (key == "seed")
        config.seed = need(emulated::parse_unsigned(value, ~std::uint64_t{0}), "seed=");
      else if (key == "node")
        config.node_id = static_cast<std::uint32_t>(need(emulated::parse_unsigned(value, 0xFFFFFFFFu), "node="));
      else
        fail(fmt::format("unknown key '{}' (keys: delay, rate, in, out, core, slowdown, seed, node)", key));
    } catch (const SpecError& e) {
      throw Error(Errc::invalid_option, fmt::format("emulation spec '{}': clause '{}': {}", spec, clause, e.message));
    }
  }
  for (const auto& w : config.slowdowns) {
    if (w.rate_factor != 1 && !config.connection_rate && !config.node_in && !config.node_out) {
      throw Error(Errc::invalid_option,
                  fmt::format("emulation spec '{}': a slowdown with rate= scales the rates, but none is set: add "
                              "rate=, in= or out= (or slow down with delay=)",
                              spec));
    }
  }
  return config;
}

}  // namespace netio
