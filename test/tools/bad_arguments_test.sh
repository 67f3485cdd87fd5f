#!/bin/bash
# SPDX-License-Identifier: MIT
# Bad arguments and unreachable peers: every tool exits non-zero with a message that says
# what is wrong, quickly.
#   bad_arguments_test.sh NETIO_RECV NETIO_THROUGHPUT NETIO_PINGPONG
set -uo pipefail
recv=$1 send=$2 pingpong=$3
source "$(dirname "$0")/tool_test_lib.sh"

# A port nobody listens on (bound and released at once).
closed_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

expect_failure() {  # EXPECTED_TEXT COMMAND...
  local expected=$1
  shift
  local status=0
  timeout 20 "$@" >"$WORK/out" 2>"$WORK/err" || status=$?
  [ "$status" -ne 0 ] || fail "'$*' succeeded"
  [ "$status" -ne 124 ] || fail "'$*' hung"
  grep -qiF -- "$expected" "$WORK/err" || fail "'$*' did not say '$expected': $(cat "$WORK/err")"
}

expect_failure "ambiguous" "$send" -e tcp://127.0.0.1:5000 -s 4KB
expect_failure "is not a size" "$send" -e tcp://127.0.0.1:5000 -s 4,lots
expect_failure "too small" "$send" -e tcp://127.0.0.1:5000 -s 4
expect_failure "--sweep" "$send" -e tcp://127.0.0.1:5000
expect_failure "excludes" "$send" -e tcp://127.0.0.1:5000 -s 64 --sweep
expect_failure "excludes" "$send" -e tcp://127.0.0.1:5000 -s 64 -n 5 -t 1s
expect_failure "--mode ht only" "$send" -e tcp://127.0.0.1:5000 -s 64 --mode ll --page-size 4KiB
expect_failure "is not a duration" "$send" -e tcp://127.0.0.1:5000 -s 64 -t soon
expect_failure "CPU 100000" "$send" -e tcp://127.0.0.1:5000 -s 64 --cpu 100000
expect_failure "malformed endpoint" "$send" -e tcp:/nowhere -s 64 -n 1
expect_failure "refused" "$send" -e "tcp://127.0.0.1:$closed_port" -s 64 -n 1 --connect-timeout 300ms
expect_failure "malformed endpoint" "$recv" -e 127.0.0.1:5000
expect_failure "ht,ll" "$recv" -e tcp://127.0.0.1:0 --mode fast
expect_failure "refused" "$pingpong" -e "tcp://127.0.0.1:$closed_port" -n 10 --connect-timeout 300ms
expect_failure "excludes" "$pingpong" --server -e tcp://127.0.0.1:0 -s 64
expect_failure "iterations" "$pingpong" -e tcp://127.0.0.1:5000 -n 0
expect_failure "emulation spec 'delay=lognormal:mean=50us'" "$pingpong" -e tcp://127.0.0.1:5000 --emulate 'delay=lognormal:mean=50us'
expect_failure "needs sigma=" "$pingpong" -e tcp://127.0.0.1:5000 --emulate 'delay=lognormal:mean=50us'
expect_failure "not a rate unit" "$send" -e tcp://127.0.0.1:5000 -s 64 --emulate 'rate=10GB'
expect_failure "unknown key 'speed'" "$recv" -e tcp://127.0.0.1:0 --emulate 'speed=1Gbps'
for tool in "$recv" "$send" "$pingpong"; do
  "$tool" --help >"$WORK/help" || fail "$tool --help failed"
  grep -q -- "--timeout" "$WORK/help" || fail "$tool --help does not mention --timeout"
  grep -q -- "--emulate" "$WORK/help" || fail "$tool --help does not mention --emulate"
done
echo "ok"
