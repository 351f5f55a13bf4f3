# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034  # the AX_* variables set here are read by the scripts that source it
# Shared by bench/compare_workloads.sh and bench/compare_micro.sh (sourced, not run): the
# machine's other load during a run, and the time estimate shown while the runs go on.
# Needs bash >= 5 (EPOCHREALTIME).

# ---- other load ----------------------------------------------------------------------------
# A run is disturbed when other processes took CPU time during it. Measured as an integral,
# not a point sample: the CPU time all CPUs spent busy over the run (/proc/stat, every busy
# jiffy of every CPU) minus the run's own user+system time (/usr/bin/time). procs_running
# (runnable tasks) is kept before and after as well, but a sample misses a compile that starts
# and ends within a 1 s run; the integral does not. Both clocks tick at 10 ms (USER_HZ 100):
# AX_BUSY_SLACK_MS (40) absorbs that granularity and our own fork/exec of time, timeout and env.
AX_HZ=$(getconf CLK_TCK 2>/dev/null || echo 100)
# AX_BUSY (0.25): other load, in CPUs averaged over the run, above which it is disturbed. On a
# 2-core machine a quarter of a CPU taken from a 2-thread run slows it by about 12%.
AX_BUSY=${AX_BUSY:-0.25}
AX_BUSY_SLACK_MS=${AX_BUSY_SLACK_MS:-40}
export AX_BUSY_NOTE="other processes used more than $AX_BUSY of a CPU on average during the run"

# ax_load_sample: sets AX_BUSY_MS (busy time of all CPUs since boot, ms) and AX_RUNNING (the
# runnable tasks other than this shell). Builtins only: no process of ours runs meanwhile.
ax_load_sample() {
  local key u n s irq sirq steal
  AX_BUSY_MS=0 AX_RUNNING=
  while read -r key u n s _ _ irq sirq steal _; do
    case $key in
      cpu) AX_BUSY_MS=$(( (u + n + s + irq + sirq + steal) * 1000 / AX_HZ )) ;;
      procs_running) AX_RUNNING=$((u - 1)) ;;
    esac
  done </proc/stat
}

# ax_other_load BUSY0_MS BUSY1_MS OWN_CPU_S WALL_S: sets AX_OTHER_S (other processes' CPU
# seconds during the run, empty when the run's own time is unknown) and AX_DISTURBED (0/1).
ax_other_load() {
  AX_OTHER_S="" AX_DISTURBED=0
  [[ -n $3 ]] || return 0
  local own_ms wall_ms other_ms
  own_ms=$(awk -v c="$3" 'BEGIN { printf "%d", c * 1000 }')
  wall_ms=$(awk -v c="$4" 'BEGIN { printf "%d", c * 1000 }')
  other_ms=$(($2 - $1 - own_ms))
  ((other_ms > 0)) || other_ms=0
  AX_OTHER_S=$(printf '%d.%03d' $((other_ms / 1000)) $((other_ms % 1000)))
  awk -v o="$other_ms" -v w="$wall_ms" -v b="$AX_BUSY" -v s="$AX_BUSY_SLACK_MS" \
    'BEGIN { exit !(o > b * w + s) }' && AX_DISTURBED=1
  return 0
}

# ---- the time estimate ---------------------------------------------------------------------
# Estimates are the median seconds of one run per item, "kind<TAB>name<TAB>allocator<TAB>s",
# from the previous run on this machine (build/results/estimate.tsv) or, on a fresh clone,
# from bench/estimate.tsv (measured by a publish run, see its first line). A missing item
# counts AX_EST_DEFAULT_<kind> seconds.
declare -gA AX_EST=()
AX_EST_SOURCE=
ax_est_load() { # FILE...: later files override earlier ones
  local f kind name alloc s
  for f in "$@"; do
    [[ -r $f ]] || continue
    AX_EST_SOURCE=$f
    while IFS=$'\t' read -r kind name alloc s; do
      [[ $kind == \#* || -z $s ]] && continue
      AX_EST[$kind|$name|$alloc]=$(awk -v s="$s" 'BEGIN { printf "%d", s * 1000 }')
    done <"$f"
  done
}
# ax_est KIND NAME ALLOC: sets AX_EST_V to the estimate in ms, counting in AX_EST_MISS the
# items without a measured time (guessed: 1 s a workload run, 8 s a benchmark program run).
AX_EST_MISS=0
ax_est() {
  local k="$1|$2|$3" d=1000
  [[ $1 == bm* ]] && d=8000
  AX_EST_V=${AX_EST[$k]:-}
  [[ -n $AX_EST_V ]] || { AX_EST_V=$d; AX_EST_MISS=$((AX_EST_MISS + 1)); }
}
# ax_est_note ITEMS: " (N of ITEMS runs guessed: ...)" when some had no measured time.
ax_est_note() {
  ((AX_EST_MISS == 0)) || printf ' (%d of %d kinds of run never measured: guessed)' "$AX_EST_MISS" "$1"
}

# ax_eta_start TOTAL_MS: the step's estimate; AX_ETA_AFTER_MS (environment) is the estimate of
# the steps after this one, added to what is left.
ax_eta_start() {
  AX_ETA_TOTAL=$1 AX_ETA_DONE=0
  AX_ETA_T0=${EPOCHREALTIME/./}
}
# ax_eta_tick DONE_EST_MS: sets AX_ETA_LINE, "4:10 elapsed, about 6:30 left". What is left
# is the estimate of what remains scaled by the pace so far (actual / estimated time), so a
# busy machine's slowness carries into the estimate; the pace counts once 20 s are estimated.
ax_eta_tick() {
  AX_ETA_DONE=$((AX_ETA_DONE + $1))
  local now=${EPOCHREALTIME/./} el_ms left_ms all_ms
  el_ms=$(((now - AX_ETA_T0) / 1000))
  left_ms=$((AX_ETA_TOTAL - AX_ETA_DONE + ${AX_ETA_AFTER_MS:-0}))
  ((left_ms > 0)) || left_ms=0
  if ((AX_ETA_DONE > 20000)); then left_ms=$((left_ms * el_ms / AX_ETA_DONE)); fi
  all_ms=$el_ms
  [[ -z ${AX_BENCH_T0:-} ]] || all_ms=$(((now - ${AX_BENCH_T0/./}) / 1000))
  AX_ETA_LINE=$(printf '%d:%02d elapsed, about %d:%02d left' $((all_ms / 60000)) \
    $((all_ms / 1000 % 60)) $((left_ms / 60000)) $((left_ms / 1000 % 60)))
}
ax_fmt_min() { printf '%d:%02d' $(($1 / 60000)) $(($1 / 1000 % 60)); }
