#!/bin/sh
# The session log on disk (the default) against --log memory, measured in
# the same run with the same load tool (build/bench/fanout): fan-out
# deliveries/s and server CPU per delivery at K=10/100/1000, ingest into one
# session with one subscriber and into 1,000 sessions (fanout --spread), and
# latency at 1,000 frames/s into 100 subscribers; then how long a restart
# with about 1 GiB on disk takes to serve (it reads back only what memory
# holds).  Each load runs against both backends in turn, ROUNDS times (3);
# the summary at the end has each figure's median for both, and their
# ratio.
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

load() { # name fanout-flags...: runs the load, keeps its output as $work/NAME.$log.$round
    name=$1
    shift
    build/bench/fanout --public "$public" --runner "$runner" --token t-admin \
        --runner-token t-runner-1 --session sess-1 --server-pid "$server_pid" "$@" |
        tee "$work/$name.$log.$round"
}

# figure NAME LOG FIELD: the median over the rounds of a figure of a load's
# output: rate (deliveries/s, or frames/s of an ingest into many sessions),
# cpu (us per delivery, or per frame), p99 (us).
figure() {
    for f in "$work/$1.$2".*; do
        case $3 in
        rate)
            if grep -q 'ingest:' "$f"; then
                sed -n 's/.*ingest: .* = \([0-9]*\) frames\/s.*/\1/p' "$f"
            else
                sed -n 's/.*deliveries: .* = \([0-9]*\) deliveries\/s.*/\1/p' "$f"
            fi
            ;;
        cpu)
            if grep -q 'CPU per frame' "$f"; then
                sed -n 's/.*CPU per frame: \([0-9.]*\) us.*/\1/p' "$f"
            else
                sed -n 's/.*CPU per delivery: \([0-9.]*\) us.*/\1/p' "$f"
            fi
            ;;
        p99) sed -n 's/.*p99 \([0-9]*\) us.*/\1/p' "$f" ;;
        esac
    done | sort -n | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}'
}

# row NAME LABEL: memory's and the disk's figures of one load, and their
# ratios (disk / memory: above 1 is faster for the rate, costlier for CPU).
row() {
    mr=$(figure "$1" memory rate) dr=$(figure "$1" disk rate)
    mc=$(figure "$1" memory cpu) dc=$(figure "$1" disk cpu)
    printf '%-34s %10s %10s %6s   %7s %7s %6s\n' "$2" "$mr" "$dr" \
        "$(echo "scale=2; $dr / $mr" | bc)" "$mc" "$dc" "$(echo "scale=2; $dc / $mc" | bc)"
}

logflags_of() { # memory|disk
    if [ "$1" = memory ]; then echo "--log memory"; else echo "--log-db $work/log.db"; fi
}

# Each load runs against memory, then at once against the disk, ROUNDS
# times (the machine's other work drifts: neighbours in time compare best).
big="--agent-log-bytes 536870912 --subscriber-buffer-bytes 268435456"
for round in $(seq "${ROUNDS:-3}"); do
    for log in memory disk; do
        echo "== round $round, --log $log: fan-out K=10/100/1000, then ingest with one subscriber"
        # shellcheck disable=SC2086
        start_agenthubd $(logflags_of $log) $big
        for k in 10 100 1000; do
            load "k$k" -k "$k" -n $((2000000 / k))
        done
        load ingest1 -k 1 -n 200000
        stop_server
    done
    for log in memory disk; do
        echo "== round $round, --log $log: ingest into 1,000 sessions, one subscriber on the first"
        # shellcheck disable=SC2086
        start_agenthubd $(logflags_of $log) --max-sessions-per-account 2000
        load ingest1000 -k 1 -n 200000 --spread 1000
        stop_server
    done
    for log in memory disk; do
        echo "== round $round, --log $log: latency at 1,000 frames/s into 100 subscribers"
        # shellcheck disable=SC2086
        start_agenthubd $(logflags_of $log)
        load latency -k 100 -n 5000 --rate 1000
        stop_server
    done
done

echo "== restart: about 1 GiB of one session's frames on disk, default memory bounds"
keep="--disk-log-bytes 2147483648 --disk-log-budget-bytes 4294967296 --subscriber-buffer-bytes 268435456"
# shellcheck disable=SC2086
start_agenthubd --log-db "$work/log.db" $keep
# Paced: at full speed the disk falls behind the producer and past 256 MiB
# pending the Runner is told UNAVAILABLE (the load tool does not resend).
log=disk round=0
load restart -k 1 -n "${RESTART_FRAMES:-5000000}" --size 200 --rate 60000 >/dev/null
kill -9 "$server_pid"
wait "$server_pid" 2>/dev/null || true
mib=$(ls -la "$work"/log.db* | awk '{s += $5} END {printf "%.0f", s / 1048576}')
echo "log files: $mib MiB"
started=$(date +%s.%N)
# shellcheck disable=SC2086
build/agenthubd --db "$work/db" --log-db "$work/log.db" --listen 127.0.0.1:0 \
    --runner-listen 127.0.0.1:0 $keep 2>"$work/server2.log" &
server_pid=$!
pids="$pids $server_pid"
while ! grep -q 'listening runner' "$work/server2.log"; do sleep 0.05; done
serving=$(echo "$(date +%s.%N) - $started" | bc)
echo "serving after $serving s"
grep 'read back' "$work/server2.log"
stop_server

echo
echo "== summary: medians of ${ROUNDS:-3} rounds, --log memory and the disk log (ratio disk / memory)"
printf '%-34s %10s %10s %6s   %7s %7s %6s\n' load "memory/s" "disk/s" ratio "mem us" "disk us" ratio
row k10 "fan-out K=10, deliveries"
row k100 "fan-out K=100, deliveries"
row k1000 "fan-out K=1000, deliveries"
row ingest1 "ingest into 1 session, frames"
row ingest1000 "ingest into 1,000 sessions, frames"
echo "1,000 frames/s x 100 subscribers: p99 publish-to-delivery memory $(figure latency memory p99) us, disk $(figure latency disk p99) us"
echo "restart with $mib MiB of log files: serving after $serving s"
