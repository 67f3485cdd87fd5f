// SPDX-License-Identifier: MIT
// netio_tsbench's role mode: the file that lists every node of a run across processes or
// hosts, and the rank that says which of them this process is.
//
// The file: one node per line, in rank order; '#' starts a comment, blank lines are skipped.
//   input   [ENDPOINT]              an input node (the endpoint is informative: inputs only connect)
//   compute ENDPOINT [DDE_ENDPOINT] a compute node listening at ENDPOINT; with a second endpoint
//                                   it also runs a DDE replica there
// Every input and compute line counts as one rank, from 0. Input i is the i-th input line and
// compute c the c-th compute line, whatever their order; DFS needs at least one DDE.
#pragma once

#include "netio/endpoint.hpp"
#include "netio/scheduler/time.hpp"

#include <optional>
#include <string>
#include <vector>

namespace netio::tools::tsbench {

struct ClusterNode {
  enum class Role { input, compute };
  Role role = Role::input;
  std::uint32_t index = 0;           // input or compute index
  std::optional<Endpoint> endpoint;  // compute: required
  std::optional<Endpoint> dde;       // compute: its DDE replica, if it runs one
};

struct ClusterConfig {
  std::vector<ClusterNode> nodes;  // by rank
  std::uint32_t inputs = 0;
  std::uint32_t computes = 0;

  std::vector<Endpoint> compute_endpoints() const;  // by compute index
  std::vector<Endpoint> dde_endpoints() const;
};

// Throws netio::Error (Errc::invalid_option) naming the file, the line and what is wrong.
ClusterConfig parse_cluster_config(const std::string& text, const std::string& file_name);
ClusterConfig read_cluster_config(const std::string& path);

// The rank of this process: `given` (--rank) when set, else the first of SLURM_PROCID,
// OMPI_COMM_WORLD_RANK and PMI_RANK that is set. Throws netio::Error when none is, or one
// is not a number.
std::uint32_t resolve_rank(std::optional<std::uint32_t> given);

}  // namespace netio::tools::tsbench
