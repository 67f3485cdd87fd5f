#!/bin/bash
# netio_connbench end to end on one back-end: --help, a bad argument, one run with --json
# (the keys of DESIGN.md §7), a list of limits and policies ({"runs": [...]}), the text table.
#   connbench_test.sh NETIO_CONNBENCH TRANSPORT(tcp|fabric)
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
