#!/bin/sh
# Usage: deploy/cluster/demo.sh BUILD_DIR [SECONDS]
#
# `make cluster-demo`: three nats-servers forming one JetStream cluster on
# loopback ports, three agenthubd nodes (--cluster) on one store, the
# reference Runner hosting sess-1 (tests/agents/scripted-agent) through
# node 2, and `agenthub log --follow sess-1` on node 1 for SECONDS (default
# 15).  Midway node 2 is killed (SIGKILL): the Runner moves to node 3 and the
# pane goes on.  Everything runs in a temporary folder and is stopped at the
# end; the demo exits 0 when the pane showed frames after the kill.
#
# The store is one SQLite file all nodes share (the SQLite store re-checks
# what other processes wrote); a PostgreSQL store is the alternative for
# nodes on different hosts.
set -u
build=${1:-build}
seconds=${2:-15}
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/agenthub-cluster-demo.XXXXXX")
pids=
status=0

say() { printf 'cluster-demo: %s\n' "$*"; }

cleanup() {
    for p in $pids; do
        kill -TERM "$p" 2>/dev/null
    done
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
    say "FAILED: $*"
    for log in "$tmp"/*.log; do
        [ -s "$log" ] && { echo "--- $(basename "$log") (tail)"; tail -15 "$log"; }
    done
    exit 1
}

port() { # a free loopback port
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ] || fail "nats-server is not installed (make deps)"
nats=$(command -v nats-server || echo /usr/sbin/nats-server)

# --- three nats-servers, JetStream on, routed into one cluster
routes= urls=
for i in 1 2 3; do
    eval "client_$i=$(port) route_$i=$(port) http_$i=$(port)"
done
for i in 1 2 3; do
    eval "r=\$route_$i c=\$client_$i"
    routes="${routes:+$routes,}nats://127.0.0.1:$r"
    urls="${urls:+$urls,}nats://127.0.0.1:$c"
done
for i in 1 2 3; do
    eval "c=\$client_$i r=\$route_$i h=\$http_$i"
    mkdir -p "$tmp/nats-$i"
    "$nats" -js -sd "$tmp/nats-$i" -n "n$i" -a 127.0.0.1 -p "$c" -m "$h" \
        --cluster_name agenthub-demo --cluster "nats://127.0.0.1:$r" --routes "$routes" \
        -l "$tmp/nats-$i.log" &
    pids="$pids $!"
done
say "NATS JetStream cluster: $urls"

# --- three agenthubd nodes on one store
"$build/agenthub" admin --db "$tmp/demo.db" import "$root/deploy/demo-world.json" >/dev/null \
    || fail "cannot provision $tmp/demo.db"
for i in 1 2 3; do
    "$build/agenthubd" --db "$tmp/demo.db" --listen 127.0.0.1:0 --runner-listen 127.0.0.1:0 \
        --cluster "$urls" --node-id "node-$i" --cluster-replicas 3 2>"$tmp/node-$i.log" &
    eval "node_pid_$i=$!"
    pids="$pids $!"
done
for i in 1 2 3; do
    n=0
    while [ $n -lt 300 ]; do
        grep -q "caught up with JetStream" "$tmp/node-$i.log" && break
        eval "kill -0 \$node_pid_$i" 2>/dev/null || fail "node-$i exited"
        sleep 0.1
        n=$((n + 1))
    done
    grep -q "caught up with JetStream" "$tmp/node-$i.log" || fail "node-$i did not reach JetStream"
    eval "public_$i=\$(sed -n 's/^agenthubd: listening public //p' \"\$tmp/node-$i.log\")"
    eval "runner_$i=\$(sed -n 's/^agenthubd: listening runner //p' \"\$tmp/node-$i.log\")"
    eval "say \"node-$i: public \$public_$i, runner door \$runner_$i\""
done

# --- a pane on node 1 (then node 3), the Runner on node 2 (then node 3)
say "following sess-1 on node-1: agenthub log --follow sess-1 (${seconds}s)"
AGENTHUB_ADDR="$public_1,$public_3" AGENTHUB_TOKEN=t-alice \
    "$build/agenthub" log --follow sess-1 >"$tmp/pane.out" 2>"$tmp/pane.log" &
follow_pid=$!
pids="$pids $follow_pid"
sleep 1
"$build/agenthub-runner" --addr "$runner_2,$runner_3" --token t-runner-1 --session sess-1 \
    --agent "/usr/bin/python3 $root/tests/agents/scripted-agent --speed 1.5" \
    2>"$tmp/runner.log" &
runner_pid=$!
pids="$pids $runner_pid"
say "agenthub-runner hosts sess-1 through node-2"

half=$((seconds / 2))
sleep "$half"
before=$(wc -l <"$tmp/pane.out")
say "killing node-2 (SIGKILL) after $before pane lines"
kill -KILL "$node_pid_2"
sleep $((seconds - half))
after=$(wc -l <"$tmp/pane.out")
cat "$tmp/pane.out"
say "pane lines: $before before the kill, $after in all"
grep "enrolled as" "$tmp/runner.log" | sed 's/^/cluster-demo: /'
[ "$after" -gt "$before" ] || fail "the pane showed nothing after node-2 was killed"
say "OK"
