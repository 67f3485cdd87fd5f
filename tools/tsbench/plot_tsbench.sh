#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Plots a netio_tsbench --csv DIR with gnuplot:
#   DIR/spread.png       the completion-spread distribution (CDF) of every scheduler in DIR
#   DIR/intervals.png    DFS: proposed against actual interval durations (input 0), with the
#                        slow-down window when one was injected
#   DIR/buffer_fill.png  the receive-buffer fill of compute node 0 over time, per scheduler
# Usage: tools/tsbench/plot_tsbench.sh DIR
set -euo pipefail
dir=${1:?usage: plot_tsbench.sh DIR (a netio_tsbench --csv DIR)}
command -v gnuplot >/dev/null || { echo "plot_tsbench.sh: gnuplot not installed (gnuplot-nox)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
spread_plots=()
fill_plots=()
for scheduler in best_effort dfs; do
  [[ -f $dir/$scheduler/timeslices.csv ]] || continue
  # complete time-slices' spreads in ms, sorted, with their rank as a fraction: a CDF
  awk -F, 'NR > 1 && $3 == 1 { print $6 / 1000 }' "$dir/$scheduler/timeslices.csv" | sort -g >"$tmp/$scheduler.spread"
  n=$(wc -l <"$tmp/$scheduler.spread")
  awk -v n="$n" '{ print $1, NR / n }' "$tmp/$scheduler.spread" >"$tmp/$scheduler.cdf"
  spread_plots+=("'$tmp/$scheduler.cdf' using 1:2 with lines lw 2 title '${scheduler/_/-}'")
  awk -F, 'NR > 1 && $2 == 0 { print $1 / 1e6, $3 }' "$dir/$scheduler/buffer_fill.csv" >"$tmp/$scheduler.fill"
  fill_plots+=("'$tmp/$scheduler.fill' using 1:2 with lines title '${scheduler/_/-}'")
done
[[ ${#spread_plots[@]} -gt 0 ]] || { echo "plot_tsbench.sh: no DIR/best_effort or DIR/dfs in $dir" >&2; exit 1; }

join_plots() { local IFS=,; echo "$*"; }

gnuplot <<GP
set terminal pngcairo size 800,480 font ",10"
set datafile separator whitespace
set output '$dir/spread.png'
set title 'Completion spread of time-slices (first to last contribution)'
set xlabel 'spread (ms, log scale)'
set ylabel 'fraction of time-slices'
set logscale x
set key bottom right
set grid
plot $(join_plots "${spread_plots[@]}")
unset logscale x
set output '$dir/buffer_fill.png'
set title 'Receive buffer of compute node 0'
set xlabel 'time (s)'
set ylabel 'fill (%)'
set key top right
plot $(join_plots "${fill_plots[@]}")
GP

if [[ -f $dir/dfs/intervals.csv ]]; then
  awk -F, 'NR > 1 && $1 == 0 { print $2, ($5 == "" ? "NaN" : $5 / 1000), $6 / 1000 }' "$dir/dfs/intervals.csv" >"$tmp/intervals"
  gnuplot <<GP
set terminal pngcairo size 800,480 font ",10"
set output '$dir/intervals.png'
set title 'DFS intervals of input 0: proposed against actual duration'
set xlabel 'interval'
set ylabel 'duration (ms)'
set key top left
set grid
plot '$tmp/intervals' using 1:3 with linespoints pt 7 ps 0.5 title 'actual', \
     '$tmp/intervals' using 1:2 with linespoints pt 6 ps 0.5 title 'proposed'
GP
fi
echo "plot_tsbench.sh: wrote $dir/spread.png, $dir/buffer_fill.png$([[ -f $dir/dfs/intervals.csv ]] && echo ", $dir/intervals.png")" >&2
