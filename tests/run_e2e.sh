#!/bin/sh
# Usage: tests/run_e2e.sh BUILD_DIR COUNTS_FILE
# Runs the python3-grpcio suites against BUILD_DIR's binaries.
set -u
build=$1
counts=$2
out=$(AGENTHUB_BUILD=$(cd "$build" && pwd) /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/e2e 2>&1)
rc=$?
printf '%s\n' "$out" >"$build/e2e.log"
if [ "$rc" -ne 0 ]; then
    # The failures in full (up to 400 lines), so a CI log says what failed
    # and why; the whole output stays in BUILD_DIR/e2e.log.
    printf '%s\n' "$out" | sed -n '/^=* FAILURES =*$/,/^=* short test summary/p' | head -400
fi
printf '%s\n' "$out" | tail -60
# A failure's summary line carries its whole assertion message, which can be
# longer than the tail above: name every failed test on a line of its own.
printf '%s\n' "$out" | grep -E '^(FAILED|ERROR) ' | cut -c1-240
summary=$(printf '%s\n' "$out" | grep -E '(passed|failed|error|no tests ran)' | tail -1)
passed=$(echo "$summary" | grep -oE '[0-9]+ passed' | grep -oE '[0-9]+' || true)
failed=$(echo "$summary" | grep -oE '[0-9]+ failed' | grep -oE '[0-9]+' || true)
errors=$(echo "$summary" | grep -oE '[0-9]+ error' | grep -oE '[0-9]+' || true)
passed=${passed:-0}
failed=$(( ${failed:-0} + ${errors:-0} ))
if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ] && [ "$failed" -eq 0 ]; then
    failed=1
fi
echo "$passed $failed" >> "$counts"
