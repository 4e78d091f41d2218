#!/usr/bin/env bash
# Where PostgreSQL's time goes during the dispatch benchmark's measuring window: a private
# PostgreSQL with pg_stat_statements, `tunectl-loadgen --mode dispatch` against SERVER, the
# statistics reset when the load generator starts measuring and read when its window ends.
#   bench/dispatch_statements.sh [SERVER [loadgen flags…]]
# SERVER defaults to build-release/tunectl-server (scripts/bench-agents builds it); the window is
# 30 s unless --flow-seconds says otherwise. Prints the load generator's tables, then the 25
# statements with the most time in the window.
set -euo pipefail
cd "$(dirname "$0")/.."
SERVER=${1:-build-release/tunectl-server}
shift || true
LOADGEN=build-release/bench/tunectl-loadgen
[[ -x $SERVER && -x $LOADGEN ]] || { echo "build first: scripts/bench-agents --smoke" >&2; exit 2; }
source scripts/lib/pg.sh
pg_ci_private_start
cat >>"$PG_CI_DATA/postgresql.conf" <<CONF
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
CONF
pg_ci_stop
pg_ci_start
DSN="$(pg_ci_dsn)"
psql "$DSN dbname=postgres" -qc "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"
OUT=$(mktemp)
ARGS=("$@")
[[ " $* " == *" --flow-seconds "* ]] || ARGS+=(--flow-seconds 30)
"$LOADGEN" --db "$DSN" --server-bin "$SERVER" --mode dispatch "${ARGS[@]}" >"$OUT" 2>&1 &
LG=$!
echo "dispatch_statements: the load generator connects its agents and warms up (minutes at full size)…" >&2
until grep -q "measuring [0-9]* s" "$OUT"; do
  kill -0 $LG 2>/dev/null || { cat "$OUT"; exit 1; }
  sleep 0.2
done
WINDOW=$(sed -n 's/.*measuring \([0-9]*\) s.*/\1/p' "$OUT" | head -1)
psql "$DSN dbname=postgres" -qc "SELECT pg_stat_statements_reset()" >/dev/null
echo "dispatch_statements: measuring ${WINDOW} s…" >&2
sleep "$WINDOW"
STATS=$(psql "$DSN dbname=postgres" -c "SELECT calls, round(total_exec_time::numeric) AS total_ms,
  round(mean_exec_time::numeric, 2) AS mean_ms, round(max_exec_time::numeric, 1) AS max_ms,
  left(regexp_replace(query, '\s+', ' ', 'g'), 120) AS statement
  FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 25")
rc=0
wait $LG || rc=$?
cat "$OUT"
echo
echo "PostgreSQL during the ${WINDOW} s window (pg_stat_statements):"
echo "$STATS"
rm -f "$OUT"
exit $rc
