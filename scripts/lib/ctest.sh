#!/usr/bin/env bash
# Source, then: ctest_every_test_runs BUILD_DIR [ctest args...]
# Runs ctest in BUILD_DIR (output on failure, 15 min per test, 2 at a time) and fails if it fails,
# if no test matched, or if any selected test was skipped or not run: here every test must run.
ctest_every_test_runs() {
  local dir=$1 log rc
  shift
  log=$(mktemp)
  set +e
  ctest --test-dir "$dir" --output-on-failure --timeout 900 -j2 --no-tests=error "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  if grep -q "\*\*\*Skipped\|Not Run" "$log"; then
    echo "${0##*/}: some tests were skipped or not run; here every test must run" >&2
    rc=1
  fi
  rm -f "$log"
  return "$rc"
}

# gtest_binaries_pass BUILD_DIR FILTER BINARY...: runs each gtest binary of BUILD_DIR/tests whole
# (--gtest_filter=FILTER), all at once, each into BUILD_DIR/<binary>.log; fails if one fails, is
# killed, or skips a test. A failed binary's log is printed without its RUN/OK lines.
gtest_binaries_pass() {
  local dir=$1 filter=$2 rc=0 b start=$SECONDS
  shift 2
  local -A pid=()
  for b in "$@"; do
    "$dir/tests/$b" --gtest_filter="$filter" >"$dir/$b.log" 2>&1 &
    pid[$b]=$!
  done
  for b in "$@"; do
    local brc=0
    wait "${pid[$b]}" || brc=$?
    if [ "$brc" -eq 0 ] && grep -q '^\[  SKIPPED \]' "$dir/$b.log"; then
      echo "${0##*/}: $b skipped tests; here every test must run" >&2
      brc=1
    fi
    if [ "$brc" -ne 0 ]; then
      grep -v '^\[ RUN      \]\|^\[       OK \]' "$dir/$b.log" >&2 || true
      echo "${0##*/}: $b failed (exit $brc); whole log: $dir/$b.log" >&2
      rc=1
    else
      echo "$b: $(grep -E '^\[  PASSED  \]' "$dir/$b.log")" >&2
    fi
  done
  echo "${0##*/}: gtest binaries took $((SECONDS - start)) s" >&2
  return "$rc"
}
