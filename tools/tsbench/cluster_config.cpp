// SPDX-License-Identifier: MIT
#include "tsbench/cluster_config.hpp"

#include "netio/error.hpp"
#include "netio/internal/reject.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace netio::tools::tsbench {

namespace {

constexpr netio::detail::Rejecter reject{Errc::invalid_option, ""};

}  // namespace

std::vector<Endpoint> ClusterConfig::compute_endpoints() const {
  std::vector<Endpoint> endpoints;
  for (const auto& node : nodes) {
    if (node.role == ClusterNode::Role::compute) endpoints.push_back(*node.endpoint);
  }
  return endpoints;
}

std::vector<Endpoint> ClusterConfig::dde_endpoints() const {
  std::vector<Endpoint> endpoints;
  for (const auto& node : nodes) {
    if (node.dde) endpoints.push_back(*node.dde);
  }
  return endpoints;
}

ClusterConfig parse_cluster_config(const std::string& text, const std::string& file_name) {
  ClusterConfig config;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::vector<std::string> fields;
    for (std::string word; words >> word;) fields.push_back(word);
    if (fields.empty()) continue;
    const auto where = fmt::format("{}:{}", file_name, number);
    auto endpoint = [&](const std::string& field) {
      try {
        return Endpoint::parse(field);
      } catch (const Error& e) {
        reject(fmt::format("{}: {}", where, e.what()));
      }
    };
    ClusterNode node;
    if (fields[0] == "input") {
      if (fields.size() > 2) reject(fmt::format("{}: 'input [ENDPOINT]' takes one endpoint at most", where));
      node.role = ClusterNode::Role::input;
      node.index = config.inputs++;
      if (fields.size() == 2) node.endpoint = endpoint(fields[1]);
    } else if (fields[0] == "compute") {
      if (fields.size() < 2 || fields.size() > 3) {
        reject(fmt::format("{}: 'compute ENDPOINT [DDE_ENDPOINT]' needs its endpoint (and at most a DDE's)", where));
      }
      node.role = ClusterNode::Role::compute;
      node.index = config.computes++;
      node.endpoint = endpoint(fields[1]);
      if (fields.size() == 3) node.dde = endpoint(fields[2]);
    } else {
      reject(fmt::format("{}: unknown role '{}' (input or compute)", where, fields[0]));
    }
    config.nodes.push_back(node);
  }
  if (config.inputs == 0 || config.computes == 0) {
    reject(fmt::format("{}: needs at least one input and one compute line ({} and {} found)", file_name, config.inputs,
                       config.computes));
  }
  return config;
}

ClusterConfig read_cluster_config(const std::string& path) {
  std::ifstream file(path);
  if (!file) reject(fmt::format("cannot read the cluster configuration {}", path));
  std::stringstream text;
  text << file.rdbuf();
  return parse_cluster_config(text.str(), path);
}

std::uint32_t resolve_rank(std::optional<std::uint32_t> given) {
  if (given) return *given;
  for (const char* name : {"SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"}) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') continue;
    char* end = nullptr;
    const unsigned long rank = std::strtoul(value, &end, 10);
    if (*end != '\0' || rank > 0xffffffffUL) reject(fmt::format("{}={} is not a rank", name, value));
    return static_cast<std::uint32_t>(rank);
  }
  reject("no rank: give --rank K, or run under srun / mpirun (SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK)");
}

}  // namespace netio::tools::tsbench
