#!/bin/bash
# SPDX-License-Identifier: MIT
# netio_connbench end to end on one back-end: --help, a bad argument, one run with --json
# (the keys of tools/README.md), a list of limits and policies ({"runs": [...]}), the text table.
#   connbench_test.sh NETIO_CONNBENCH TRANSPORT(tcp|shm|fabric)
set -euo pipefail
connbench=$1 transport=$2
source "$(dirname "$0")/tool_test_lib.sh"

"$connbench" --help >"$WORK/help.out" || fail "--help exited with $?"
grep -q -- "--max-connections" "$WORK/help.out" || fail "--help does not list --max-connections"
if "$connbench" --policy fifo >"$WORK/bad.out" 2>&1; then fail "--policy fifo was accepted"; fi
grep -q "policy" "$WORK/bad.out" || fail "the error for --policy fifo does not name the option"

small=(--backend "$transport" --peers 16 --hot 3 --accesses 120 --burst 20 --timeout 100s)
"$connbench" "${small[@]}" --max-connections 4 --policy lru-m --json >"$WORK/one.json" 2>"$WORK/one.err" \
  || fail "one run exited with $? ($(cat "$WORK/one.err"))"
python3 - "$WORK/one.json" <<'PY' || fail "JSON check failed for one run"
import json, sys
doc = json.load(open(sys.argv[1]))
need = {"msgs_per_s", "opened", "torn_down", "peak_connections", "peak_connection_bytes"}
missing = need - set(doc)
assert not missing, f"missing keys {missing}"
assert doc["peak_connections"] <= 4, doc
assert doc["msgs_per_s"] > 0 and doc["out_of_order"] == 0, doc
assert doc["opened"] - doc["torn_down"] <= 4, doc
PY
"$connbench" "${small[@]}" --max-connections 0,4 --policy lru,lru-m --json >"$WORK/runs.json" 2>"$WORK/runs.err" \
  || fail "the list run exited with $?"
python3 - "$WORK/runs.json" <<'PY' || fail "JSON check failed for the list run"
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
assert [(r["max_connections"], r["policy"]) for r in runs] == [(0, "lru"), (4, "lru"), (4, "lru-m")], runs
assert runs[0]["torn_down"] == 0 and runs[0]["peak_connections"] == runs[0]["opened"], runs[0]
PY
"$connbench" "${small[@]}" --max-connections 4 --mode ht >"$WORK/text.out" 2>"$WORK/text.err" \
  || fail "the text run exited with $?"
grep -q "peak_conn_bytes" "$WORK/text.out" || fail "no table in the text output"

# Ctrl-C ends a long run at once, reporting the rounds done, with 128 + SIGINT; a run cut by
# --timeout reports them too, with 1.
long=(--backend "$transport" --peers 16 --hot 3 --accesses 120 --burst 20 --max-connections 0,2 --repeat 100000)
"$connbench" "${long[@]}" --timeout 100s >"$WORK/int.out" 2>"$WORK/int.err" &
pid=$!
for _ in $(seq 100); do grep -q "round 1 " "$WORK/int.err" 2>/dev/null && break; sleep 0.1; done
grep -q "round 1 " "$WORK/int.err" || fail "no round done within 10 s ($(cat "$WORK/int.err"))"
kill -INT "$pid"
started=$SECONDS
status=0
wait "$pid" || status=$?
[ "$status" = 130 ] || fail "Ctrl-C gave exit status $status, not 130 ($(cat "$WORK/int.err"))"
[ $((SECONDS - started)) -le 5 ] || fail "Ctrl-C took $((SECONDS - started)) s to end the run"
grep -q "interrupted; reporting the rounds done" "$WORK/int.err" || fail "no word of the interruption"
grep -q "peak_conn_bytes" "$WORK/int.out" || fail "the rounds done were not reported after Ctrl-C"
status=0
"$connbench" "${long[@]}" --timeout 3s --json >"$WORK/to.json" \
  2>"$WORK/to.err" || status=$?
[ "$status" = 1 ] || fail "--timeout gave exit status $status, not 1"
python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["runs"], "no runs"' "$WORK/to.json" \
  || fail "the rounds done before --timeout were not reported as JSON"
