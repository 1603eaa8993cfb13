#!/bin/sh
# bench/gate_pg.sh [DECISIONS]: bench/gate against SQLite and, in the same
# run, against a PostgreSQL 15 started in a temporary folder for it
# (tests/pg_server.sh; stopped and removed at the end).
set -eu
cd "$(dirname "$0")/.."
make -s build/bench/gate
dir=$(mktemp -d /tmp/agenthub-bench-pg-XXXXXX)
trap 'tests/pg_server.sh stop "$dir"' EXIT
base=$(tests/pg_server.sh start "$dir")
psql -X -q "$base/postgres" -c "CREATE DATABASE bench"
build/bench/gate "${1:-2000000}" "$base/bench"
