#!/bin/bash
# SPDX-License-Identifier: MIT
# git.sh DIR: the git workload of t_progs.sh. Builds a repository in DIR (empty) with a
# thousand generated files over 20 commits, a branch and a merge, then prints what
# git says about it: log, trees, diffs, blame, grep, archive, gc, fsck, count-objects.
#
# Every git command runs as "$RUN" git ...: t_progs.sh points RUN at a wrapper that execs
# the program plainly or with axmalloc preloaded, so the shell and the file generator here
# never run under the preload. Names, e-mails and dates are fixed, and pack.threads is 1,
# so commit ids, packs and every printed line are the same on each run.
set -eu
RUN=${RUN:?RUN must name the program wrapper}
cd "${1:?usage: git.sh DIR}"

export HOME=$PWD/home GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 TZ=UTC
export GIT_AUTHOR_NAME="Ada Author" GIT_AUTHOR_EMAIL=ada@example.org
export GIT_COMMITTER_NAME="Cy Committer" GIT_COMMITTER_EMAIL=cy@example.org
mkdir -p "$HOME"
g() { "$RUN" git "$@"; }

# gen C: rewrite about a third of the files of the tree for commit C (deterministic).
gen() {
  awk -v c="$1" 'BEGIN {
    for (d = 0; d < 10; d++) {
      for (f = 0; f < 100; f++) {
        if (c > 1 && (d * 100 + f + c) % 3 != 0) continue
        path = sprintf("src/d%02d/f%03d.txt", d, f)
        for (l = 0; l < 40 + (f % 7) * 10; l++)
          printf "line %d of %s in commit %d: %s\n", l, path, (l % 5 == 0 ? c : 0),
                 substr("lorem ipsum dolor sit amet consectetur", 1 + (l * f) % 30) > path
        close(path)
      }
    }
  }'
}

g init -q -b main repo
cd repo
g config gc.auto 0
g config maintenance.auto false
g config pack.threads 1
g config core.autocrlf false
for d in $(seq -f %02g 0 9); do mkdir -p "src/d$d"; done

commit() {
  GIT_AUTHOR_DATE="@$((1700000000 + $1 * 3600)) +0000" \
  GIT_COMMITTER_DATE="@$((1700000000 + $1 * 3600 + 60)) +0000" \
    g commit -q -m "commit $1: $2"
}
for c in $(seq 1 20); do
  gen "$c"
  [ $((c % 5)) -eq 0 ] && rm "src/d0$((c / 5))/f00$((c % 7)).txt"
  g add -A
  commit "$c" "regenerate a third of the files"
  [ "$c" -eq 12 ] && g branch side
done
# The side branch touches only side/, so the merge has no conflict.
g checkout -q side
mkdir side
for c in 21 22 23; do
  seq 1 $((c * 100)) | sed "s/^/side $c: /" >"side/s$c.txt"
  g add -A
  commit "$c" "side work"
done
g checkout -q main
GIT_AUTHOR_DATE="@1700200000 +0000" GIT_COMMITTER_DATE="@1700200000 +0000" \
  g merge -q --no-ff -m "merge side" side

echo "== head"; g rev-parse HEAD 'HEAD^{tree}' side
echo "== log"; g log --graph --format='%H %an <%ae> %ad %cn %cd %s' --date=iso-strict
echo "== log --stat"; g log --stat --format='%h %s' | sha256sum
echo "== ls-tree"; g ls-tree -r HEAD | sha256sum; g ls-tree -r HEAD | wc -l
echo "== diff"; g diff --stat HEAD~15 HEAD | tail -n 3; g diff HEAD~15 HEAD | sha256sum
echo "== blame"; g blame -s src/d03/f042.txt | sha256sum
echo "== grep"; g grep -c 'commit 20:' HEAD -- src/d01 | head -n 5
echo "== archive"; g archive --format=tar HEAD | sha256sum
echo "== rev-list"; g rev-list --all --objects | sort | sha256sum
echo "== gc"; g gc -q; ls .git/objects/pack/
echo "== fsck"; rc=0; g fsck --full --strict --no-progress || rc=$?; echo "fsck exit $rc"
echo "== count-objects"; g count-objects -v
echo "== verify-pack"; g verify-pack -v .git/objects/pack/*.idx | sha256sum
