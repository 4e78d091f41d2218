#!/usr/bin/env bash
# Copied from the workplace recipe (shared/recipes/node-exporter.sh); used by tests/e2e/test_sources.py.
# prometheus-node-exporter (Debian 1.5.0) on loopback, no systemd. Source, then nodeexp_start / nodeexp_stop.
NODEEXP_DIR=${NODEEXP_DIR:-${TMPDIR:-/tmp}/tunectl-nodeexp}
NODEEXP_ADDR=${NODEEXP_ADDR:-127.0.0.1:59100}

nodeexp_start() {
  mkdir -p "$NODEEXP_DIR"
  local run=()
  # setpriv execs in place, so $! is the exporter itself (runuser/su would leave a wrapper process)
  [ "$(id -u)" = 0 ] && run=(setpriv --reuid=prometheus --regid=prometheus --init-groups)
  "${run[@]}" prometheus-node-exporter --web.listen-address="$NODEEXP_ADDR" \
      --no-collector.systemd --collector.textfile.directory="$NODEEXP_DIR/textfile" \
      >"$NODEEXP_DIR/node_exporter.log" 2>&1 &
  echo $! >"$NODEEXP_DIR/node_exporter.pid"
  for ((i = 0; i < 100; i++)); do
    curl -sf -o /dev/null "http://$NODEEXP_ADDR/metrics" && return 0; sleep 0.1
  done
  echo "node exporter not up" >&2; cat "$NODEEXP_DIR/node_exporter.log" >&2; return 1
}

nodeexp_stop() {
  local pid; pid=$(cat "$NODEEXP_DIR/node_exporter.pid" 2>/dev/null) || return 0
  kill -TERM "$pid" 2>/dev/null
  for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$NODEEXP_DIR/node_exporter.pid"
}
