#!/bin/bash
# SPDX-License-Identifier: MIT
# examples/tsbench_slurm.sh as SLURM would run it, on one machine: stand-ins for srun,
# scontrol and getent put 4 "nodes" on loopback addresses of their own (127.0.0.2 ...
# 127.0.0.5, so that every compute node can listen on the same PORT as on a cluster), and
# srun starts one task per node with SLURM_PROCID set. Checks the generated configuration,
# every rank's exit status and JSON summary, the CSV files and the collected summary.
#   slurm_script_test.sh NETIO_TSBENCH SCRIPT SCHEDULER(dfs|best-effort)
set -euo pipefail
tsbench=$1 script=$2 scheduler=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$work/bin"
cat >"$work/bin/scontrol" <<'EOF'
#!/bin/bash
# scontrol show hostnames LIST: one host per line (LIST is "node[0-N]").
[ "$1 $2" = "show hostnames" ] || { echo "scontrol stand-in: $*" >&2; exit 2; }
last=$(sed -n 's/^node\[0-\([0-9]*\)\]$/\1/p' <<<"$3")
for ((i = 0; i <= last; ++i)); do echo "node$i"; done
EOF
cat >"$work/bin/getent" <<'EOF'
#!/bin/bash
# getent ahostsv4 nodeK: 127.0.0.(K+2)
[ "$1" = ahostsv4 ] || { echo "getent stand-in: $*" >&2; exit 2; }
k=${2#node}
echo "127.0.0.$((k + 2))  STREAM $2"
EOF
cat >"$work/bin/srun" <<'EOF'
#!/bin/bash
# srun --ntasks=N --ntasks-per-node=1 CMD...: N local tasks with SLURM_PROCID 0..N-1; fails
# when any task does.
tasks=1
while [[ $1 == --* ]]; do
  case $1 in --ntasks=*) tasks=${1#--ntasks=} ;; esac
  shift
done
pids=()
for ((rank = 0; rank < tasks; ++rank)); do
  SLURM_PROCID=$rank SLURM_LOCALID=0 "$@" &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
exit $status
EOF
chmod +x "$work/bin/"*

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
out=$work/out
status=0
PATH="$work/bin:$PATH" SLURM_NTASKS=4 SLURM_JOB_ID=4242 SLURM_JOB_NODELIST='node[0-3]' \
  NETIO_TSBENCH=$tsbench SCHEDULER=$scheduler TIMESLICES=1000 PORT=$port OUT=$out \
  EXTRA="--contribution-size 4KiB --buffer-size 256KiB --interval 40 --history 3 --warmup-intervals 5" \
  timeout 150 bash "$script" >"$work/job.out" 2>"$work/job.err" || status=$?
[ "$status" -eq 0 ] || fail "the job script exited with $status: $(cat "$work/job.err") $(cat "$out"/rank-*.json 2>/dev/null)"

expected="# netio_tsbench cluster: job 4242, 2 inputs, 2 compute nodes
input tcp://127.0.0.2:0
input tcp://127.0.0.3:0
compute tcp://127.0.0.4:$port tcp://127.0.0.4:$((port + 1))
compute tcp://127.0.0.5:$port"
[ "$(cat "$out/cluster.conf")" = "$expected" ] || fail "configuration: $(cat "$out/cluster.conf")"

python3 - "$out" "$scheduler" <<'PY' || fail "rank summaries"
import json, sys
out, scheduler = sys.argv[1], sys.argv[2]
key = "dfs" if scheduler == "dfs" else "best_effort"
for rank in (2, 3):  # the compute nodes: 1000 time-slices round-robin, 500 each, all complete
    with open(f"{out}/rank-{rank}.json") as f:
        summary = json.load(f)[key]
    assert summary["timeslices"] == 500 and summary["incomplete"] == 0, (rank, summary)
    assert summary["gbps"] > 0, (rank, summary)
for rank in (0, 1):  # the inputs ran and reported
    with open(f"{out}/rank-{rank}.json") as f:
        json.load(f)
with open(f"{out}/summary-all.json") as f:  # the job's last step: --collect over every rank
    summary = json.load(f)[key]
assert summary["timeslices"] == 1000 and summary["incomplete"] == 0, summary
PY
ls "$out"/*/rank-* >/dev/null 2>&1 || fail "no CSV directories under $out: $(ls -R "$out")"
echo "ok: examples/tsbench_slurm.sh ($scheduler) on 4 stand-in nodes"
