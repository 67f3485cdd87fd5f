// SPDX-License-Identifier: MIT
#include "peer_access_options.hpp"

#include "netio/error.hpp"

#include <string>

namespace netio::tools {

netio::AdmissionOptions PeerAccess::admission() const {
  netio::AdmissionOptions options;
  options.allow = allow;
  options.key = key;
  return options;
}

namespace {

// A CLI11 validator from a parser that throws netio::Error: the error's text is the message.
template <typename Parse>
CLI::Validator validator_of(Parse parse, const std::string& name) {
  return CLI::Validator(
      [parse](std::string& text) -> std::string {
        try {
          parse(text);
        } catch (const netio::Error& e) {
          return e.what();
        }
        return {};
      },
      "", name);
}

}  // namespace

void add_peer_access_options(CLI::App& app, PeerAccess& target, bool listens) {
  if (listens) {
    const auto parse = [](const std::string& text) { return netio::parse_peer_networks(text); };
    app.add_option_function<std::string>(
           "--allow", [&target, parse](const std::string& text) { target.allow = parse(text); },
           "Accept connections only from these networks (CIDR, IPv4 or IPv6, comma-separated), e.g. "
           "'10.0.0.0/8,fd00::/8'; others are refused with a reason")
        ->check(validator_of(parse, "CIDR[,CIDR...]"))
        ->type_name("CIDR[,CIDR...]");
  }
  const auto load = [](const std::string& path) { return netio::PreSharedKey::from_file(path); };
  app.add_option_function<std::string>(
         "--key-file", [&target, load](const std::string& path) { target.key = load(path); },
         "Authenticate peers with the pre-shared key in FILE (64 hexadecimal digits, mode 600; both sides need the "
         "same key)")
      ->check(validator_of(load, "FILE"))
      ->type_name("FILE");
}

}  // namespace netio::tools
