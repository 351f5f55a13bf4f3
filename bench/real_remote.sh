#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# real_remote.sh [RUNS] -- real Debian programs whose objects are freed by other threads, run
# under each allocator with LD_PRELOAD, interleaved (for run: for program: for allocator), and
# the median wall time of each printed as a markdown table.
#
#   queue   python3 (PYTHONMALLOC=malloc) with 2 producer and 2 consumer threads handing
#           records (a dict, a str, a list) over a queue.Queue: the consumer frees them
#   sort    coreutils `sort --parallel=2` of 1.5 M random lines (its threads merge what
#           others allocated)
#
# Environment: ALLOCATORS ("name=/path/lib.so ...", default: axmalloc from build/ and
# Debian's mimalloc; an empty path means glibc). Needs python3 and coreutils only.
set -euo pipefail
export LC_ALL=C
RUNS=${1:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
read -r -a ALLOCS <<<"${ALLOCATORS:-glibc= axmalloc=$ROOT/build/libaxmalloc.so mimalloc=/usr/lib/$(gcc -print-multiarch)/libmimalloc.so.2}"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

cat >"$TMP/handoff.py" <<'EOF'
import queue, threading
N, P, C = 150000, 2, 2
q = queue.Queue(maxsize=4096)
def producer(k):
    for i in range(N):
        q.put({"id": i, "name": "record-%d-%d" % (k, i), "tags": [k, i, str(i)]})
    for _ in range(C // P):
        q.put(None)
total = [0] * C
def consumer(k):
    while True:
        r = q.get()
        if r is None:
            return
        total[k] += len(r["name"]) + len(r["tags"])
ts = [threading.Thread(target=producer, args=(k,)) for k in range(P)]
ts += [threading.Thread(target=consumer, args=(k,)) for k in range(C)]
for t in ts: t.start()
for t in ts: t.join()
print(sum(total))
EOF
python3 -c 'import random
r = random.Random(26)
print("\n".join("%016x %s" % (r.getrandbits(64), "x" * r.randrange(40)) for _ in range(1500000)))' >"$TMP/lines"

declare -A T=()
run() { # name preload command...
  local name=$1 lib=$2; shift 2
  local t0=$EPOCHREALTIME
  if [[ -n $lib ]]; then env LD_PRELOAD="$lib" PYTHONMALLOC=malloc "$@" >"$TMP/out"; else env PYTHONMALLOC=malloc "$@" >"$TMP/out"; fi
  local t1=$EPOCHREALTIME
  T[$name]+="$(( 10#${t1/./} - 10#${t0/./} )) "
}
for ((i = 1; i <= RUNS; i++)); do
  for a in "${ALLOCS[@]}"; do run "queue|${a%%=*}" "${a#*=}" python3 "$TMP/handoff.py"; done
  for a in "${ALLOCS[@]}"; do run "sort|${a%%=*}" "${a#*=}" sort --parallel=2 -S 200M -o "$TMP/sorted" "$TMP/lines"; done
  echo "run $i of $RUNS done" >&2
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {printf "%.3f", (NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2) / 1e6}'; }
printf '| program |'; for a in "${ALLOCS[@]}"; do printf ' %s |' "${a%%=*}"; done; echo
printf '|---|'; for a in "${ALLOCS[@]}"; do printf -- '---:|'; done; echo
for p in queue sort; do
  printf '| %s |' "$p"
  for a in "${ALLOCS[@]}"; do printf ' %s s |' "$(median <<<"${T[$p|${a%%=*}]}")"; done
  echo
done
