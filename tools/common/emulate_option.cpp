// SPDX-License-Identifier: MIT
#include "emulate_option.hpp"

#include "netio/error.hpp"

namespace netio::tools {

CLI::Option* add_emulate_option(CLI::App& app, std::optional<netio::EmulationConfig>& target) {
  auto check_spec = CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          netio::parse_emulation_spec(text);
        } catch (const netio::Error& e) {
          return e.what();
        }
        return {};
      },
      "", "SPEC");
  return app
      .add_option_function<std::string>(
          "--emulate", [&target](const std::string& spec) { target = netio::parse_emulation_spec(spec); },
          "Shape this tool's links with the emulated network: delays drawn from a distribution, rate limits, "
          "slow-downs, e.g. 'delay=lognormal:mean=50us,sigma=0.8;rate=10Gbps' or 'in=10Gbps' (the grammar is in "
          "netio/emulation.hpp)")
      ->check(check_spec)
      ->type_name("SPEC");
}

}  // namespace netio::tools
