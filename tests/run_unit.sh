#!/bin/sh
# Usage: tests/run_unit.sh BUILD_DIR COUNTS_FILE
# Runs every Check suite in BUILD_DIR/tests and appends "passed failed" to COUNTS_FILE.
set -u
build=$1
counts=$2
passed=0
failed=0
for t in "$build"/tests/test_*; do
    [ -x "$t" ] || continue
    out=$(CK_DEFAULT_TIMEOUT=60 "$t" 2>&1)
    rc=$?
    printf '%s\n' "$out" | grep -v '^Running suite' | grep -E '%: Checks:|:[EF]:' | sed "s|^|$(basename "$t"): |"
    line=$(printf '%s\n' "$out" | grep -E '%: Checks: [0-9]+' | tail -1)
    if [ -z "$line" ]; then
        echo "$(basename "$t"): crashed (exit $rc) before Check's summary"
        printf '%s\n' "$out" | tail -20
        failed=$((failed + 1))
        continue
    fi
    checks=$(echo "$line" | sed -E 's/.*Checks: ([0-9]+).*/\1/')
    fails=$(echo "$line" | sed -E 's/.*Failures: ([0-9]+).*/\1/')
    errs=$(echo "$line" | sed -E 's/.*Errors: ([0-9]+).*/\1/')
    bad=$((fails + errs))
    passed=$((passed + checks - bad))
    failed=$((failed + bad))
    if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
        echo "$(basename "$t"): exit $rc after a clean summary (sanitizer report?)"
        printf '%s\n' "$out" | tail -20
        failed=$((failed + 1))
    fi
done
echo "$passed $failed" >> "$counts"
