#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the libFuzzer targets (test/fuzz, clang + ASan/UBSan, the CMake preset "fuzz") and
# runs each for a bounded time, one after the other, starting from the seed corpus in
# test/fuzz/corpus/. A crash stops the script with the target's report; the input that
# crashed is in build/fuzz/test/fuzz/crashes/ (replay: build/fuzz/test/fuzz/fuzz_NAME FILE).
#   scripts/fuzz.sh [SECONDS]        each target for SECONDS (default 60)
#   scripts/fuzz.sh --seeds          rewrites the seed corpus with the encoders (netio_fuzz_seeds)
#   scripts/fuzz.sh --list           the targets
# Needs clang and libclang-rt-14-dev (installed when missing).
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
  -h|--help) sed -n '3,10p' "$0"; exit 0 ;;
esac

scripts/install-deps.sh --fuzz
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
fi
cmake --preset fuzz "${launcher[@]}" >/dev/null
cmake --build build/fuzz --target netio_fuzz_all -j"$(nproc)"
dir=build/fuzz/test/fuzz
targets=$(cd "$dir" && ls fuzz_* | sed 's/^fuzz_//' | sort)

case "${1:-}" in
  --list) echo "$targets"; exit 0 ;;
  --seeds) "$dir/netio_fuzz_seeds" test/fuzz/corpus; echo "fuzz.sh: seeds written to test/fuzz/corpus/"; exit 0 ;;
esac
seconds="${1:-60}"
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: SECONDS must be a whole number, not '$seconds'" >&2; exit 2; }

export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
summary=()
for t in $targets; do
  mkdir -p "$dir/corpus/$t" "$dir/crashes"
  echo "=== fuzz_$t: $seconds s" >&2
  log="$dir/fuzz_$t.log"
  status=0
  "$dir/fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$dir/crashes/$t-" "$dir/corpus/$t" "test/fuzz/corpus/$t" >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  corpus_size=$(ls "$dir/corpus/$t" | wc -l)
  if [ "$status" -ne 0 ]; then
    tail -40 "$log" >&2
    echo "fuzz.sh: fuzz_$t FAILED (exit $status); input in $dir/crashes/" >&2
    exit 1
  fi
  summary+=("$(printf '%-22s %12s runs  %6s edges  %5s corpus files' "$t" "${runs:-?}" "${cov:-?}" "$corpus_size")")
done
printf '%s\n' "${summary[@]}"
echo "fuzz.sh: every target ran $seconds s without a finding"
