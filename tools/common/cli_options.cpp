// SPDX-License-Identifier: MIT
#include "cli_options.hpp"

#include "build_facts.hpp"
#include "cpu_affinity.hpp"
#include "tool_main.hpp"
#include "units.hpp"

#include "netio/version.hpp"

#include <fmt/format.h>

namespace netio::tools {

const char* const units_help =
    "Sizes: 64, 64B, 4K or 4KiB (=4096), 1M or 1MiB, 1G or 1GiB (K/M/G are binary, like iperf3;\n"
    "KB/MB/GB are refused as ambiguous). Durations: 10us, 500ms, 2s, 1.5s, 1m, 1h; a bare\n"
    "number is seconds.";

int parse_and_run(CLI::App& app, int argc, char** argv, const std::function<void()>& validate,
                  const std::function<int()>& run) {
  try {
    app.parse(argc, argv);
    if (validate) validate();
  } catch (const CLI::ParseError& e) {
    return exit_for_parse_error(app, e);
  }
  return run_tool(app.get_name(), run);
}

namespace {

// Options one tool of a sender/receiver pair has and the other has not: a user who gives
// netio_recv --size meant netio_throughput.
struct ForeignOption {
  std::string_view tool;   // where it was given
  std::string_view owner;  // where it belongs
  std::string_view option;
};
constexpr ForeignOption foreign_options[] = {
    {"netio_recv", "netio_throughput", "--size"},          {"netio_recv", "netio_throughput", "-s"},
    {"netio_recv", "netio_throughput", "--sweep"},         {"netio_recv", "netio_throughput", "--page-size"},
    {"netio_recv", "netio_throughput", "--pages"},         {"netio_recv", "netio_throughput", "--zero-copy-threshold"},
    {"netio_recv", "netio_throughput", "--flush-timeout"}, {"netio_recv", "netio_throughput", "--publish"},
    {"netio_recv", "netio_throughput", "--subscribers"},   {"netio_recv", "netio_throughput", "--max-connections"},
    {"netio_recv", "netio_throughput", "--policy"},        {"netio_throughput", "netio_recv", "--senders"},
    {"netio_throughput", "netio_recv", "--subscribe"},     {"netio_throughput", "netio_recv", "--report-interval"},
    {"netio_throughput", "netio_recv", "--interval"},
};

void name_foreign_options(const CLI::App& app, const std::vector<std::string>& extras) {
  for (const std::string& extra : extras) {
    const std::string option = extra.substr(0, extra.find('='));
    for (const ForeignOption& foreign : foreign_options) {
      if (foreign.tool == app.get_name() && foreign.option == option) {
        fmt::print(stderr, "{}: {} is an option of {}, not of {} (man {})\n", app.get_name(), option, foreign.owner,
                   app.get_name(), foreign.owner);
      }
    }
  }
}

}  // namespace

int exit_for_parse_error(CLI::App& app, const CLI::ParseError& error) {
  const int code = app.exit(error);
  if (code == 0) return exit_ok;  // --help, --version
  // Whatever the error CLI11 names first (a missing --endpoint, say), the arguments it did not
  // know are still listed: one of the sibling tool's is the likelier mistake.
  name_foreign_options(app, app.remaining());
  return exit_usage;
}

CLI::Validator size_transformer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        auto size = parse_size(text);
        if (!size) return size.error();
        text = std::to_string(size.value());
        return {};
      },
      "", "SIZE");
}

CLI::Validator duration_transformer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        auto duration = parse_duration(text);
        if (!duration) return duration.error();
        text = std::to_string(duration.value().count());
        return {};
      },
      "", "DURATION");
}

CLI::Option* add_duration_option(CLI::App& app, const std::string& names, std::chrono::nanoseconds& target,
                                 const std::string& description) {
  return app
      .add_option_function<std::int64_t>(
          names, [&target](std::int64_t ns) { target = std::chrono::nanoseconds(ns); }, description)
      ->transform(duration_transformer())
      ->type_name("DURATION")
      ->default_str(format_duration(target));
}

CLI::Option* add_duration_option(CLI::App& app, const std::string& names,
                                 std::optional<std::chrono::nanoseconds>& target, const std::string& description) {
  return app
      .add_option_function<std::int64_t>(
          names, [&target](std::int64_t ns) { target = std::chrono::nanoseconds(ns); }, description)
      ->transform(duration_transformer())
      ->type_name("DURATION");
}

CLI::Option* add_size_option(CLI::App& app, const std::string& names, std::uint64_t& target,
                             const std::string& description) {
  return app.add_option(names, target, description)
      ->transform(size_transformer())
      ->type_name("SIZE")
      ->default_str(format_size_compact(target));
}

CLI::Option* add_cpu_option(CLI::App& app, CpuChoice& target) {
  auto check_cpu = CLI::Validator(
      [](std::string& text) -> std::string {
        const auto comma = text.find(',');
        std::vector<std::string> parts{text.substr(0, comma)};
        if (comma != std::string::npos) parts.push_back(text.substr(comma + 1));
        for (const std::string& part : parts) {
          int cpu = -1;
          if (!CLI::detail::lexical_cast(part, cpu)) {
            return fmt::format("'{}' is not a CPU number (expected N or N,M)", text);
          }
          if (auto error = cpu_unavailable_reason(cpu)) return *error;
        }
        return {};
      },
      "", "CPU");
  return app
      .add_option_function<std::string>(
          "--cpu",
          [&target](const std::string& text) {
            const auto comma = text.find(',');
            target.tool_thread = std::stoi(text.substr(0, comma));
            target.loop_thread = comma == std::string::npos ? *target.tool_thread : std::stoi(text.substr(comma + 1));
          },
          "Pin the tool's thread to CPU N and the netio event-loop thread to CPU M (default: N as well)")
      ->check(check_cpu)
      ->type_name("N[,M]");
}

CLI::Option* add_timeout_option(CLI::App& app, std::chrono::nanoseconds& target) {
  return add_duration_option(app, "--timeout", target,
                             "Last-resort bound on the whole run; when it passes the tool reports what it has "
                             "and exits non-zero (0: no limit)");
}

CLI::Option* add_connect_timeout_option(CLI::App& app, std::chrono::nanoseconds& target) {
  return add_duration_option(app, "--connect-timeout", target,
                             "How long to wait for the peer to start: connecting is tried again in the background "
                             "until then (0: without end)");
}

CLI::Option* add_version_flag(CLI::App& app) {
  return app.set_version_flag("-V,--version", version_text(app.get_name()),
                              "Print the version, git commit, build type, back-ends and optional features, then exit");
}

}  // namespace netio::tools
