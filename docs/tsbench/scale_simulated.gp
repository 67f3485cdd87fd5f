# SPDX-License-Identifier: MIT
# The scale study's plot (docs/performance.md, "At scale"): completion-spread median against
# the nodes per side, both schedulers, default, lossless and core network, from scale_simulated.dat
# (netio_tsbench --simulate --compare, seed 1). Run from this directory: gnuplot scale_simulated.gp
set terminal pngcairo size 900,560 font ",11"
set output 'scale_simulated.png'
set title 'Completion spread median, simulated (netio\_tsbench --simulate --compare, seed 1)'
set xlabel 'inputs = compute nodes'
set ylabel 'spread median (ms)'
set logscale xy
set datafile missing "?"
set xtics (4, 8, 16, 32, 48, 64, 96, 128, 192)
set key top left
set grid
plot 'scale_simulated.dat' using 1:2 with linespoints lw 2 title 'best-effort, default network', \
     '' using 1:3 with linespoints lw 2 title 'DFS, default network', \
     '' using 1:4 with linespoints lw 2 dt 2 title 'best-effort, lossless network', \
     '' using 1:5 with linespoints lw 2 dt 2 title 'DFS, lossless network', \
     '' using 1:6 with linespoints lw 2 dt 4 title 'best-effort, core at half the ports', \
     '' using 1:7 with linespoints lw 2 dt 4 title 'DFS, core at half the ports', \
     '' using 1:8 with lines lc rgb 'gray' dt 3 title 'one round (N x 0.33 ms)'
