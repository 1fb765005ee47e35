# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rcnet-bench's chart: one horizontal bar per goal row (value over the
# goal's threshold, log scale), green when met, red when not; the goal is
# the line at 1. bench_table.py writes the data, one line per goal row:
#   INDEX "LABEL" VALUE_OVER_THRESHOLD MET(1/0) "VALUE"
#   gnuplot -e "dat='bench-chart.dat'; png='bench.png'; n=ROWS" bench_chart.gp
set terminal pngcairo size 1200,(150 + 32 * n) font "sans,10"
set output png
set title "goal rows: value / goal threshold (log); goal = line at 1\n>= goals must reach it, <= goals stay left of it\nratios against anchors of the same boot; green met, red not"
set logscale x
set xrange [0.01:100]
set yrange [n - 0.3:-0.7]
set ytics () font "sans,9"
set ytics nomirror
set grid xtics
set key off
set style fill solid 0.8 noborder
set arrow from 1, graph 0 to 1, graph 1 nohead lw 2 dt 2 lc rgb "black"
plot dat using (sqrt(0.01 * ($3 > 0.01 ? $3 : 0.011))):1:(0.01):($3 > 0.01 ? $3 : 0.011):($1 - 0.35):($1 + 0.35):($4 > 0 ? 0x2ca02c : 0xd62728):ytic(2) \
       with boxxyerror lc rgb variable, \
     dat using ($3 > 0.01 ? $3 * 1.08 : 0.012):1:5 with labels left font "sans,9"
