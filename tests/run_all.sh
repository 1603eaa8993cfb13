#!/bin/sh
# `make test`: generated code and page bundle checks, unit suites, the same under
# ASan+UBSan, the e2e suites, then every fuzz target for a few seconds over
# its corpus; ends with "N passed, N failed".  Each step appends a
# "passed failed" line to $counts: the unit runner's are Check's own totals
# (tests/run_unit.sh), the e2e ones pytest's, the fuzz ones one per target.
set -u
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
counts=$(mktemp)
trap 'rm -f "$counts"' EXIT
build_failed=0

step() { echo "== $*"; }

step "generated code"
if ! make -s check-gen; then echo "0 1" >> "$counts"; fi

step "the pane page's bundle"
if ! make -s check-web; then echo "0 1" >> "$counts"; fi

step "unit suites"
if make -s -j"$jobs" all; then
    tests/run_unit.sh build "$counts"
else
    echo "build failed"; echo "0 1" >> "$counts"; build_failed=1
fi

step "unit suites under -fsanitize=address,undefined"
if make -s -j"$jobs" SAN=1 all; then
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        tests/run_unit.sh build-asan "$counts"
    step "end-to-end suites (python3-grpcio against the sanitizer build)"
    ASAN_OPTIONS=detect_leaks=1 tests/run_e2e.sh build-asan "$counts"
else
    echo "sanitizer build failed"; echo "0 1" >> "$counts"; build_failed=1
fi

step "fuzz targets, ${FUZZ_SECONDS:-5} s each over their corpus (make fuzz-smoke)"
if make -s -j"$jobs" fuzz >/dev/null; then
    tests/fuzz/smoke.sh build-fuzz "${FUZZ_SECONDS:-5}" "$counts"
else
    echo "fuzz build failed"; echo "0 1" >> "$counts"; build_failed=1
fi

passed=$(awk '{p += $1} END {print p + 0}' "$counts")
failed=$(awk '{f += $2} END {print f + 0}' "$counts")
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$build_failed" -eq 0 ]
