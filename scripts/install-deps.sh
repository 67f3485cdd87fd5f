#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian 12 packages netio needs, if any are missing. Safe to run again.
#   scripts/install-deps.sh          what the build, the tests and the benchmarks need
#   scripts/install-deps.sh --fuzz   also clang and libFuzzer's runtime (scripts/fuzz.sh)
#   scripts/install-deps.sh --ns3    also ns-3 (the optional packet-level fat-tree model,
#                                    docs/design/fabric-model.md; not for CI by default)
set -euo pipefail

packages=(g++ cmake make pkg-config python3 libfabric-dev libfabric-bin librdmacm-dev libibverbs-dev
          libfmt-dev libsodium-dev libcli11-dev catch2 libzmq3-dev gnuplot-nox
          libxxhash-dev  # the tools' verification checksum (XXH3)
          libmicrohttpd-dev  # netio::metrics: the HTTP server Prometheus scrapes (NETIO_WITH_METRICS)
          prometheus python3-prometheus-client  # the metrics tests: a real Prometheus, the exposition's parser
          valgrind  # tools/bench/rtt_instructions.sh and its test
          pandoc    # the man pages (docs/man)
          doxygen   # the API reference (docs/api)
          pybind11-dev python3-dev python3-pytest  # the Python module (netio/python) and its suite
          python3-zmq python3-numpy  # the Python module's benchmark against pyzmq; numpy arrays in its suite
          clang-format clang-tidy)  # scripts/format.sh (the suite's style.format test), scripts/tidy.sh
for option in "$@"; do
  case "$option" in
    --fuzz) packages+=(clang libclang-rt-14-dev) ;;
    --ns3) packages+=(libns3-dev) ;;
    *) echo "install-deps: unknown option $option (--fuzz, --ns3)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
