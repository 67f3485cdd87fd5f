#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# netio's sleeping round trip against raw blocking TCP (alternating_pingpong: both in turns
# between the same two processes) while both CPUs also run a background load at the lowest
# priority. An idle VM halts its vCPUs between round trips and wakes them through the host,
# which makes sleeping round trips swing by ±30 %; a low-priority load keeps the vCPUs
# running (the round trip's threads preempt it at once), so the ratio of one run moves by a
# few tenths of a per cent instead of several per cent, and a change of 1 % shows. The
# `thrash` load also streams 16 MiB through the caches between round trips, as other
# programs on a busy node do: what a round trip costs in cache misses then counts too.
#
#   tools/bench/loaded_rtt.sh [--build DIR] [--baseline DIR] [--load thrash|spin|none]
#                             [--sizes LIST] [--runs N] [--busy-poll]
#   --build DIR     Release build to measure (default build/release)
#   --baseline DIR  a second build, run in turns with the first (A/B): e.g. a worktree's
#   --load KIND     thrash (default: dd from /dev/zero in 16 MiB blocks), spin (a shell
#                   loop), none
#   --sizes LIST    ping sizes, comma-separated (default 8,1024)
#   --runs N        runs per size and build (default 6); each run is 20 pairs of 500 round
#                   trips and gives the median of its pairs' ratios
#   --busy-poll     both sides spin instead of sleeping (netio's loops, raw TCP's recv())
# Prints one line per run and, per size and build, the median of the runs' ratios.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=SCRIPTDIR/../../scripts/lib/bench_common.sh
source scripts/lib/bench_common.sh

build=build/release
baseline=""
load=thrash
sizes=8,1024
runs=6
busy=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --baseline) baseline="$2"; shift 2 ;;
    --load) load="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --busy-poll) busy=(--busy-poll); shift ;;
    -h|--help) sed -n '3,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) echo "loaded_rtt.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$load" in thrash|spin|none) ;; *) echo "loaded_rtt.sh: --load must be thrash, spin or none" >&2; exit 2 ;; esac
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "loaded_rtt.sh: --runs must be a positive integer" >&2; exit 2; }
[ "$(nproc)" -ge 2 ] || { echo "loaded_rtt.sh: needs two CPUs (the server on CPU 1, the client on CPU 0)" >&2; exit 2; }
builds=("$build")
[ -n "$baseline" ] && builds+=("$baseline")
for b in "${builds[@]}"; do
  [ -x "$b/tools/bench/alternating_pingpong" ] ||
    { echo "loaded_rtt.sh: no $b/tools/bench/alternating_pingpong: build $b first (scripts/benchmark.sh does)" >&2; exit 2; }
done

scratch="$(mktemp -d)"
loads=()
server_pid=""
trap 'bench_cleanup "$scratch" "$server_pid" "${loads[@]}"' EXIT
for cpu in 0 1; do
  case "$load" in
    thrash) taskset -c "$cpu" nice -n 19 dd if=/dev/zero of=/dev/null bs=16M status=none >/dev/null 2>&1 & loads+=($!) ;;
    # The name after the command ($0 of the spinning shell) lets loaded_rtt_test.sh find this
    # script's loads among other spinning processes.
    spin) taskset -c "$cpu" nice -n 19 sh -c 'while :; do :; done' "loaded_rtt.sh-load-$$" >/dev/null 2>&1 &
      loads+=($!) ;;
    none) ;;
  esac
done
sleep 0.5

# one_run BUILD SIZE: the median of one run's chunk-pair ratios.
one_run() {
  local bin="$1/tools/bench/alternating_pingpong"
  rm -f "$scratch/port"
  "$bin" --server --cpu 1 --timeout 60s --port-file "$scratch/port" "${busy[@]}" >/dev/null 2>&1 &
  server_pid=$!
  bench_wait_for_port "$scratch/port" "loaded_rtt.sh: the server did not start"
  "$bin" -e "tcp://127.0.0.1:$(cat "$scratch/port")" -s "$2" --chunks 20 -n 500 -w 50 --cpu 0 --timeout 60s \
    "${busy[@]}" --json >"$scratch/out.json"
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  python3 -c 'import json,sys; print("%.4f" % json.load(open(sys.argv[1]))["ratio"]["median"])' "$scratch/out.json"
}

echo "load: $load; netio/raw TCP round trip, median of 20 chunk pairs per run$([ ${#busy[@]} -gt 0 ] && echo ', busy-poll')"
for size in ${sizes//,/ }; do
  for ((i = 1; i <= runs; i++)); do
    for b in "${builds[@]}"; do
      r=$(one_run "$b" "$size")
      echo "$size B  $b  $r"
      echo "$r" >>"$scratch/$size.$(echo "$b" | tr '/' '_')"
    done
  done
done
echo "medians of the runs:"
for size in ${sizes//,/ }; do
  for b in "${builds[@]}"; do
    echo "$size B  $b  $(bench_median <"$scratch/$size.$(echo "$b" | tr '/' '_')")"
  done
done
