#!/bin/sh
# Cluster fan-out benchmark: three NATS JetStream servers (3 replicas) and
# three agenthubd nodes (--cluster) on loopback ports; one Runner publishes
# 200-byte frames into one session through node B while K=100 subscribers
# tail it, split over nodes A and C (build/bench/fanout).  The reference,
# measured in the same run on the same NATS cluster: raw JetStream fan-out
# with libnats (build/bench/js_fanout), one publisher connected to server B,
# 100 ordered consumers split over servers A and C, on a stream configured
# as AGENTHUB_FRAMES.  Prints deliveries/s at full speed and p50/p99
# publish-to-delivery at 1,000 frames/s for both, and the ratios: the paced
# runs go ROUNDS times (default 3), alternating, and the summary gives each
# round and the medians.
#
# READ=on-demand, the default as in agenthubd, runs the nodes with
# --cluster-read on-demand (each reads only the sessions it has a reader or
# writer for); READ=all has every node read every session.
#
# SYNC=always starts the NATS servers with `sync_interval: always` (fsync
# before each acknowledgement; nats-server 2.10 or later), to measure what
# that durability costs against the default in another run.
#
#   K=100 FRAMES=10000 PACED=5000 ROUNDS=3 SYNC=default READ=on-demand AGENTHUBD=build/agenthubd \
#   bench/cluster.sh
set -eu
cd "$(dirname "$0")/.."
K=${K:-100}
FRAMES=${FRAMES:-10000}
PACED=${PACED:-5000}
ROUNDS=${ROUNDS:-3}
SYNC=${SYNC:-default}
READ=${READ:-on-demand}
AGENTHUBD=${AGENTHUBD:-build/agenthubd}
work=$(mktemp -d)
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

make -s -j2 all build/bench/fanout build/bench/js_fanout
ulimit -n 16384 2>/dev/null || true
nats=$(command -v nats-server || echo /usr/sbin/nats-server)
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Set through eval below: each node's NATS URL and addresses.
url='' public_a='' public_c='' runner_b=''
. bench/nats_cluster.sh
conf=
if [ "$SYNC" = always ]; then
    printf 'jetstream { sync_interval: always }\n' >"$work/nats.conf"
    conf="$work/nats.conf"
fi
nats_cluster_start "$work" "$conf" || exit 1
nats_a="nats://127.0.0.1:$c1" nats_b="nats://127.0.0.1:$c2" nats_c="nats://127.0.0.1:$c3"

build/agenthub admin --db "$work/db" import deploy/demo-world.json >/dev/null
# Node A and C take the subscribers, node B the Runner; each node connects
# to "its" NATS server first.
i=0
for node in a b c; do
    i=$((i + 1))
    eval "url=\$nats_$node"
    "$AGENTHUBD" --db "$work/db" --listen 127.0.0.1:0 --runner-listen 127.0.0.1:0 \
        --cluster "$url" --node-id "node-$node" --cluster-replicas 3 --cluster-read "$READ" \
        --agent-log-bytes 536870912 --subscriber-buffer-bytes 268435456 \
        2>"$work/node-$node.log" &
    eval "pid_$node=$!"
    pids="$pids $!"
done
for node in a b c; do
    for _ in $(seq 300); do grep -q 'caught up with JetStream' "$work/node-$node.log" && break; sleep 0.1; done
    grep -q 'caught up with JetStream' "$work/node-$node.log" || { cat "$work/node-$node.log"; exit 1; }
    eval "public_$node=\$(sed -n 's/^agenthubd: listening public //p' \"\$work/node-$node.log\")"
    eval "runner_$node=\$(sed -n 's/^agenthubd: listening runner //p' \"\$work/node-$node.log\")"
done

echo "== agenthub cluster: Runner on node B, $K subscribers over nodes A and C, full speed"
build/bench/fanout --public "$public_a,$public_c" --runner "$runner_b" --token t-admin \
    --runner-token t-runner-1 --session sess-1 -k "$K" -n "$FRAMES" | tee "$work/ours.txt"
echo "== raw JetStream: publisher on server B, $K ordered consumers over servers A and C, full speed"
build/bench/js_fanout --pub "$nats_b" --sub "$nats_a,$nats_c" -k "$K" -n "$FRAMES" --replicas 3 \
    | tee "$work/raw.txt"

# The paced runs alternate, agenthub then raw JetStream, ROUNDS times: on a
# shared machine one run's tail says little, the median of several
# interleaved in the same minutes says more.
p50() { sed -n 's/.*p50 \([0-9]*\) us.*/\1/p' "$1"; }
p99() { sed -n 's/.*p99 \([0-9]*\) us/\1/p' "$1"; }
for r in $(seq "$ROUNDS"); do
    echo "== round $r of $ROUNDS: agenthub cluster, 1,000 frames/s"
    build/bench/fanout --public "$public_a,$public_c" --runner "$runner_b" --token t-admin \
        --runner-token t-runner-1 --session sess-1 -k "$K" -n "$PACED" --rate 1000 \
        | tee "$work/ours-paced-$r.txt"
    echo "== round $r of $ROUNDS: raw JetStream, 1,000 frames/s"
    build/bench/js_fanout --pub "$nats_b" --sub "$nats_a,$nats_c" -k "$K" -n "$PACED" \
        --rate 1000 --replicas 3 | tee "$work/raw-paced-$r.txt"
    printf '%s %s %s %s\n' "$(p50 "$work/ours-paced-$r.txt")" "$(p99 "$work/ours-paced-$r.txt")" \
        "$(p50 "$work/raw-paced-$r.txt")" "$(p99 "$work/raw-paced-$r.txt")" >>"$work/rounds.txt"
done

rate() { sed -n 's/.*= \([0-9]*\) deliveries\/s/\1/p' "$1"; }
ours=$(rate "$work/ours.txt") raw=$(rate "$work/raw.txt")
echo "== summary"
awk -v o="$ours" -v r="$raw" -v n="$ROUNDS" '
function median(a, k,    i, j, t) {
    for (i = 2; i <= k; i++)
        for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
{
    op50[NR] = $1; op99[NR] = $2; rp50[NR] = $3; rp99[NR] = $4
    printf "round %d: agenthub p50 %d us, p99 %d us; raw JetStream p50 %d us, p99 %d us\n", NR, $1, $2, $3, $4
}
END {
    a50 = median(op50, NR); a99 = median(op99, NR); b50 = median(rp50, NR); b99 = median(rp99, NR)
    printf "deliveries/s: agenthub %d, raw JetStream %d, ratio %.2fx (target >= 0.8x)\n", o, r, r ? o / r : 0
    printf "p99 at 1,000 frames/s: agenthub %d us, raw JetStream %d us, ratio %.2fx (target < 10000 us; median of %d rounds)\n", a99, b99, b99 ? a99 / b99 : 0, n
    printf "p50 at 1,000 frames/s: agenthub %d us, raw JetStream %d us, ratio %.2fx (median of %d rounds)\n", a50, b50, b50 ? a50 / b50 : 0, n
}' "$work/rounds.txt"
