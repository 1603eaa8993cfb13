#!/bin/sh
# Fan-out benchmark: one Runner publishes 200-byte frames into one session,
# K subscribers tail it.  Measures agenthubd with the project's C load tool
# (build/bench/fanout) and compares server CPU per delivery with the stock
# gRPC C++ fan-out server from shared/bench/grpcpp-fanout, measured in the
# same run with its own load client.
set -eu
cd "$(dirname "$0")/.."
SHARED_DIR=${SHARED_DIR:-$(cd .. && pwd)/shared}
work=$(mktemp -d)
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

make -s -j2 all build/bench/fanout
ulimit -n 16384 2>/dev/null || true

start_agenthubd() { # extra flags...
    build/agenthub admin --db "$work/db" import deploy/demo-world.json >/dev/null
    build/agenthubd --db "$work/db" --listen 127.0.0.1:0 --runner-listen 127.0.0.1:0 "$@" \
        2>"$work/server.log" &
    server_pid=$!
    pids="$pids $server_pid"
    for _ in $(seq 50); do grep -q 'listening runner' "$work/server.log" && break; sleep 0.1; done
    public=$(sed -n 's/^agenthubd: listening public //p' "$work/server.log")
    runner=$(sed -n 's/^agenthubd: listening runner //p' "$work/server.log")
}

stop_server() {
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

echo "== agenthubd, throughput (buffers sized so no subscriber is dropped)"
start_agenthubd --agent-log-bytes 536870912 --subscriber-buffer-bytes 268435456
for k in 10 100 1000; do
    build/bench/fanout --public "$public" --runner "$runner" --token t-admin \
        --runner-token t-runner-1 --session sess-1 -k "$k" -n $((2000000 / k)) \
        --server-pid "$server_pid" | tee "$work/ours-$k.txt"
done
stop_server

echo "== gRPC-Web over HTTP/1.1 next to native gRPC, K=100, same server"
# gRPC-Web subscribers need a connection each (HTTP/1.1 carries one call at a
# time); native ones share HTTP/2 connections (90 streams each) unless
# --streams-per-connection 1 gives them one each too.
start_agenthubd --agent-log-bytes 536870912 --subscriber-buffer-bytes 268435456
for mode in native web native1; do
    case $mode in
    native) flags="" ;;
    web) flags="--web" ;;
    native1) flags="--streams-per-connection 1" ;;
    esac
    # shellcheck disable=SC2086
    build/bench/fanout --public "$public" --runner "$runner" --token t-admin \
        --runner-token t-runner-1 --session sess-1 -k 100 -n 20000 \
        --server-pid "$server_pid" $flags | tee "$work/web-$mode.txt"
done
stop_server
cpu_of() { sed -n 's/.*server CPU per delivery: \([0-9.]*\) us/\1/p' "$work/web-$1.txt"; }
rate_of() { sed -n 's/.* = \([0-9]*\) deliveries\/s/\1/p' "$work/web-$1.txt"; }
echo "K=100 gRPC-Web/HTTP1.1: $(rate_of web) deliveries/s, $(cpu_of web) us server CPU per delivery"
echo "K=100 native gRPC/h2:   $(rate_of native) deliveries/s, $(cpu_of native) us (90 streams per connection);" \
    "$(rate_of native1) deliveries/s, $(cpu_of native1) us (a connection each)"
echo "K=100 gRPC-Web CPU per delivery / native: $(awk -v a="$(cpu_of web)" -v b="$(cpu_of native)" \
    'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "n/a" }') (shared connections)," \
    "$(awk -v a="$(cpu_of web)" -v b="$(cpu_of native1)" \
    'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "n/a" }') (a connection each; target 1.5x)"

echo "== agenthubd, latency at 1,000 frames/s into 100 subscribers (default flags)"
start_agenthubd
build/bench/fanout --public "$public" --runner "$runner" --token t-admin \
    --runner-token t-runner-1 --session sess-1 -k 100 -n 5000 --rate 1000 \
    --server-pid "$server_pid"
stop_server

echo "== agenthubd, 10,000 idle subscribers"
start_agenthubd
build/bench/fanout --public "$public" --token t-admin --session sess-1 -k 10000 --idle \
    --server-pid "$server_pid"
stop_server

echo "== reference: stock gRPC C++ fan-out server (shared/bench/grpcpp-fanout)"
if ! "$SHARED_DIR/bench/grpcpp-fanout/build.sh" "$work/ref" >"$work/ref-build.log" 2>&1; then
    echo "reference build failed (needs libgrpc++-dev protobuf-compiler-grpc g++); see below"
    tail -5 "$work/ref-build.log"
    exit 0
fi
for k in 10 100; do
    "$work/ref/fanout_server" 127.0.0.1:50081 >"$work/ref-server.log" 2>&1 &
    ref_pid=$!
    pids="$pids $ref_pid"
    sleep 0.5
    n=$((200000 / k))
    before=$(cpu_ticks "$ref_pid")
    "$work/ref/fanout_client" 127.0.0.1:50081 127.0.0.1:50081 "$k" "$n" 200 | tee "$work/ref-$k.txt"
    after=$(cpu_ticks "$ref_pid")
    kill "$ref_pid" 2>/dev/null || true
    wait "$ref_pid" 2>/dev/null || true
    ref_us=$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" -v d=$((k * n)) \
        'BEGIN { printf "%.2f", t / hz * 1e6 / d }')
    ours_us=$(sed -n 's/.*server CPU per delivery: \([0-9.]*\) us/\1/p' "$work/ours-$k.txt")
    echo "K=$k server CPU per delivery: agenthubd $ours_us us, reference $ref_us us," \
        "ratio $(awk -v a="$ours_us" -v b="$ref_us" 'BEGIN { if (a > 0) printf "%.1fx less", b / a; else print "n/a" }')"
done

echo "== the same gRPC C++ load client against both servers (deliveries/s)"
start_agenthubd --agent-log-bytes 536870912 --subscriber-buffer-bytes 268435456
"$work/ref/fanout_server" 127.0.0.1:50081 >"$work/ref-server.log" 2>&1 &
ref_pid=$!
pids="$pids $ref_pid"
sleep 0.5
for k in 10 100; do
    n=$((200000 / k))
    ref_rate=$("$work/ref/fanout_client" 127.0.0.1:50081 127.0.0.1:50081 "$k" "$n" 200 |
        sed -n 's/.* = \([0-9]*\) deliveries\/s.*/\1/p')
    ours_rate=$("$work/ref/fanout_client" "$public" "$runner" "$k" "$n" 200 0 t-admin t-runner-1 \
        sess-1 | sed -n 's/.* = \([0-9]*\) deliveries\/s.*/\1/p')
    echo "K=$k deliveries/s with the reference client: agenthubd $ours_rate, reference $ref_rate," \
        "ratio $(awk -v a="$ours_rate" -v b="$ref_rate" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "n/a" }')"
done
stop_server
