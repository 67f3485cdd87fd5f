#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The memory target of the performance issue: a high-throughput sender holds at most its
# configured pages, and its RSS does not grow over a long run.
#
# Runs netio_recv + netio_throughput (high-throughput sockets, 64 B messages) on loopback for
# --time (default 30s), samples the sender's VmRSS every 0.5 s from /proc, and prints one
# JSON line: the pool size (page_count x page_size), RSS after warm-up, at the end, and the
# largest, and the growth from warm-up to the end. Exit status 1 when RSS grew by more than
# --max-growth KiB (default 2048) after warm-up, or when it ever exceeded the pool by more
# than --max-overhead KiB (default 16384: code, libraries, stacks; a second pool's worth of
# pages would not fit).
#   tools/bench/memory_check.sh [--build DIR] [--time 30s] [--max-growth KIB] [--max-overhead KIB]
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=SCRIPTDIR/../../scripts/lib/bench_common.sh
source scripts/lib/bench_common.sh

build=build/release
run_time=30s
max_growth=2048
max_overhead=16384
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --time) run_time="$2"; shift 2 ;;
    --max-growth) max_growth="$2"; shift 2 ;;
    --max-overhead) max_overhead="$2"; shift 2 ;;
    -h|--help) sed -n '3,14p' "$0"; exit 0 ;;
    *) echo "memory_check.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
bin="$build/tools"
[ -x "$bin/netio_throughput" ] || { echo "memory_check.sh: build $build first (scripts/benchmark.sh does)" >&2; exit 2; }

scratch="$(mktemp -d)"
pids=()
trap 'bench_cleanup "$scratch" "${pids[@]}"' EXIT

"$bin/netio_recv" -e tcp://127.0.0.1:0 --interval 0 --port-file "$scratch/port" --timeout 600s >/dev/null 2>&1 &
pids+=($!)
bench_wait_for_port "$scratch/port" "memory_check.sh: netio_recv did not start"

# The tool's defaults: 1 MiB pages; the socket's default pool: 16 pages.
"$bin/netio_throughput" -e "tcp://127.0.0.1:$(cat "$scratch/port")" -s 64 -t "$run_time" >/dev/null 2>&1 &
sender=$!
pids+=("$sender")

samples=()
while kill -0 "$sender" 2>/dev/null; do
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$sender/status" 2>/dev/null || true)
  [ -n "$rss" ] && samples+=("$rss")
  sleep 0.5
done
wait "$sender" || { echo "memory_check.sh: netio_throughput failed" >&2; exit 1; }

python3 - "$max_growth" "$max_overhead" "${samples[@]}" <<'PY'
import json, sys
limit, overhead = int(sys.argv[1]), int(sys.argv[2])
rss = [int(x) for x in sys.argv[3:]]
if len(rss) < 8:
    sys.exit("memory_check.sh: too few RSS samples; use a longer --time")
warm = rss[len(rss) // 4]          # after a quarter of the run: pages touched, pools full
end = rss[-2]                      # the last full sample before exit
pool = 16 * 1024
result = {"pool_kib": pool, "rss_warm_kib": warm, "rss_end_kib": end,
          "rss_max_kib": max(rss), "growth_kib": end - warm, "samples": len(rss),
          "growth_limit_kib": limit, "overhead_limit_kib": overhead,
          "ok": end - warm <= limit and max(rss) <= pool + overhead}
print(json.dumps(result))
sys.exit(0 if result["ok"] else 1)
PY
