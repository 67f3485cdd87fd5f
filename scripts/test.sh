#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds netio and runs the test suite (unit and loopback integration tests, both back-ends,
# the tools end to end). Installs missing Debian packages first.
#   scripts/test.sh                      RelWithDebInfo build in build/test, the whole suite
#   scripts/test.sh --sanitize address   ASan + UBSan build in build/asan: the library's suite
#   scripts/test.sh --sanitize thread    TSan build in build/tsan: the library's suite
#                                        (the tests of netio_tests: unit, loopback integration,
#                                        the wrapped and emulated runs; not the tools, examples
#                                        and install test, which only the plain build runs)
#   scripts/test.sh --all                the three above, one after the other (what CI runs,
#                                        .ci/run); stops at the first that fails
# Every build keeps line tables only (-g1): stack traces name file and line; for a debugger,
# configure a build of your own. Further arguments go to ctest (e.g. -R pubsub). ccache is
# used when installed. Stage times and how they are kept: docs/dev/ci.md.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  sed -n '3,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"
  exit 0
fi

if [ "${1:-}" = "--all" ]; then
  shift
  start=$SECONDS
  for mode in "" address thread; do
    phase=$SECONDS
    echo "=== scripts/test.sh ${mode:+--sanitize $mode}" >&2
    if [ -z "$mode" ]; then "$0" "$@"; else "$0" --sanitize "$mode" "$@"; fi
    echo "=== ${mode:-plain} build and tests: $((SECONDS - phase)) s" >&2
  done
  echo "=== all: $((SECONDS - start)) s" >&2
  exit 0
fi

sanitize=""
if [ "${1:-}" = "--sanitize" ]; then
  sanitize="${2:?--sanitize takes address or thread}"
  shift 2
fi
case "$sanitize" in
  "") build=build/test ;;
  address) build=build/asan ;;
  thread) build=build/tsan ;;
  *) echo "test.sh: --sanitize takes address or thread, not '$sanitize'" >&2; exit 2 ;;
esac

scripts/install-deps.sh
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
  # Without this, ccache caches nothing that uses a precompiled header (cmake/NetioBuildTime.cmake).
  export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
fi
# What keeps CI within its time on 2 cores (docs/dev/ci.md): line tables only (-g1: a quarter
# less compile time than -g, and stack traces keep file and line), precompiled headers and
# grouped test files (CMake), and in the sanitizer stages only what the library's suite
# needs. ASan+UBSan builds with -Og: UBSan's checks at -O1 double the compile time of a test
# file, and the whole stage takes 2.4 min less with -Og (its tests run 0.6 min longer). TSan
# keeps -O1: its timing-sensitive tests already run slowest.
optimization=-O2
targets=()
selection=()
if [ -n "$sanitize" ]; then
  optimization=-O1
  [ "$sanitize" = address ] && optimization=-Og
  targets=(--target netio_tests pubsub_child_subscriber)
  # The examples and the install test are not built here: the plain build runs them.
  selection=(-LE "tools|bench|fuzz" -E "^(example_|install_and_consume)")
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNETIO_SANITIZE="$sanitize" -DNETIO_WARNINGS_AS_ERRORS=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$optimization -g1 -DNDEBUG" "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)" "${targets[@]}"
# fast_unwind_on_malloc=0: libfabric has no frame pointers, and the one suppression
# (test/support/lsan.supp) needs the stack through it to stay narrow.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:fast_unwind_on_malloc=0}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$PWD/test/support/lsan.supp}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/test/support/tsan.supp}"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "${selection[@]}" "$@"
