#!/usr/bin/env bash
# Private, throw-away PostgreSQL 15 for tests (from shared/recipes/postgres.sh). Source, then:
#   pg_ci_start && export TUNECTL_TEST_DSN=$(pg_ci_dsn) ... ; pg_ci_stop
# Works as root (runs PostgreSQL as $PG_CI_USER via runuser) or as an ordinary user.
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
PG_CI_ROOT=${PG_CI_ROOT:-${TMPDIR:-/tmp}/tunectl-test-pg}
PG_CI_DATA=${PG_CI_DATA:-$PG_CI_ROOT/data}
PG_CI_SOCK=${PG_CI_SOCK:-$PG_CI_ROOT/sock}
PG_CI_PORT=${PG_CI_PORT:-55433}
PG_CI_USER=${PG_CI_USER:-postgres}

_pg_as() { if [ "$(id -u)" = 0 ]; then runuser -u "$PG_CI_USER" -- "$@"; else "$@"; fi; }

pg_ci_start() {
  local owner; owner=$([ "$(id -u)" = 0 ] && echo "$PG_CI_USER" || id -un)
  mkdir -p "$PG_CI_ROOT" "$PG_CI_SOCK"
  chown "$owner": "$PG_CI_ROOT" "$PG_CI_SOCK"; chmod 755 "$PG_CI_SOCK"
  _pg_as test -x "$PG_CI_ROOT" || { echo "pg_ci_start: user $owner cannot reach $PG_CI_ROOT; chmod o+x its parents" >&2; return 1; }
  if [ -f "$PG_CI_DATA/postmaster.pid" ]; then pg_ci_stop >/dev/null 2>&1 || true; fi
  if [ ! -s "$PG_CI_DATA/PG_VERSION" ]; then
    _pg_as "$PG_BIN/initdb" -D "$PG_CI_DATA" -U postgres -E UTF8 --locale=C.UTF-8 \
        -A trust -N >"$PG_CI_ROOT/initdb.log" 2>&1 || { cat "$PG_CI_ROOT/initdb.log"; return 1; }
    cat >>"$PG_CI_DATA/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $PG_CI_PORT
unix_socket_directories = '$PG_CI_SOCK'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 100
shared_buffers = 128MB
CONF
  fi
  _pg_as "$PG_BIN/pg_ctl" -D "$PG_CI_DATA" -l "$PG_CI_ROOT/server.log" -W start >/dev/null || return 1
  local i
  for ((i = 0; i < 300; i++)); do
    "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_CI_PORT" -t 1 && return 0
    sleep 0.1
  done
  echo "postgres did not become ready; log:" >&2; tail -20 "$PG_CI_ROOT/server.log" >&2; return 1
}

pg_ci_dsn() { echo "host=127.0.0.1 port=$PG_CI_PORT user=postgres"; }

pg_ci_stop() {
  [ -f "$PG_CI_DATA/postmaster.pid" ] || return 0
  _pg_as "$PG_BIN/pg_ctl" -D "$PG_CI_DATA" -m fast -w -t 30 stop >/dev/null
}

# For test scripts: a fresh PostgreSQL in a new temp folder on a free port, removed again when the
# calling script exits (this sets its EXIT trap), with TUNECTL_TEST_DSN exported for the db tests
# and TUNECTL_REQUIRE_DB=1 (no database is a failure, not a skip).
pg_ci_private_start() {
  PG_CI_ROOT=$(mktemp -d "${TMPDIR:-/tmp}/tunectl-test-pg.XXXXXX") || return 1
  chmod 755 "$PG_CI_ROOT"
  PG_CI_DATA=$PG_CI_ROOT/data PG_CI_SOCK=$PG_CI_ROOT/sock
  PG_CI_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])') || return 1
  trap pg_ci_private_cleanup EXIT
  pg_ci_start || return 1
  export TUNECTL_TEST_DSN; TUNECTL_TEST_DSN="$(pg_ci_dsn)"
  export TUNECTL_REQUIRE_DB=1
}

pg_ci_private_cleanup() { pg_ci_stop || true; rm -rf "$PG_CI_ROOT"; }
