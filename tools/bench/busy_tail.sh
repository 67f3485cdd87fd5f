#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The tail of busy-polling round trips (issue 49, item 8): 8 B round trips, server on CPU 0,
# client on CPU 1, both spinning, by netio_pingpong over fabric:// (libfabric's tcp provider)
# and tcp://, and by fi_pingpong (libfabric's own, which prints only its mean), in turns,
# --runs times each. One line per run: median, mean, p99.9, max, and the round trips over
# 1 ms (from --histogram: a stall, not a slow round trip); then per system the median over
# the runs with its spread, p99.9 / median, and netio's fabric:// mean / fi_pingpong's.
# A stall of a scheduler tick (4 ms at CONFIG_HZ=250) is another runnable task taking the
# core: the load average and spin_gaps (a bare spinning thread per core, 2 s, counting the
# gaps in its running) are printed before and after, the floor under the tail; run on an
# idle machine.
#
#   tools/bench/busy_tail.sh [--build DIR] [--runs N] [--iterations N]
#   --build DIR       Release build (default build/release)
#   --runs N          runs of each system (default 3)
#   --iterations N    measured round trips per run (default 20000)
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=SCRIPTDIR/../../scripts/lib/bench_common.sh
source scripts/lib/bench_common.sh

build=build/release
runs=3
iterations=20000
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --iterations) iterations="$2"; shift 2 ;;
    -h|--help) sed -n '3,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) echo "busy_tail.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "busy_tail.sh: --runs must be a positive integer" >&2; exit 2; }
[[ "$iterations" =~ ^[1-9][0-9]*$ ]] || { echo "busy_tail.sh: --iterations must be a positive integer" >&2; exit 2; }
[ "$(nproc)" -ge 2 ] || { echo "busy_tail.sh: needs two CPUs (the server on CPU 0, the client on CPU 1)" >&2; exit 2; }
pingpong="$build/tools/netio_pingpong"
[ -x "$pingpong" ] || { echo "busy_tail.sh: no $pingpong (build it: cmake --build $build --target netio_pingpong)" >&2; exit 2; }
have_fi=0
command -v fi_pingpong >/dev/null && have_fi=1

scratch="$(mktemp -d)"
pids=()
trap 'bench_cleanup "$scratch" "${pids[@]}"' EXIT

# netio_run TRANSPORT RUN: one netio_pingpong pair; prints the run's line and records it.
netio_run() {
  rm -f "$scratch/port"
  "$pingpong" --server --busy-poll --cpu 0 -e "$(bench_endpoint "$1" 0)" --port-file "$scratch/port" \
      --timeout 120s >/dev/null 2>&1 &
  pids+=($!)
  local port
  port=$(bench_wait_for_port --print "$scratch/port" "busy_tail.sh: the netio_pingpong server did not start")
  "$pingpong" -e "$(bench_endpoint "$1" "$port")" --busy-poll --cpu 1 -s 8 -n "$iterations" --json --histogram \
      --timeout 120s >"$scratch/out.json" 2>"$scratch/histogram.txt"
  kill "${pids[-1]}" 2>/dev/null || true
  wait "${pids[-1]}" 2>/dev/null || true
  python3 - "$scratch/out.json" "$scratch/histogram.txt" "netio_$1" "$2" <<'EOF' | tee -a "$scratch/runs.txt"
import json, re, sys
r = json.load(open(sys.argv[1]))["rtt_us"]
# Histogram lines: "  LOW -  HIGH us |###| COUNT PERCENT%"; LOW >= 1000 us is a stall.
over = sum(int(m.group(2)) for m in (re.match(r"\s*([\d.]+)\s*-\s*[\d.]+ us \|.*\|\s*(\d+)", line)
                                     for line in open(sys.argv[2])) if m and float(m.group(1)) >= 1000)
print(f"{sys.argv[3]} run {sys.argv[4]}: median {r['median']:.2f} mean {r['mean']:.2f} p99.9 {r['p999']:.1f} "
      f"max {r['max']:.0f} us, {over} over 1 ms")
EOF
}

# reference RUN: one fi_pingpong pair (its own control port: a free ephemeral one); its mean.
reference() {
  [ "$have_fi" = 1 ] || return 0
  local port
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  taskset -c 0 timeout 120 fi_pingpong -p tcp -e msg -B "$port" -I "$iterations" -S 8 >/dev/null 2>&1 &
  pids+=($!)
  sleep 0.3
  # Its columns: bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec; a round trip is
  # two transfers.
  taskset -c 1 timeout 120 fi_pingpong -p tcp -e msg -P "$port" -I "$iterations" -S 8 127.0.0.1 2>/dev/null |
      awk -v run="$1" '$1 != "bytes" && NF >= 8 { printf "fi_pingpong run %s: mean %.2f us\n", run, 2 * $7 }' |
      tee -a "$scratch/runs.txt"
  wait "${pids[-1]}" 2>/dev/null || true
}

gaps() { [ ! -x "$build/tools/bench/spin_gaps" ] || "$build/tools/bench/spin_gaps" -t 2s | sed 's/^/busy_tail.sh: /'; }
echo "busy_tail.sh: load before: $(cut -d' ' -f1-3 /proc/loadavg); $runs runs of $iterations round trips; $(date -u '+%Y-%m-%d %H:%M UTC')"
gaps
for run in $(seq "$runs"); do
  netio_run fabric "$run"
  reference "$run"
  netio_run tcp "$run"
done
echo "busy_tail.sh: load after: $(cut -d' ' -f1-3 /proc/loadavg)"
gaps
python3 - "$scratch/runs.txt" <<'EOF'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    system, rest = line.split(" run ", 1)
    runs.setdefault(system, []).append({k: float(v) for k, v in re.findall(r"(median|mean|p99\.9|max) ([\d.]+)", rest)})
def summary(system, key):
    values = [r[key] for r in runs.get(system, []) if key in r]
    return (statistics.median(values), min(values), max(values)) if values else None
for system in runs:
    parts = []
    for key in ("median", "mean", "p99.9"):
        s = summary(system, key)
        if s: parts.append(f"{key} {s[0]:.2f} ({s[1]:.2f}-{s[2]:.2f})")
    print(f"{system}: " + ", ".join(parts) + " us")
    ratios = [r["p99.9"] / r["median"] for r in runs[system] if "p99.9" in r]
    if ratios: print(f"  p99.9 / median: {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}), target <= 5")
fabric, fi = summary("netio_fabric", "mean"), summary("fi_pingpong", "mean")
if fabric and fi:
    pairs = [a["mean"] / b["mean"] for a, b in zip(runs["netio_fabric"], runs["fi_pingpong"])]
    print(f"netio fabric:// mean / fi_pingpong mean: {fabric[0] / fi[0]:.2f} (medians; per run "
          f"{', '.join(f'{p:.2f}' for p in pairs)}), target <= 1.15")
EOF
