#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README's "Emulated network" figures, from a build directory:
#   tools/bench/emulation.sh [BUILD_DIR] [pingpong|rate|shared|all]
# 1. netio_pingpong over three injected delays of equal mean (50 us) and different variance:
#    constant, uniform 0-100 us, log-normal sigma 1 (the paper's uniform vs log-normal);
#    BUSY_POLL=1: the client's loop spins (its timers fire on time, no wake-up);
# 2. netio_throughput through a rate-limited link (rate=RATE, default 2Gbps);
# 3. 4 netio_throughput processes into one netio_recv whose in= capacity is shared
#    (SHARED_IN, default 10Gbps).
# Prints JSON lines to stdout; run it under `flock /tmp/netio-bench.lock` on a shared box.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../../scripts/lib/bench_common.sh
source "$(dirname "$0")/../../scripts/lib/bench_common.sh"
build=${1:-build/release}
what=${2:-all}
tools="$build/tools"
work=$(mktemp -d)
pids=()
trap 'bench_cleanup --wait "$work" "${pids[@]}"' EXIT

pingpong() {
  "$tools/netio_pingpong" --server -e tcp://127.0.0.1:0 --port-file "$work/pp.port" --timeout 300s >/dev/null 2>&1 &
  pids+=($!)
  local port
  port=$(bench_wait_for_port --print "$work/pp.port" "no port in $work/pp.port")
  for spec in none 'delay=constant:50us' 'delay=uniform:min=0us,max=100us' 'delay=lognormal:mean=50us,sigma=1'; do
    local out
    out=$("$tools/netio_pingpong" -e "tcp://127.0.0.1:$port" -s 64 -n "${ITERATIONS:-20000}" -w 1000 --json \
          --emulate "$spec" --timeout 120s ${BUSY_POLL:+--busy-poll})
    echo "{\"figure\":\"pingpong\",\"emulate\":\"$spec\",\"result\":$out}"
  done
}

rate() {
  local spec="rate=${RATE:-2Gbps}"
  "$tools/netio_recv" -e tcp://127.0.0.1:0 --port-file "$work/rate.port" --json --report-interval 0 --timeout 120s \
      > "$work/rate.json" &
  local recv=$!
  local port
  port=$(bench_wait_for_port --print "$work/rate.port" "no port in $work/rate.port")
  "$tools/netio_throughput" -e "tcp://127.0.0.1:$port" -s 64KiB -t "${SECONDS_PER_RUN:-5s}" --emulate "$spec" \
      --timeout 120s > /dev/null
  wait "$recv"
  echo "{\"figure\":\"rate\",\"emulate\":\"$spec\",\"receiver\":$(cat "$work/rate.json")}"
}

shared() {
  local spec="in=${SHARED_IN:-10Gbps}"
  # netio_recv counts one stream and ends with the first end-of-stream it sees, which would
  # cut off the other senders: here it only receives (and shapes), and the senders stop at
  # their --timeout (reporting what they sent, without an end of stream; exit status 1).
  "$tools/netio_recv" -e tcp://127.0.0.1:0 --port-file "$work/shared.port" --report-interval 0 -n 1000000000000 \
      --timeout 120s --emulate "$spec" > /dev/null 2>&1 &
  local recv=$!
  pids+=("$recv")
  local port
  port=$(bench_wait_for_port --print "$work/shared.port" "no port in $work/shared.port")
  local senders=()
  for i in 1 2 3 4; do
    "$tools/netio_throughput" -e "tcp://127.0.0.1:$port" -s 64KiB -t 600s --timeout "${SECONDS_PER_RUN:-5s}" --json \
        > "$work/shared_send_$i.json" 2> "$work/shared_send_$i.err" &
    senders+=($!)
  done
  for pid in "${senders[@]}"; do wait "$pid" || true; done
  kill "$recv" 2>/dev/null || true
  for i in 1 2 3 4; do
    grep -q '"gbps"' "$work/shared_send_$i.json" || { cat "$work/shared_send_$i.err" >&2; exit 1; }
    echo "{\"figure\":\"shared\",\"emulate\":\"$spec\",\"sender\":$i,\"result\":$(cat "$work/shared_send_$i.json")}"
  done
}

case $what in
  pingpong) pingpong ;;
  rate) rate ;;
  shared) shared ;;
  all) pingpong; rate; shared ;;
  *) echo "usage: $0 [BUILD_DIR] [pingpong|rate|shared|all]" >&2; exit 2 ;;
esac
