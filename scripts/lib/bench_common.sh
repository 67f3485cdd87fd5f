# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Helpers the benchmark scripts share. Sourced, not run, by scripts/benchmark.sh,
# scripts/soak.sh and tools/bench/{compare,emulation,loaded_rtt,memory_check,
# rtt_instructions,smoke_test}.sh, after their `set -euo pipefail`; it sets no options itself.
# (The tool tests have their own, test/tools/tool_test_lib.sh.)
#
#   bench_endpoint TRANSPORT PORT
#       Prints the loopback endpoint of a transport: tcp://127.0.0.1:PORT for tcp,
#       fabric://127.0.0.1:PORT?provider=tcp (libfabric's tcp provider) for fabric,
#       shm://netio-bench:PORT (this node's shared memory) for shm. PORT may be 0 (listen on
#       any port) or a placeholder such as @PORT@. Any other transport:
#       "SCRIPT: unknown transport 'X' (tcp, fabric or shm)" on stderr and status 2.
#   bench_wait_for_port [--print] FILE [MESSAGE]
#       Waits up to 10 s for FILE, the --port-file of a tool starting to listen, to hold
#       something (the port); returns 0 as soon as it does, with --print after printing it
#       (port=$(bench_wait_for_port --print FILE MESSAGE)). After 10 s: with MESSAGE, prints
#       MESSAGE on stderr and exits 1 (the script, or the $(...) it runs in, whose failed
#       assignment then ends the script under set -e); without, returns 1 and the caller
#       decides (call it in an `if` or before `||`, or set -e ends the script silently).
#   bench_cleanup [--wait] DIR [PID...]
#       For an EXIT trap: kills (SIGTERM) every PID given, skipping empty ones and ignoring
#       those already gone; with --wait, then waits for all of the script's background
#       processes; removes the scratch directory DIR. Never fails, so the script keeps its
#       exit status. Give the PIDs as the trap runs, by single-quoting the trap:
#         trap 'bench_cleanup "$scratch" "${pids[@]}"' EXIT
#   bench_median
#       Reads numbers, one a line, on stdin and prints their median (the mean of the two
#       middle ones for an even count).

bench_endpoint() {  # TRANSPORT PORT
  case "$1" in
    tcp) echo "tcp://127.0.0.1:$2" ;;
    fabric) echo "fabric://127.0.0.1:$2?provider=tcp" ;;
    shm) echo "shm://netio-bench:$2" ;;
    *) echo "${0##*/}: unknown transport '$1' (tcp, fabric or shm)" >&2; return 2 ;;
  esac
}

bench_wait_for_port() {  # [--print] FILE [MESSAGE]
  local print=0 _
  [ "$1" = --print ] && { print=1; shift; }
  for _ in $(seq 100); do
    if [ -s "$1" ]; then
      [ "$print" = 0 ] || cat "$1"
      return 0
    fi
    sleep 0.1
  done
  [ $# -ge 2 ] || return 1
  echo "$2" >&2
  exit 1
}

bench_cleanup() {  # [--wait] DIR [PID...]
  local wait_for_all=0 dir pid
  [ "$1" = --wait ] && { wait_for_all=1; shift; }
  dir="$1"
  shift
  for pid in "$@"; do
    [ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; }
  done
  [ "$wait_for_all" = 1 ] && { wait 2>/dev/null || true; }
  rm -rf "$dir"
}

bench_median() {
  sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
