#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# User-space instructions per round trip, client and server, of netio_pingpong over tcp://
# and of raw TCP (tcp_pingpong), counted by valgrind's callgrind. Unlike a timed round trip
# this does not move with the VM's noise, so a change to the round-trip path can be judged
# on a machine whose timings swing by a factor of two from one run to the next.
#
# Each side is counted twice, for --short and --long round trips (sleeping mode: a spinning
# side would count its idle polls), and the difference divided by the difference of the
# counts: start-up, connection set-up and the final statistics cancel out. Prints a Markdown
# table; needs valgrind (Debian package valgrind).
#   tools/bench/rtt_instructions.sh [--build DIR] [--size BYTES] [--short N] [--long N]
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=SCRIPTDIR/../../scripts/lib/bench_common.sh
source scripts/lib/bench_common.sh

build=build/release
size=8
short=1000
long=11000
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --short) short="$2"; shift 2 ;;
    --long) long="$2"; shift 2 ;;
    -h|--help) sed -n '3,12p' "$0"; exit 0 ;;
    *) echo "rtt_instructions.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
bin="$build/tools"
for b in netio_pingpong bench/tcp_pingpong; do
  [ -x "$bin/$b" ] || { echo "rtt_instructions.sh: no $bin/$b: build $build first (scripts/benchmark.sh does)" >&2; exit 2; }
done
command -v valgrind >/dev/null || { echo "rtt_instructions.sh: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
[ "$long" -gt "$short" ] || { echo "rtt_instructions.sh: --long must be more than --short" >&2; exit 2; }

scratch="$(mktemp -d)"
server_pid=
trap 'bench_cleanup "$scratch" "$server_pid"' EXIT

# Instructions callgrind counted in the run whose stderr is $1.
collected() { sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$1"; }

# count SYSTEM SIDE ROUND_TRIPS: the instructions of one side of one run.
count() {
  local system=$1 side=$2 n=$3 server client
  if [ "$system" = netio ]; then
    server=("$bin/netio_pingpong" --server -e tcp://127.0.0.1:0); client=("$bin/netio_pingpong")
  else
    server=("$bin/bench/tcp_pingpong" --server); client=("$bin/bench/tcp_pingpong")
  fi
  rm -f "$scratch/port" "$scratch/err"
  local measure=(valgrind --tool=callgrind --callgrind-out-file="$scratch/out")
  if [ "$side" = server ]; then
    "${measure[@]}" "${server[@]}" --timeout 120s --port-file "$scratch/port" >/dev/null 2>"$scratch/err" &
  else
    "${server[@]}" --timeout 120s --port-file "$scratch/port" >/dev/null 2>&1 &
  fi
  server_pid=$!
  bench_wait_for_port "$scratch/port" "rtt_instructions.sh: the server did not start"
  local run_client=("${client[@]}" -e "tcp://127.0.0.1:$(cat "$scratch/port")" -s "$size" -n "$n" -w 10 --timeout 120s)
  if [ "$side" = server ]; then "${run_client[@]}" >/dev/null; else "${measure[@]}" "${run_client[@]}" >/dev/null 2>"$scratch/err"; fi
  kill -INT "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
  collected "$scratch/err"
}

per_round_trip() {
  local a b
  a=$(count "$1" "$2" "$short")
  b=$(count "$1" "$2" "$long")
  [ -n "$a" ] && [ -n "$b" ] || { echo "rtt_instructions.sh: callgrind gave no count for $1 $2" >&2; exit 1; }
  echo $(( (b - a) / (long - short) ))
}

declare -A result
for system in netio tcp; do
  for side in client server; do result[$system,$side]=$(per_round_trip "$system" "$side"); done
done
echo "| user-space instructions per round trip, $size B | client | server | both |"
echo "|---|---:|---:|---:|"
for system in netio tcp; do
  name=$([ "$system" = netio ] && echo "netio_pingpong (tcp://)" || echo "raw TCP (tcp_pingpong)")
  echo "| $name | ${result[$system,client]} | ${result[$system,server]} | $(( result[$system,client] + result[$system,server] )) |"
done
