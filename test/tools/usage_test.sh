#!/bin/bash
# SPDX-License-Identifier: MIT
# The tools' usage conventions (issue 49, item 5): every usage error exits 2 (CLI11's own
# codes were 105-109), --help and --version exit 0; --version and -V name the commit, build
# type, back-ends and features; --help names no source file; an option of the sibling tool is
# named with the tool it belongs to; netio_recv's --report-interval (old --interval: a
# deprecation note); netio_recv stopped before any data says so instead of an empty table.
#   usage_test.sh NETIO_RECV NETIO_THROUGHPUT NETIO_PINGPONG NETIO_CAT NETIO_CONNBENCH NETIO_TSBENCH
set -uo pipefail
recv=$1 send=$2 pingpong=$3 cat_tool=$4 connbench=$5 tsbench=$6
source "$(dirname "$0")/tool_test_lib.sh"

expect_status() {  # STATUS COMMAND...
  local expected=$1
  shift
  local status=0
  timeout 20 "$@" >"$WORK/out" 2>"$WORK/err" || status=$?
  [ "$status" -eq "$expected" ] || fail "'$*' exited with $status, expected $expected: $(cat "$WORK/err")"
}

for tool in "$recv" "$send" "$pingpong" "$cat_tool" "$connbench" "$tsbench"; do
  name=$(basename "$tool")
  expect_status 2 "$tool" --no-such-option                      # CLI11: ExtrasError (109)
  expect_status 2 "$tool" --timeout                              # CLI11: ArgumentMismatch (112)
  expect_status 2 "$tool" --timeout soon                         # CLI11: ValidationError (105)
  expect_status 0 "$tool" --help
  # Installed headers (netio/emulation.hpp) are documentation; the source tree is not installed.
  source_file='(tools|test|scripts|backends)/[A-Za-z0-9_/.-]+|[A-Za-z0-9_]+\.(cpp|sh)\b'
  grep -qE "$source_file" "$WORK/out" && fail "$name --help names a source file: $(grep -oE "$source_file" "$WORK/out")"
  for flag in --version -V; do
    expect_status 0 "$tool" "$flag"
    for fact in "^$name [0-9]+\.[0-9]+\.[0-9]+$" '^commit .+ \(.+ build\)$' '^back-ends: tcp shm( fabric)? emulated$' '^features: '; do
      grep -qE "$fact" "$WORK/out" || fail "$name $flag does not print a line '$fact': $(cat "$WORK/out")"
    done
  done
done
expect_status 2 "$recv" -e tcp://127.0.0.1:0 --mode fast                    # IsMember
expect_status 2 "$send" -e tcp://127.0.0.1:5000 -s 64 -n 5 -t 1s           # excludes
expect_status 2 "$pingpong"                                                 # required --endpoint
expect_status 2 "$cat_tool"                                                 # a subcommand is required
expect_status 2 "$tsbench" --scheduler dfs --compare                       # was 108
expect_status 2 "$connbench" -e tcp://127.0.0.1:5000 --bogus 1
# The fat-trees' options: refused where they do not apply, naming the option.
expect_status 2 "$tsbench" --simulate --adaptive-routing -n 10 --warmup-intervals 0
grep -qF -- "--adaptive-routing is a part of --network fat-tree-lossless" "$WORK/err" || fail "--adaptive-routing: $(cat "$WORK/err")"
expect_status 2 "$tsbench" --simulate --network fat-tree-lossless --switch-buffer 1000 -n 10 --warmup-intervals 0
grep -qF -- "port buffer (1000 bytes)" "$WORK/err" || fail "--switch-buffer 1000: $(cat "$WORK/err")"
expect_status 2 "$tsbench" --simulate --control-lane -n 10 --warmup-intervals 0
grep -qF -- "--control-lane is a part of" "$WORK/err" || fail "--control-lane on fair ports: $(cat "$WORK/err")"

# The sibling tool's options, with or without the rest of the command line right.
expect_status 2 "$recv" --size -5
grep -qF -- "--size is an option of netio_throughput" "$WORK/err" || fail "netio_recv --size: $(cat "$WORK/err")"
expect_status 2 "$recv" -e tcp://127.0.0.1:0 --sweep
grep -qF -- "--sweep is an option of netio_throughput" "$WORK/err" || fail "netio_recv --sweep: $(cat "$WORK/err")"
expect_status 2 "$send" -e tcp://127.0.0.1:5000 -s 64 --senders 2
grep -qF -- "--senders is an option of netio_recv" "$WORK/err" || fail "netio_throughput --senders: $(cat "$WORK/err")"

# --report-interval; --interval still works for one release, with a note.
grep -q -- "--report-interval" <<<"$("$recv" --help)" || fail "netio_recv --help does not list --report-interval"
"$recv" -e tcp://127.0.0.1:0 --interval 0 --timeout 0.3s >/dev/null 2>"$WORK/err"
grep -qF -- "--interval is deprecated" "$WORK/err" || fail "netio_recv --interval gives no deprecation note: $(cat "$WORK/err")"

# A choice's default in --help is the value the tool starts with, whatever the order of the words.
grep -qF -- "--assignment TEXT:{load,fixed}=fixed" <<<"$("$tsbench" --help)" \
  || fail "netio_tsbench --help: $(grep -F -- --assignment <<<"$("$tsbench" --help)")"

# Stopped before any data: says so, no empty table.
"$recv" -e tcp://127.0.0.1:0 --port-file "$WORK/port" --timeout 20s >"$WORK/out" 2>"$WORK/err" &
pid=$!
BACKGROUND_PIDS+=("$pid")
wait_for_port_file "$WORK/port" "$pid" >/dev/null
kill -INT "$pid"
status=0
wait "$pid" || status=$?
[ "$status" -eq 130 ] || fail "netio_recv stopped by SIGINT exited with $status"
grep -qF "no data received (stopped before the first message)" "$WORK/out" \
  || fail "netio_recv stopped before any data printed: $(cat "$WORK/out")"
echo "ok"
