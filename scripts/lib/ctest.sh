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
