#!/bin/sh
# Usage: tests/run_unit.sh BUILD_DIR COUNTS_FILE
# Runs every unit suite through BUILD_DIR/tests/unit_tests (the one runner
# for tests/unit/test_list.h) and appends "passed failed" to COUNTS_FILE.
# The totals are Check's own (the runner writes them with --counts); a runner
# that dies before writing them, or exits non-zero after a clean run (a
# sanitizer report at exit), counts as one more failure.
set -u
build=$1
counts=$2
runner=$build/tests/unit_tests
mine=$(mktemp)
trap 'rm -f "$mine"' EXIT
out=$(CK_DEFAULT_TIMEOUT=60 "$runner" --counts "$mine" 2>&1)
rc=$?
printf '%s\n' "$out" | grep -E '%: Checks:|:[EF]:|^unit_tests: '
if [ ! -s "$mine" ]; then
    echo "unit_tests: crashed (exit $rc) before Check's totals"
    printf '%s\n' "$out" | tail -20
    echo "0 1" >> "$counts"
    exit 0
fi
read -r passed failed < "$mine"
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
    echo "unit_tests: exit $rc after a clean run (sanitizer report?)"
    printf '%s\n' "$out" | tail -20
    failed=1
fi
echo "$passed $failed" >> "$counts"
