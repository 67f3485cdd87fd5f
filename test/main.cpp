// SPDX-License-Identifier: MIT
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <sys/resource.h>

int main(int argc, char* argv[]) {
  // Hundreds of loopback connections, each taking several descriptors on libfabric (an EQ
  // and a CQ cost three each with the tcp provider): lift the soft limit to the hard one.
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
  return Catch::Session().run(argc, argv);
}
