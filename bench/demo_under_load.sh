#!/usr/bin/env bash
# bench/demo_under_load.sh: scripts/demo N times beside a CPU hog (stress-ng --cpu 2 on this
# 2-core machine, as a shared node would be), counting how often the demo's num_workers 1→2
# experiment is decided improved and frozen (issue 30: ≥ 9 of 10). Prints one line per round and a
# summary; each round's output is kept in $OUT_DIR/demo-<i>.log.
# Usage: bench/demo_under_load.sh [N (default 10)] [stress-ng --cpu workers (default 2)]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10} HOGS=${2:-2}
OUT_DIR=${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/demo-under-load.XXXXXX")}
command -v stress-ng >/dev/null || { echo "demo_under_load: stress-ng is missing (scripts/bootstrap installs it)" >&2; exit 2; }
scripts/bootstrap >/dev/null
scripts/build tunectl tunectl-server tunectl-agent >/dev/null
hog=
trap '[ -n "$hog" ] && kill "$hog" 2>/dev/null || true' EXIT
improved=0 frozen=0
for i in $(seq 1 "$N"); do
  stress-ng --cpu "$HOGS" --timeout 900s >/dev/null 2>&1 &
  hog=$!
  start=$SECONDS
  rc=0
  scripts/demo >"$OUT_DIR/demo-$i.log" 2>&1 || rc=$?
  kill "$hog" 2>/dev/null || true
  wait "$hog" 2>/dev/null || true
  hog=
  decision=$(sed -n 's/^state:  decided — \([a-z]*\).*/\1/p' "$OUT_DIR/demo-$i.log" | head -1)
  effect=$(awk '$1 == "samples_per_s" && $2 == "primary" {print $6, $7, $8; exit}' "$OUT_DIR/demo-$i.log")
  froze=no
  grep -q "^experiment [0-9]* frozen: demo config v2" "$OUT_DIR/demo-$i.log" && froze=yes
  [ "$decision" = improved ] && improved=$((improved + 1))
  [ "$froze" = yes ] && frozen=$((frozen + 1))
  echo "round $i/$N: exit $rc, ${decision:-no decision}, samples_per_s ${effect:-—}, frozen $froze ($((SECONDS - start)) s)"
done
echo "improved $improved of $N, frozen $frozen of $N (stress-ng --cpu $HOGS beside it; logs in $OUT_DIR)"
