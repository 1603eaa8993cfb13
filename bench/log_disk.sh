#!/bin/sh
# The session log on disk (the default) against --log memory, measured in
# the same run with the same load tool (build/bench/fanout): fan-out
# deliveries/s and server CPU per delivery at K=10/100/1000, ingest into one
# session with one subscriber and into 1,000 sessions (fanout --spread), and
# latency at 1,000 frames/s into 100
# subscribers; then how long a restart with about 1 GiB on disk takes to
# serve (it reads back only what memory holds).
set -eu
cd "$(dirname "$0")/.."
work=$(mktemp -d)
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

make -s -j2 all build/bench/fanout
ulimit -n 16384 2>/dev/null || true
# The demo world and 999 more sessions of runner-1's container for the
# ingest into 1,000 sessions (sess-1-2 .. sess-1-1000).
world="$work/world.json"
python3 - "$world" <<'PY'
import json, sys
w = json.load(open("deploy/demo-world.json"))
w["sessions"] += [{"id": "sess-1-%d" % i, "container": "ctr-1", "owner": "alice"}
                  for i in range(2, 1001)]
json.dump(w, open(sys.argv[1], "w"))
PY

start_agenthubd() { # extra flags...
    rm -f "$work/db" "$work/db"-* "$work/log.db" "$work/log.db"-*
    build/agenthub admin --db "$work/db" import "$world" >/dev/null
    build/agenthubd --db "$work/db" --listen 127.0.0.1:0 --runner-listen 127.0.0.1:0 "$@" \
        2>"$work/server.log" &
    server_pid=$!
    pids="$pids $server_pid"
    for _ in $(seq 100); do grep -q 'listening runner' "$work/server.log" && break; sleep 0.1; done
    public=$(sed -n 's/^agenthubd: listening public //p' "$work/server.log")
    runner=$(sed -n 's/^agenthubd: listening runner //p' "$work/server.log")
}

stop_server() {
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
}

load() { # fanout flags...
    build/bench/fanout --public "$public" --runner "$runner" --token t-admin \
        --runner-token t-runner-1 --session sess-1 --server-pid "$server_pid" "$@"
}

big="--agent-log-bytes 536870912 --subscriber-buffer-bytes 268435456"
for log in memory disk; do
    if [ "$log" = memory ]; then logflags="--log memory"; else logflags="--log-db $work/log.db"; fi
    echo "== --log $log: fan-out"
    # shellcheck disable=SC2086
    start_agenthubd $logflags $big
    for k in 10 100 1000; do
        load -k "$k" -n $((2000000 / k))
    done
    echo "== --log $log: ingest, one subscriber"
    load -k 1 -n 200000
    stop_server
    echo "== --log $log: ingest into 1,000 sessions, one subscriber on the first"
    # shellcheck disable=SC2086
    start_agenthubd $logflags --max-sessions-per-account 2000
    load -k 1 -n 200000 --spread 1000
    stop_server
    echo "== --log $log: latency at 1,000 frames/s into 100 subscribers"
    # shellcheck disable=SC2086
    start_agenthubd $logflags
    load -k 100 -n 5000 --rate 1000
    stop_server
done

echo "== restart: about 1 GiB of one session's frames on disk, default memory bounds"
keep="--disk-log-bytes 2147483648 --disk-log-budget-bytes 4294967296 --subscriber-buffer-bytes 268435456"
# shellcheck disable=SC2086
start_agenthubd --log-db "$work/log.db" $keep
# Paced: at full speed the disk falls behind the producer and past 256 MiB
# pending the Runner is told UNAVAILABLE (the load tool does not resend).
load -k 1 -n ${RESTART_FRAMES:-5000000} --size 200 --rate 60000 >/dev/null
kill -9 "$server_pid"
wait "$server_pid" 2>/dev/null || true
ls -la "$work"/log.db* | awk '{s += $5} END {printf "log files: %.0f MiB\n", s / 1048576}'
started=$(date +%s.%N)
# shellcheck disable=SC2086
build/agenthubd --db "$work/db" --log-db "$work/log.db" --listen 127.0.0.1:0 \
    --runner-listen 127.0.0.1:0 $keep 2>"$work/server2.log" &
server_pid=$!
pids="$pids $server_pid"
while ! grep -q 'listening runner' "$work/server2.log"; do sleep 0.05; done
echo "serving after $(echo "$(date +%s.%N) - $started" | bc) s"
grep 'read back' "$work/server2.log"
stop_server
