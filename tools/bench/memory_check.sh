#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The memory targets of the performance issues: a high-throughput sender holds at most its
# configured pages (issue 5), and neither side's RSS grows over a long stream (issue 39: a
# 60 s shm:// stream).
#
# Runs netio_recv + netio_throughput (high-throughput sockets, 64 B messages) over --scheme
# (tcp://127.0.0.1 or shm://netio-bench) for --time (default 30s), samples VmRSS of both
# processes every --interval seconds (default 1) from /proc, and prints one JSON line: the
# pool size (page_count x page_size); the sender's RSS after warm-up (a quarter of the run),
# at the end, the largest, and the growth between the two; the same for the receiver; the
# flatness of each; and every sample (rss_kib: {sender: [...], receiver: [...]}).
# Flat: the largest sample of the run's second half is at most the largest of its first
# 10 s (of its first third when the run is shorter than 30 s) plus --slack KiB (default 1024).
# Exit status 1 when a side is not flat, when the sender's RSS grew by more than --max-growth
# KiB (default 2048) after warm-up, or when it ever exceeded the pool by more than
# --max-overhead KiB (default 16384: code, libraries, stacks and, over shm://, the ring's
# pages; a second pool's worth of pages would not fit).
#   tools/bench/memory_check.sh [--build DIR] [--scheme tcp|shm] [--time 30s] [--interval SECONDS]
#                               [--max-growth KIB] [--max-overhead KIB] [--slack KIB]
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=SCRIPTDIR/../../scripts/lib/bench_common.sh
source scripts/lib/bench_common.sh

build=build/release
scheme=tcp
run_time=30s
interval=1
max_growth=2048
max_overhead=16384
slack=1024
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --scheme) scheme="$2"; shift 2 ;;
    --time) run_time="$2"; shift 2 ;;
    --interval) interval="$2"; shift 2 ;;
    --max-growth) max_growth="$2"; shift 2 ;;
    --max-overhead) max_overhead="$2"; shift 2 ;;
    --slack) slack="$2"; shift 2 ;;
    -h|--help) sed -n '3,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) echo "memory_check.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
case "$scheme" in tcp|shm) ;; *) echo "memory_check.sh: --scheme is tcp or shm" >&2; exit 2 ;; esac
[[ "$interval" =~ ^[0-9]*\.?[0-9]+$ ]] || { echo "memory_check.sh: --interval takes seconds, e.g. 1 or 0.2" >&2; exit 2; }
bin="$build/tools"
[ -x "$bin/netio_throughput" ] || { echo "memory_check.sh: build $build first (scripts/benchmark.sh does)" >&2; exit 2; }

scratch="$(mktemp -d)"
pids=()
trap 'bench_cleanup "$scratch" "${pids[@]}"' EXIT

"$bin/netio_recv" -e "$(bench_endpoint "$scheme" 0)" --report-interval 0 --port-file "$scratch/port" --timeout 600s \
    >/dev/null 2>&1 &
receiver=$!
pids+=("$receiver")
bench_wait_for_port "$scratch/port" "memory_check.sh: netio_recv did not start"

# The tool's defaults: 1 MiB pages; the socket's default pool: 16 pages.
"$bin/netio_throughput" -e "$(bench_endpoint "$scheme" "$(cat "$scratch/port")")" -s 64 -t "$run_time" \
    >/dev/null 2>&1 &
sender=$!
pids+=("$sender")

# vm_rss PID: VmRSS of PID in KiB, in $rss (empty when the process is gone). Shell builtins
# only, so that a sample costs no process of its own beside the two measured.
vm_rss() {
  local key value
  rss=""
  [ -r "/proc/$1/status" ] || return 0
  while read -r key value _; do
    if [ "$key" = VmRSS: ]; then rss="$value"; return 0; fi
  done <"/proc/$1/status" 2>/dev/null || true
}
sender_rss=() receiver_rss=()
while kill -0 "$sender" 2>/dev/null; do
  vm_rss "$sender"; s="$rss"
  vm_rss "$receiver"; r="$rss"
  # Both or neither, so that the two series stay aligned in time.
  if [ -n "$s" ] && [ -n "$r" ]; then sender_rss+=("$s"); receiver_rss+=("$r"); fi
  sleep "$interval"
done
wait "$sender" || { echo "memory_check.sh: netio_throughput failed" >&2; exit 1; }

python3 - "$scheme" "$interval" "$max_growth" "$max_overhead" "$slack" "${sender_rss[*]}" "${receiver_rss[*]}" <<'PY'
import json, sys
scheme, interval = sys.argv[1], float(sys.argv[2])
limit, overhead, slack = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
series = {"sender": [int(x) for x in sys.argv[6].split()], "receiver": [int(x) for x in sys.argv[7].split()]}
n = len(series["sender"])
if n < 6:
    sys.exit("memory_check.sh: too few RSS samples; use a longer --time or a shorter --interval")
# The baseline: the first 10 s, or the first third of a shorter run; the second half is
# judged against it.
baseline = max(1, min(int(10 / interval), n // 3))


def summary(rss):
    warm = rss[len(rss) // 4]  # after a quarter of the run: pages touched, pools full
    end = rss[-2]              # the last full sample before exit
    return {"rss_warm_kib": warm, "rss_end_kib": end, "rss_max_kib": max(rss), "growth_kib": end - warm}


def flatness(rss):
    first, last = max(rss[:baseline]), max(rss[n // 2:])
    return {"baseline_max_kib": first, "second_half_max_kib": last, "ok": last <= first + slack}


pool = 16 * 1024
sender = summary(series["sender"])
flat = {side: flatness(rss) for side, rss in series.items()}
result = {"scheme": scheme, "pool_kib": pool, **sender, "samples": n, "interval_s": interval,
          "receiver": summary(series["receiver"]),
          "flat": {"baseline_samples": baseline, "slack_kib": slack, **flat},
          "growth_limit_kib": limit, "overhead_limit_kib": overhead, "rss_kib": series}
result["ok"] = (sender["growth_kib"] <= limit and sender["rss_max_kib"] <= pool + overhead
                and all(f["ok"] for f in flat.values()))
print(json.dumps(result))
sys.exit(0 if result["ok"] else 1)
PY
