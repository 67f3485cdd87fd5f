#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# netio_tsbench across nodes under SLURM: half of the tasks are input nodes, half compute
# nodes, one task per node, every task the same command; each finds its role from its line
# of the generated configuration (rank = SLURM_PROCID). Compute node 0 also runs the DDE.
#
#   sbatch --nodes=8 examples/tsbench_slurm.sh            # 4 inputs x 4 computes, DFS
#   SCHEDULER=best-effort sbatch --nodes=8 examples/tsbench_slurm.sh
#
# Environment: NETIO_TSBENCH (the binary, default netio_tsbench on PATH), SCHEDULER
# (dfs | best-effort), TIMESLICES (per run, default 200000), TRANSPORT (tcp, or e.g.
# "fabric" with PROVIDER=verbs), PORT (default 6100; the DDE uses PORT+1), OUT (the CSV
# directory, on a shared file system), EXTRA (more netio_tsbench options, e.g. --emulate none).
#SBATCH --job-name=netio_tsbench
#SBATCH --ntasks-per-node=1
#SBATCH --time=00:15:00
#SBATCH --output=netio_tsbench-%j.out
set -euo pipefail

tsbench=${NETIO_TSBENCH:-netio_tsbench}
scheduler=${SCHEDULER:-dfs}
timeslices=${TIMESLICES:-200000}
transport=${TRANSPORT:-tcp}
provider=${PROVIDER:-verbs}
port=${PORT:-6100}
out=${OUT:-$PWD/netio_tsbench-${SLURM_JOB_ID:-local}}
tasks=${SLURM_NTASKS:?run under sbatch or salloc (SLURM_NTASKS)}
(( tasks >= 2 )) || { echo "tsbench_slurm.sh: needs at least 2 tasks" >&2; exit 2; }
inputs=$(( tasks / 2 ))

endpoint() {  # HOST PORT
  if [[ $transport == fabric ]]; then echo "fabric://$1:$2?provider=$provider"; else echo "tcp://$1:$2"; fi
}

# One line per task, in rank order: tasks 0 .. inputs-1 are inputs, the rest compute nodes.
# srun places task k on the k-th node of the allocation (one task per node); the endpoints
# use each node's address as the node itself resolves it.
mkdir -p "$out"
config=$out/cluster.conf
mapfile -t hosts < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
{
  echo "# netio_tsbench cluster: job ${SLURM_JOB_ID:-?}, $inputs inputs, $(( tasks - inputs )) compute nodes"
  for (( rank = 0; rank < tasks; ++rank )); do
    host=${hosts[rank]}
    address=$(getent ahostsv4 "$host" | awk 'NR == 1 { print $1 }')
    if (( rank < inputs )); then
      echo "input $(endpoint "$address" 0)"
    elif (( rank == inputs )); then
      echo "compute $(endpoint "$address" "$port") $(endpoint "$address" $(( port + 1 )))"  # runs the DDE
    else
      echo "compute $(endpoint "$address" "$port")"
    fi
  done
} >"$config"
cat "$config"

# Every task: its role from its rank's line. --emulate none: the real network, not the
# emulated one of the one-machine default.
srun --ntasks="$tasks" --ntasks-per-node=1 bash -c '
  rank=$SLURM_PROCID
  role=$(grep -v "^#" "$1" | sed -n "$(( rank + 1 ))p" | cut -d" " -f1)
  exec "$2" --role "$role" --config "$1" --scheduler "$3" --timeslices "$4" --emulate none \
       --csv "$5" --json --timeout 20m ${6:-} >"$5/rank-$rank.json"
' _ "$config" "$tsbench" "$scheduler" "$timeslices" "$out" "${EXTRA:-}"
echo "tsbench_slurm.sh: per-rank summaries in $out/rank-*.json, CSV files in $out/$([[ $scheduler == dfs ]] && echo dfs || echo best_effort)/rank-*/" >&2
# The whole system's summary (and merged CSV files for plot_tsbench.sh) from every rank's files.
"$tsbench" --collect "$out" --json >"$out/summary-all.json"
"$tsbench" --collect "$out"
