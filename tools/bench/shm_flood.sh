#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What a shm:// wake-up flood costs a receiver (issue 49, item 11). netio_recv on CPU 1, a
# 64 KiB high-throughput stream from netio_throughput on CPU 0, and shm_wakeup_flood (a peer
# that writes wake-up bytes without end) on CPU 0 beside the sender, in turns, --runs times:
#   alone      the stream by itself
#   spin       the stream beside a shell loop on CPU 0: what sharing the sender's CPU costs
#              (the reconnecting flooder spins too), the reference of `reconnect`
#   once       the stream beside a flooder that stays away once dropped (the issue's case)
#   reconnect  the stream beside a flooder that reconnects and floods again at once, forever
#   idle       no stream: the receiver's CPU time while the reconnecting flooder runs, as a
#              share of a core (utime + stime from /proc, over the flood's duration)
# One line per run, then the medians (min-max) and the rates against `alone` (and `reconnect`
# against `spin`), paired within a run.
#
#   tools/bench/shm_flood.sh [--build DIR] [--runs N] [--time DURATION]
#   --build DIR       Release build (default build/release)
#   --runs N          runs of each case (default 3)
#   --time DURATION   the stream's and the flood's duration, in seconds (default 5)
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=SCRIPTDIR/../../scripts/lib/bench_common.sh
source scripts/lib/bench_common.sh

build=build/release
runs=3
seconds=5
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --time) seconds="${2%s}"; shift 2 ;;
    -h|--help) sed -n '3,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) echo "shm_flood.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "shm_flood.sh: --runs must be a positive integer" >&2; exit 2; }
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "shm_flood.sh: --time must be whole seconds" >&2; exit 2; }
bin="$build/tools"
for program in netio_recv netio_throughput bench/shm_wakeup_flood; do
  [ -x "$bin/$program" ] || { echo "shm_flood.sh: no $bin/$program (build it in $build)" >&2; exit 2; }
done

scratch="$(mktemp -d)"
pids=()
trap 'bench_cleanup "$scratch" "${pids[@]}"' EXIT
ticks=$(getconf CLK_TCK)

# The receiver's utime + stime so far, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

start_receiver() {
  rm -f "$scratch/port"
  "$bin/netio_recv" -e "$(bench_endpoint shm 0)" --report-interval 0 --json --cpu 1 --port-file "$scratch/port" \
      --timeout "$((seconds + 20))s" >"$scratch/recv.json" 2>"$scratch/recv.err" &
  pids+=($!)
  port=$(bench_wait_for_port --print "$scratch/port" "shm_flood.sh: netio_recv did not start listening")
}

# stream CASE RUN [FLOODER OPTION...]: the stream, with a flooder unless CASE is alone.
stream() {
  local case="$1" run="$2" flood_pid=""
  shift 2
  start_receiver
  local receiver_pid="${pids[-1]}"
  if [ "$case" = spin ]; then
    taskset -c 0 timeout "$((seconds + 1))" sh -c 'while :; do :; done' &
    flood_pid=$!
    pids+=("$flood_pid")
  elif [ "$case" != alone ]; then
    "$bin/bench/shm_wakeup_flood" -e "$(bench_endpoint shm "$port")" -t "$((seconds + 1))s" --cpu 0 --json "$@" \
        >"$scratch/flood.json" 2>/dev/null &
    flood_pid=$!
    pids+=("$flood_pid")
    sleep 0.2  # flooding before the stream starts
  fi
  "$bin/netio_throughput" -e "$(bench_endpoint shm "$port")" -s 64KiB -t "${seconds}s" --cpu 0 \
      --timeout "$((seconds + 20))s" >/dev/null 2>"$scratch/send.err" || true
  wait "$receiver_pid" 2>/dev/null || true
  [ -z "$flood_pid" ] || wait "$flood_pid" 2>/dev/null || true
  [ "$case" = spin ] && flood_pid=""
  python3 - "$scratch/recv.json" "$case" "$run" "${flood_pid:+$scratch/flood.json}" <<'EOF' | tee -a "$scratch/runs.txt"
import json, sys
try:
    r = json.load(open(sys.argv[1]))["results"][0]
    rate = f"{r['gbps']:.2f} Gb/s"
except Exception:
    rate = "no result"
line = f"{sys.argv[2]} run {sys.argv[3]}: {rate}"
if len(sys.argv) > 4 and sys.argv[4]:
    f = json.load(open(sys.argv[4]))
    line += f"; flooder: {f['connections']} connections, {f['dropped']} dropped, {f['bytes'] / 2**20:.1f} MiB written"
print(line)
EOF
}

# idle RUN: no stream; the receiver's share of a core while the reconnecting flooder runs.
idle() {
  start_receiver
  local receiver_pid="${pids[-1]}" before after
  sleep 0.2
  before=$(cpu_ticks "$receiver_pid")
  "$bin/bench/shm_wakeup_flood" -e "$(bench_endpoint shm "$port")" -t "${seconds}s" --cpu 0 --json >"$scratch/flood.json" 2>/dev/null
  after=$(cpu_ticks "$receiver_pid")
  kill "$receiver_pid" 2>/dev/null || true
  wait "$receiver_pid" 2>/dev/null || true
  python3 - "$scratch/flood.json" "$run" "$((after - before))" "$ticks" <<'EOF' | tee -a "$scratch/runs.txt"
import json, sys
f = json.load(open(sys.argv[1]))
share = int(sys.argv[3]) / int(sys.argv[4]) / f["seconds"]
print(f"idle run {sys.argv[2]}: receiver {share * 100:.1f} % of a core; flooder: {f['connections']} connections "
      f"({f['connections'] / f['seconds']:.0f}/s), {f['dropped']} dropped, {f['bytes'] / 2**20:.1f} MiB written")
EOF
}

echo "shm_flood.sh: load before: $(cut -d' ' -f1-3 /proc/loadavg); $runs runs of ${seconds} s; $(date -u '+%Y-%m-%d %H:%M UTC')"
for run in $(seq "$runs"); do
  stream alone "$run"
  stream spin "$run"
  stream once "$run" --once
  stream reconnect "$run"
  idle "$run"
done
echo "shm_flood.sh: load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$scratch/runs.txt" <<'EOF'
import re, statistics, sys
rates, shares = {}, []
for line in open(sys.argv[1]):
    case = line.split(" run ", 1)[0]
    if m := re.search(r": ([\d.]+) Gb/s", line): rates.setdefault(case, []).append(float(m.group(1)))
    if m := re.search(r"receiver ([\d.]+) %", line): shares.append(float(m.group(1)))
def spread(values): return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"
for case, values in rates.items():
    line = f"{case}: {spread(values)} Gb/s"
    for reference in ("alone", "spin") if case == "reconnect" else ("alone",):
        if case != reference and reference in rates:
            ratios = [v / a for v, a in zip(values, rates[reference])]
            line += f", {spread(ratios)} x {reference}"
    print(line)
if shares: print(f"idle receiver under the reconnecting flood: {spread(shares)} % of a core")
EOF
