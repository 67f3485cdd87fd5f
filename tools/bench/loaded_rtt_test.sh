#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CTest check of loaded_rtt.sh (label "bench"): one short run under the spin load prints a
# run line and a median, each a positive ratio, and the load is gone afterwards. Exit 77
# (skipped) on a machine with one CPU.
# Usage: loaded_rtt_test.sh BUILD_DIR
set -euo pipefail
build="${1:?usage: loaded_rtt_test.sh BUILD_DIR}"
[ "$(nproc)" -ge 2 ] || { echo "loaded_rtt_test: one CPU: skipped"; exit 77; }
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
"$(dirname "$0")/loaded_rtt.sh" --build "$build" --runs 1 --sizes 8 --load spin >"$scratch/out" &
script_pid=$!
wait "$script_pid"
out="$(cat "$scratch/out")"
echo "$out"
runs=$(grep -Ec '^8 B  [^ ]+  [0-9]+\.[0-9]+$' <<<"$out" || true)
[ "$runs" = 2 ] || { echo "loaded_rtt_test: FAIL: expected a run line and a median line for 8 B" >&2; exit 1; }
grep -Eq '^8 B  [^ ]+  0\.0+$' <<<"$out" && { echo "loaded_rtt_test: FAIL: a ratio of zero" >&2; exit 1; }
sleep 0.2
# Only this run's loads: another test or benchmark may spin on the machine meanwhile.
if pgrep -f "loaded_rtt.sh-load-$script_pid" >/dev/null; then echo "loaded_rtt_test: FAIL: the load outlived the script" >&2; exit 1; fi
echo "loaded_rtt_test: ok"
