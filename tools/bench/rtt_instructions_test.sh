#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CTest check of rtt_instructions.sh (label "bench"): a short count of both systems prints
# the table with a positive count in every cell. Exit 77 (skipped) without valgrind.
# Usage: rtt_instructions_test.sh BUILD_DIR
set -euo pipefail
build="${1:?usage: rtt_instructions_test.sh BUILD_DIR}"
command -v valgrind >/dev/null || { echo "rtt_instructions_test: valgrind is not installed: skipped"; exit 77; }
table="$("$(dirname "$0")/rtt_instructions.sh" --build "$build" --short 100 --long 600)"
echo "$table"
rows=$(grep -Ec '^\| (netio_pingpong|raw TCP)[^|]*\| [1-9][0-9]* \| [1-9][0-9]* \| [1-9][0-9]* \|$' <<<"$table" || true)
[ "$rows" = 2 ] || { echo "rtt_instructions_test: FAIL: expected two rows of positive counts" >&2; exit 1; }
