#!/bin/sh
# Usage: tests/agents/demo.sh BUILD_DIR [SECONDS]
#
# `make demo`: a temp db from deploy/demo-world.json, agenthubd, the reference
# Runner hosting sess-1 with tests/agents/scripted-agent, and a follower
# printing sess-1's pane for SECONDS (default 15).  Midway, alice sends two
# messages in quick succession: the pane shows the batch window arming (count
# 1, 2), firing (0) and the agent's reply.  Before that agenthubd restarts
# (SIGTERM, then the same flags) and the pane carries on.  Then everything
# is stopped with SIGTERM and the demo exits 0 when every program exited
# cleanly.
#
# The follower is `agenthub log --follow sess-1` when the CLI has `log`, else
# tests/agents/tail_session.py (python3-grpcio).
set -u
build=${1:-build}
seconds=${2:-15}
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/agenthub-demo.XXXXXX")
server_pid= runner_pid= follow_pid= send_pid=
status=0

say() { printf 'demo: %s\n' "$*"; }

stop_pid() { # stop_pid PID NAME: SIGTERM, wait, return its exit status
    [ -n "$1" ] || return 0
    kill -TERM "$1" 2>/dev/null
    wait "$1"
}

cleanup() {
    for p in $send_pid $follow_pid $runner_pid $server_pid; do
        kill -TERM "$p" 2>/dev/null
    done
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
    say "FAILED: $*"
    for log in server runner; do
        [ -s "$tmp/$log.log" ] && { echo "--- $log log (tail)"; tail -20 "$tmp/$log.log"; }
    done
    exit 1
}

"$build/agenthub" admin --db "$tmp/demo.db" import "$root/deploy/demo-world.json" >/dev/null \
    || fail "cannot provision $tmp/demo.db"
mkdir -p "$tmp/blobs"
start_server() { # start_server PUBLIC RUNNER: agenthubd on the demo's files
    : >"$tmp/server.log"
    "$build/agenthubd" --db "$tmp/demo.db" --listen "$1" --runner-listen "$2" \
        --blob-dir "$tmp/blobs" 2>"$tmp/server.log" &
    server_pid=$!
    public= runner_addr=
    i=0
    while [ $i -lt 100 ]; do
        public=$(sed -n 's/^agenthubd: listening public //p' "$tmp/server.log")
        runner_addr=$(sed -n 's/^agenthubd: listening runner //p' "$tmp/server.log")
        [ -n "$public" ] && [ -n "$runner_addr" ] && break
        kill -0 "$server_pid" 2>/dev/null || fail "agenthubd exited"
        sleep 0.1
        i=$((i + 1))
    done
    [ -n "$public" ] || fail "agenthubd did not listen"
}

start_server 127.0.0.1:0 127.0.0.1:0
say "agenthubd: public $public, runner door $runner_addr"

if "$build/agenthub" log --help >/dev/null 2>&1; then
    say "following sess-1 with: agenthub log --follow sess-1 (${seconds}s)"
    AGENTHUB_ADDR=$public AGENTHUB_TOKEN=t-alice "$build/agenthub" log --follow sess-1 &
else
    say "following sess-1 with: tests/agents/tail_session.py (agenthub log is not built yet; ${seconds}s)"
    /usr/bin/python3 "$root/tests/agents/tail_session.py" --addr "$public" --token t-alice sess-1 &
fi
follow_pid=$!
sleep 2 # the follower subscribes; the pane is a live tail

"$build/agenthub-runner" --addr "$runner_addr" --token t-runner-1 --session sess-1 \
    --agent "/usr/bin/python3 $root/tests/agents/scripted-agent --speed 1.5" \
    2>"$tmp/runner.log" &
runner_pid=$!
say "agenthub-runner hosts sess-1 with tests/agents/scripted-agent"

# Alice sends two messages in quick succession as the scripted turn ends (about
# 9 s in): the window arms, re-arms, fires 1.5 s later and the agent replies,
# leaving a few seconds of slack before the follower stops.
/usr/bin/python3 "$root/tests/agents/tail_session.py" --addr "$public" --token t-alice \
    --no-follow --send-after 8 --send "also update the changelog" \
    --send "and bump the version" sess-1 &
send_pid=$!

# A few seconds in, agenthubd restarts on the same files and addresses: the
# session log is on disk, so the Runner resumes where the server's log ends
# and the pane carries on with no gap and no repeat.
sleep 3
say "restarting agenthubd (SIGTERM, then the same flags): the pane carries on"
stop_pid "$server_pid" || fail "agenthubd exited with $? on SIGTERM"
start_server "$public" "$runner_addr"
say "agenthubd is back: public $public, runner door $runner_addr"

sleep $((seconds - 5))
kill -TERM "$follow_pid" 2>/dev/null
wait "$follow_pid" 2>/dev/null
follow_pid=
wait "$send_pid" || status=1
send_pid=
[ $status -eq 0 ] || fail "SendAgentMessage failed"

stop_pid "$runner_pid"
rc=$?
runner_pid=
[ $rc -eq 0 ] || fail "agenthub-runner exited with $rc"
stop_pid "$server_pid"
rc=$?
server_pid=
[ $rc -eq 0 ] || fail "agenthubd exited with $rc"
say "stopped the runner and the server cleanly"
exit 0
