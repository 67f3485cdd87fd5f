#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job: builds netio (Release) and runs the loopback benchmark, on the POSIX back-end
# and on libfabric's tcp provider:
#   1. netio_recv + netio_throughput --sweep (8 B ... 1 MiB), high-throughput sockets: the
#      performance table (the receiver checks sequence numbers and checksums)
#   2. the same sweep, shorter, with netio_throughput --verify (distinct payload per message,
#      which costs the sender CPU): must report 0 lost, duplicated and corrupt
#   3. netio_pingpong round-trip times of 8 B and 1 KiB messages
# Installs missing Debian packages first. Options:
#   --time DURATION      per message size in the sweep (default 1s)
#   --transports LIST    tcp, fabric or tcp,fabric (default)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=SCRIPTDIR/lib/bench_common.sh
source scripts/lib/bench_common.sh

per_size=1s
transports=tcp,fabric
while [ $# -gt 0 ]; do
  case "$1" in
    --time) per_size="$2"; shift 2 ;;
    --transports) transports="$2"; shift 2 ;;
    -h|--help) sed -n '3,13p' "$0"; exit 0 ;;
    *) echo "benchmark.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

scripts/install-deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DNETIO_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j"$(nproc)" >/dev/null
bin=build/release/tools
export FI_SOCKETS_PE_WAITTIME=0

# Sender and receiver on different cores when there are two.
recv_cpu=0; send_cpu=0
[ "$(nproc)" -ge 2 ] && recv_cpu=1

scratch="$(mktemp -d)"
pids=()
trap 'bench_cleanup "$scratch" "${pids[@]}"' EXIT
not_listening="benchmark.sh: the receiver did not start listening"

for transport in ${transports//,/ }; do
  listen="$(bench_endpoint "$transport" 0)"
  sweep() {  # title, duration per size, extra sender options
    echo "== $1"
    rm -f "$scratch/port"
    "$bin/netio_recv" -e "$listen" --verify --report-interval 0 --port-file "$scratch/port" --cpu "$recv_cpu" \
        --timeout 300s >"$scratch/recv.txt" &
    pids+=($!)
    bench_wait_for_port "$scratch/port" "$not_listening"
    "$bin/netio_throughput" -e "$(bench_endpoint "$transport" "$(cat "$scratch/port")")" --sweep -t "$2" ${3:-} \
        --cpu "$send_cpu" --timeout 300s >/dev/null
    wait "${pids[-1]}"  # non-zero (and so the script) if verification found anything
    cat "$scratch/recv.txt"
    echo
  }
  sweep "throughput, $transport back-end: netio_throughput --sweep -t $per_size (receiver's view)" "$per_size"
  sweep "verification, $transport back-end: netio_throughput --sweep -t 200ms --verify" 200ms --verify

  for size in 8 1KiB; do
    echo "== round trip, $transport back-end: netio_pingpong -s $size -n 20000 -w 2000"
    rm -f "$scratch/port"
    "$bin/netio_pingpong" --server -e "$listen" --port-file "$scratch/port" --cpu "$recv_cpu" --timeout 120s \
        >/dev/null 2>&1 &
    pids+=($!)
    bench_wait_for_port "$scratch/port" "$not_listening"
    "$bin/netio_pingpong" -e "$(bench_endpoint "$transport" "$(cat "$scratch/port")")" -s "$size" -n 20000 -w 2000 \
        --cpu "$send_cpu" --timeout 120s 2>/dev/null
    kill "${pids[-1]}" 2>/dev/null || true
    wait "${pids[-1]}" 2>/dev/null || true
    echo
  done
done
