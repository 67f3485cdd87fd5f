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
#                                        .ci/run); stops at the first stage that fails
#   scripts/test.sh --all --overlap      the same, each stage's build beside the previous
#                                        stage's tests at idle priority (no faster today:
#                                        docs/dev/ci.md)
# Every build keeps line tables only (-g1): stack traces name file and line; for a debugger,
# configure a build of your own. Further arguments go to ctest (e.g. -R pubsub). ccache is
# used when installed. Stage times and how they are kept: docs/dev/ci.md.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  sed -n '3,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"
  exit 0
fi

all=""
overlap=""
build_only=""
sanitize=""
if [ "${1:-}" = "--all" ]; then
  all=1
  shift
  if [ "${1:-}" = "--overlap" ]; then
    overlap=1
    shift
  elif [ "${1:-}" = "--sequential" ]; then  # the default, said explicitly
    shift
  fi
elif [ "${1:-}" = "--sanitize" ] || [ "${1:-}" = "--build-only" ]; then
  # --build-only MODE ("", address or thread): what --all runs beside a stage's tests.
  [ "$1" = "--build-only" ] && build_only=1
  sanitize="${2?$1 takes address or thread}"
  shift 2
  case "$sanitize" in
    address|thread) ;;
    "") [ -n "$build_only" ] || { echo "test.sh: --sanitize takes address or thread" >&2; exit 2; } ;;
    *) echo "test.sh: --sanitize takes address or thread, not '$sanitize'" >&2; exit 2 ;;
  esac
fi

scripts/install-deps.sh
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
  # Without this, ccache caches nothing that uses a precompiled header (cmake/NetioBuildTime.cmake).
  export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
fi
# The tests of libfabric's sockets provider unwind slowly (test/CMakeLists.txt): libfabric has
# no frame pointers, and the one suppression (test/support/lsan.supp) needs the stack through it.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$PWD/test/support/lsan.supp}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/test/support/tsan.supp}"

# stage MODE: the build directory, flags, targets and test selection of a stage ("" = plain).
# What keeps CI within its time on 2 cores (docs/dev/ci.md): line tables only (-g1: a quarter
# less compile time than -g, and stack traces keep file and line), precompiled headers and
# grouped sources (CMake), and in the sanitizer stages only what the library's suite needs.
# ASan+UBSan builds with -Og: UBSan's checks at -O1 double the compile time of a test file,
# and the whole stage takes 2.4 min less with -Og (its tests run 0.6 min longer). TSan keeps
# -O1: its timing-sensitive tests already run slowest. The plain stage builds the libraries
# at -O2, as users do, and what only tests them (the suite, tools, benchmarks, examples) at -O1.
stage() {
  build=build/test
  optimization=-O2
  harness=-O1  # the tests, tools, benchmarks and examples; the libraries keep -O2
  targets=()
  selection=()
  if [ -n "$1" ]; then
    build=build/asan
    optimization=-Og
    harness=""
    if [ "$1" = thread ]; then
      build=build/tsan
      optimization=-O1
    fi
    targets=(--target netio_tests pubsub_child_subscriber shm_child_peer)
    # The examples and the install test are not built here: the plain build runs them.
    selection=(-LE "tools|bench|fuzz" -E "^(example_|install_and_consume)")
  fi
}

build_stage() {
  stage "$1"
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNETIO_SANITIZE="$1" -DNETIO_WARNINGS_AS_ERRORS=ON \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$optimization -g1 -DNDEBUG" -DNETIO_HARNESS_OPTIMIZATION="$harness" \
    "${launcher[@]}" >/dev/null
  # The ASan+UBSan stage runs the Python module's suite too, when the module is built (pybind11).
  if [ "$1" = address ] && grep -q '^NETIO_PYTHON_BUILT:INTERNAL=ON' "$build/CMakeCache.txt"; then
    targets+=(netio_python)
  fi
  cmake --build "$build" -j"$(nproc)" "${targets[@]}"
}

test_stage() {
  stage "$1"
  shift
  # Twice as many tests as cores: most wait on the network or on timers, not on the CPU.
  ctest --test-dir "$build" --output-on-failure -j"$(($(nproc) * 2))" "${selection[@]}" "$@"
}

if [ -z "$all" ]; then
  build_stage "$sanitize"
  [ -n "$build_only" ] || test_stage "$sanitize" "$@"
  exit 0
fi

start=$SECONDS
modes=("" address thread)
if [ -z "$overlap" ]; then
  for mode in "${modes[@]}"; do
    phase=$SECONDS
    echo "=== scripts/test.sh ${mode:+--sanitize $mode}" >&2
    build_stage "$mode"
    echo "=== ${mode:-plain} build: $((SECONDS - phase)) s" >&2
    test_stage "$mode" "$@"
    echo "=== ${mode:-plain} build and tests: $((SECONDS - phase)) s" >&2
  done
  echo "=== all: $((SECONDS - start)) s" >&2
  exit 0
fi

# --all --overlap: while a stage's tests run, the next stage builds beside them at idle priority
# (SCHED_IDLE: it runs only on CPU time the tests leave; its output in its build log): most
# tests wait on the network or on timers. A stage whose tests fail ends the run, and the
# build beside them with it.
phase=$SECONDS
echo "=== plain: build" >&2
build_stage ""
echo "=== plain: build $((SECONDS - phase)) s" >&2
for i in 0 1 2; do
  mode=${modes[$i]}
  next=${modes[$((i + 1))]:-none}
  name=${mode:-plain}
  background=""
  if [ "$next" != none ]; then
    stage "$next"
    mkdir -p "$build"
    next_log="$build/stage-build.log"
    echo "=== ${next}: build beside the ${name} tests (log: $next_log)" >&2
    # setsid: its own process group, so that a failure here ends the whole build.
    setsid chrt --idle 0 nice -n 19 "$0" --build-only "$next" >"$next_log" 2>&1 &
    background=$!
    next_start=$SECONDS
  fi
  phase=$SECONDS
  echo "=== ${name}: tests" >&2
  if ! test_stage "$mode" "$@"; then
    [ -n "$background" ] && kill -- -"$background" 2>/dev/null
    echo "=== ${name}: tests failed after $((SECONDS - phase)) s; all: $((SECONDS - start)) s" >&2
    exit 1
  fi
  echo "=== ${name}: tests $((SECONDS - phase)) s" >&2
  if [ -n "$background" ]; then
    if ! wait "$background"; then
      tail -n 50 "$next_log" >&2
      echo "=== ${next}: build failed (log: $next_log); all: $((SECONDS - start)) s" >&2
      exit 1
    fi
    echo "=== ${next}: build $((SECONDS - next_start)) s (from the start of the ${name} tests)" >&2
  fi
done
echo "=== all: $((SECONDS - start)) s" >&2
