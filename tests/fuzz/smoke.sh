#!/bin/sh
# Usage: tests/fuzz/smoke.sh BUILD_DIR SECONDS COUNTS_FILE
# Runs every fuzz target in BUILD_DIR over its committed corpus
# (tests/fuzz/corpus/NAME) for SECONDS each.  New inputs go to a scratch
# directory, never into the repository; a crash, leak or timeout leaves its
# input in BUILD_DIR/artifacts/.  Prints one line per target (executions/s,
# edges reached) and appends "passed failed" to COUNTS_FILE.
set -u
build=$1
seconds=$2
counts=$3
cd "$(dirname "$0")/../.."
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$build/artifacts"
passed=0
failed=0
for bin in "$build"/fuzz_*; do
    [ -x "$bin" ] || continue
    name=$(basename "$bin")
    corpus=tests/fuzz/corpus/$name
    mkdir -p "$scratch/$name"
    log=$scratch/$name.log
    if [ -d "$corpus" ]; then set -- "$corpus"; else set --; fi
    if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
        "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$build/artifacts/$name-" \
        "$scratch/$name" "$@" >"$log" 2>&1; then
        execs=$(grep -oE 'exec/s: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+')
        edges=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+')
        echo "fuzz $name: ok, ${execs:-?} exec/s, ${edges:-?} edges"
        passed=$((passed + 1))
    else
        echo "fuzz $name: FAILED (see $build/artifacts/)"
        grep -E 'ERROR|SUMMARY|==[0-9]+==|#[0-9]+ 0x' "$log" | head -30
        failed=$((failed + 1))
    fi
done
echo "$passed $failed" >> "$counts"
[ "$failed" -eq 0 ]
