// SPDX-License-Identifier: MIT
// CLI11 glue shared by the tools: options that take sizes, durations and CPU numbers with
// the syntax of units.hpp, and the error/exit conventions.
#pragma once

#include "emulate_option.hpp"  // --emulate SPEC, for every tool

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace netio::tools {

// The endpoint forms every tool's --endpoint takes, for its --help.
inline constexpr const char* endpoint_forms =
    "tcp://HOST:PORT, shm://NAME:PORT (processes of this node) or fabric://HOST:PORT[?provider=NAME]";

// A tool's main() after its options were declared on `app`: parses the command line, runs
// `validate` (which throws CLI::ValidationError, or another CLI::ParseError, for arguments
// that do not go together), and on success `run` under run_tool() (tool_main.hpp). Bad
// arguments print the parser's message and give exit_usage (2); --help and --version print
// and give 0.
int parse_and_run(CLI::App& app, int argc, char** argv, const std::function<void()>& validate,
                  const std::function<int()>& run);

// What every tool does with a CLI::ParseError: prints it as CLI11 does (help and version on
// stdout) and returns 0 for --help/--version, exit_usage for every real usage error. An
// argument that is an option of the sibling tool (netio_recv's --size belongs to
// netio_throughput) is named with the tool it belongs to.
int exit_for_parse_error(CLI::App& app, const CLI::ParseError& error);

// Transformers: rewrite "4KiB" to "4096" and "2s" to "2000000000" (nanoseconds), or reject
// the input with the parser's message. Use them on integer options:
//   app.add_option("-s,--size", bytes)->transform(size_transformer());
// On a list option with ->delimiter(',') they apply to each element.
CLI::Validator size_transformer();
CLI::Validator duration_transformer();

// Convenience: an option bound to a std::chrono::nanoseconds, default shown in --help.
CLI::Option* add_duration_option(CLI::App& app, const std::string& names, std::chrono::nanoseconds& target,
                                 const std::string& description);
// The same, for an optional duration (unset unless given).
CLI::Option* add_duration_option(CLI::App& app, const std::string& names,
                                 std::optional<std::chrono::nanoseconds>& target, const std::string& description);
CLI::Option* add_size_option(CLI::App& app, const std::string& names, std::uint64_t& target,
                             const std::string& description);

// An option that takes one of a few words, each naming a value of `target` (an enum): the
// help shows TEXT:{words} in the order given, anything else is refused with them. The default
// shown is the word naming target's value when the option is added.
template <typename T>
CLI::Option* add_choice_option(CLI::App& app, const std::string& names, T& target,
                               std::vector<std::pair<std::string, T>> choices, const std::string& description) {
  std::vector<std::string> words;
  std::string current;
  for (const auto& choice : choices) {
    words.push_back(choice.first);
    if (current.empty() && choice.second == target) current = choice.first;
  }
  return app
      .add_option_function<std::string>(
          names,
          [&target, choices](const std::string& word) {
            for (const auto& [name, value] : choices) {
              if (name == word) target = value;
            }
          },
          description)
      ->check(CLI::IsMember(words))
      ->default_str(current);
}

// --cpu N[,M]: where the tool pins its own thread (N) and the netio event-loop thread
// (M, default N). Each CPU is checked against the CPUs this process may run on.
struct CpuChoice {
  std::optional<int> tool_thread;
  std::optional<int> loop_thread;
};
CLI::Option* add_cpu_option(CLI::App& app, CpuChoice& target);

// --timeout DURATION: the last-resort bound on the whole run (0: none).
CLI::Option* add_timeout_option(CLI::App& app, std::chrono::nanoseconds& target);

// --connect-timeout DURATION: how long a tool that connects waits for its peer to start,
// trying again in the background (netio/socket_options.hpp; 0: without end).
CLI::Option* add_connect_timeout_option(CLI::App& app, std::chrono::nanoseconds& target);

// --version and -V: prints the tool's name and netio's version, the git commit, the build
// type, the back-ends built in and the optional features (build_facts.hpp), and exits 0.
CLI::Option* add_version_flag(CLI::App& app);

// The text used in every tool's --help for sizes and durations.
extern const char* const units_help;

}  // namespace netio::tools
