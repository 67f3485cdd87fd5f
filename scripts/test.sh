#!/usr/bin/env bash
# Builds netio and runs the whole test suite (unit and loopback integration tests, both
# back-ends, the tools end to end). Installs missing Debian packages first.
#   scripts/test.sh                      RelWithDebInfo build in build/test
#   scripts/test.sh --sanitize address   ASan + UBSan build in build/asan
#   scripts/test.sh --sanitize thread    TSan build in build/tsan
set -euo pipefail
cd "$(dirname "$0")/.."

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
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNETIO_SANITIZE="$sanitize" -DNETIO_WARNINGS_AS_ERRORS=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
# fast_unwind_on_malloc=0: libfabric has no frame pointers, and the one suppression
# (test/support/lsan.supp) needs the stack through it to stay narrow.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:fast_unwind_on_malloc=0}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$PWD/test/support/lsan.supp}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/test/support/tsan.supp}"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@"
