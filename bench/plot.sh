#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plot.sh RESULTS_DIR -- PNG plots of a compare_workloads.sh results folder (gnuplot).
#
# Reads RESULTS_DIR/times.dat and RESULTS_DIR/rss.dat (header "workload <alloc>...", then
# one line per workload: median seconds / peak RSS MiB per allocator, NaN when missing) and
# writes:
#   RESULTS_DIR/time.png   median time per workload and allocator, normalized to glibc = 1
#                          (to the first allocator when glibc was not run); lower is faster;
#                          each bar is labelled with its ratio, each cluster with glibc's
#                          median in seconds
#   RESULTS_DIR/rss.png    peak RSS per workload and allocator in MiB (log scale), labelled
set -euo pipefail
export LC_ALL=C
DIR=${1:?usage: plot.sh RESULTS_DIR}
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 2; }
for f in times rss; do
  [[ -r $DIR/$f.dat ]] || { echo "plot.sh: $DIR/$f.dat not found (run bench/compare_workloads.sh)" >&2; exit 2; }
done

read -r -a HDR <"$DIR/times.dat"
NA=$(( ${#HDR[@]} - 1 ))
(( NA >= 1 )) || { echo "plot.sh: no allocator columns in $DIR/times.dat" >&2; exit 2; }
REFCOL=2
for ((i = 1; i <= NA; i++)); do [[ ${HDR[$i]} = glibc ]] && REFCOL=$((i + 1)); done
REFNAME=${HDR[$((REFCOL - 1))]}

# Normalized times; column NA+2 keeps the reference's seconds for the cluster label.
awk -v r="$REFCOL" 'NR == 1 { print $0, "ref_s"; next }
  { printf "%s", $1
    for (i = 2; i <= NF; i++)
      printf " %s", ($i == "NaN" || $r == "NaN" || $r == 0) ? "NaN" : sprintf("%.4f", $i / $r)
    printf " %s\n", $r }' "$DIR/times.dat" >"$DIR/time_norm.dat"

NW=$(( $(wc -l <"$DIR/times.dat") - 1 ))
W=$(( 300 + NW * (NA * 28 + 40) ))
(( W < 900 )) && W=900
(( W > 2400 )) && W=2400

# A clustered histogram puts bar i (0-based) of cluster x at x + (i - (NA-1)/2) * 1/(NA+gap).
gnuplot <<EOF
set terminal pngcairo noenhanced size $W,620 font "DejaVu Sans,11"
set key autotitle columnheader
set datafile missing "NaN"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key outside top center horizontal
set xtics nomirror
set grid ytics
set bmargin 6
NA = $NA
off(i) = (i - (NA - 1) / 2.0) / (NA + 1.0)

set output "$DIR/time.png"
set title "Median time per workload, normalized to $REFNAME = 1 (lower is faster)"
set ylabel "time / $REFNAME time"
set yrange [0:*]
set offsets 0, 0, graph 0.12, 0
plot for [i=2:NA+1] "$DIR/time_norm.dat" \
        using i:xtic(sprintf("%s\n($REFNAME %.3f s)", stringcolumn(1), column(NA + 2))) title columnheader(i), \
     for [i=2:NA+1] "$DIR/time_norm.dat" using (\$0 + off(i - 2)):(column(i)):(sprintf("%.2f", column(i))) \
        with labels rotate by 90 left offset 0,0.3 font ",8" notitle, \
     1 with lines dashtype 2 lc rgb "black" notitle

set output "$DIR/rss.png"
set title "Peak RSS per workload (MiB, log scale; lower is better)"
set ylabel "peak RSS (MiB)"
set logscale y
set yrange [1:*]
set offsets 0, 0, graph 0.15, 0
plot for [i=2:NA+1] "$DIR/rss.dat" using i:xtic(1) title columnheader(i), \
     for [i=2:NA+1] "$DIR/rss.dat" using (\$0 + off(i - 2)):(column(i)):(sprintf(column(i) < 10 ? "%.1f" : "%.0f", column(i))) \
        with labels rotate by 90 left offset 0,0.3 font ",8" notitle
EOF
echo "plot.sh: wrote $DIR/time.png $DIR/rss.png" >&2
