#!/bin/sh
# Per-node NATS ingress of a cluster: three NATS JetStream servers (3
# replicas) on loopback ports, then, for NODES in NODE_COUNTS ("3 5"),
# NODES agenthubd nodes (--cluster) sharing SESSIONS (300) sessions: each
# node gets SESSIONS/NODES of them and one Runner (build/bench/fanout
# --spread) writes them through that node, RATE/NODES frames/s of SIZE-byte
# frames for DURATION seconds, so the cluster writes RATE (3,000) frames/s
# whatever NODES is (SESSIONS and RATE are divided evenly; a remainder is
# left out).  Each Runner's tool holds one subscriber, on the first of its
# node's sessions, through the same node; it stops once that subscriber has
# all of its session's frames, so up to SESSIONS/NODES - 1 frames of the
# last round-robin pass are not sent: the figures count the frames sent.
#
# What a node received from NATS is read from the servers' monitoring
# endpoints: /connz lists every client connection with its name (a node
# names both of its connections with its --node-id) and out_bytes (server
# to client); the sums over the three servers per node, after the load
# minus before, are the node's ingress.  /jsz gives the growth of the
# frames stream (AGENTHUB_FRAMES) and of the bus stream (AGENTHUB_BUS) over
# the same window: what the cluster wrote, and which part of a node's
# ingress is frames and which is the bus.  out_bytes counts messages'
# headers and bodies, not the protocol lines (each delivery's HMSG line
# with its $JS.ACK reply subject); the "wire" figures add those: the bytes
# the kernel received on each node's NATS sockets (ss -ti, bytes_received).
# Each NODES count runs on NATS servers and a store of their own, started
# fresh, so the larger cluster does not replay the smaller one's streams
# and the streams' growth is that count's alone.
#
# Each NODES count runs once for each mode of READ_MODES ("all on-demand",
# the nodes' --cluster-read).  A node reading every session receives about
# the frames stream plus the bus stream, whatever NODES is (the summary
# prints that baseline next to the figures); a node reading sessions on
# demand receives its own sessions' frames (and its subscriber's), every
# Runner's subject and the whole bus, and the summary sets each count's
# on-demand figure against its all figure measured in the same run.
#
# KEEP=1 leaves the temporary directory (logs, the /connz and /jsz
# snapshots) in place and prints its name.
#
#   NODE_COUNTS="3 5" READ_MODES="all on-demand" SESSIONS=300 RATE=3000 SIZE=200 DURATION=20 \
#   bench/cluster_ingress.sh
set -eu
cd "$(dirname "$0")/.."
NODE_COUNTS=${NODE_COUNTS:-3 5}
READ_MODES=${READ_MODES:-all on-demand}
SESSIONS=${SESSIONS:-300}
RATE=${RATE:-3000}
SIZE=${SIZE:-200}
DURATION=${DURATION:-20}
AGENTHUBD=${AGENTHUBD:-build/agenthubd}
work=$(mktemp -d)
pids=""
round_pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT INT TERM

make -s -j2 all build/bench/fanout
# shellcheck disable=SC3045 # not POSIX, but dash and bash have it
ulimit -n 16384 2>/dev/null || true
nats=$(command -v nats-server || echo /usr/sbin/nats-server)
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# snap OUT MPORT:CPORT...: every client connection's counters on the
# servers (monitoring port MPORT, client port CPORT), with the bytes the
# kernel received on the client's end of each (ss's bytes_received: the
# wire, protocol lines included), and the streams' state, as JSON in OUT;
# prints the sum of out_bytes over the nodes' connections (the settling
# loop below watches it).
cat >"$work/snap.py" <<'PY'
import json, re, subprocess, sys, urllib.request
out, servers = sys.argv[1], [a.split(":") for a in sys.argv[2:]]
wire = {}
ss = subprocess.run(["ss", "-tinH", "state", "established"], capture_output=True, text=True).stdout
sock = None
for line in ss.splitlines():
    f = line.split()
    if len(f) >= 4 and not line[0].isspace():
        sock = (f[2].rsplit(":", 1)[1], f[3].rsplit(":", 1)[1])  # local port, peer port
    elif sock:
        m = re.search(r"bytes_received:(\d+)", line)
        wire[sock] = int(m.group(1)) if m else 0
conns, streams = {}, {}
for mport, cport in servers:
    base = "http://127.0.0.1:%s" % mport
    for c in json.load(urllib.request.urlopen(base + "/connz?limit=4096")).get("connections") or []:
        v = {k: c.get(k, 0) for k in ("name", "out_bytes", "in_bytes", "out_msgs", "in_msgs")}
        v["wire_in"] = wire.get((str(c.get("port")), cport), 0)
        conns["%s:%d" % (mport, c["cid"])] = v
    jsz = json.load(urllib.request.urlopen(base + "/jsz?accounts=true&streams=true"))
    for acc in jsz.get("account_details") or []:
        for s in acc.get("stream_detail") or []:
            st = s.get("state", {})
            old = streams.get(s["name"])
            # The replica that has applied the most speaks for the stream.
            if old is None or st.get("last_seq", 0) > old["last_seq"]:
                streams[s["name"]] = {k: st.get(k, 0) for k in ("bytes", "messages", "last_seq")}
json.dump({"conns": conns, "streams": streams}, open(out, "w"))
print(sum(c["out_bytes"] for c in conns.values() if c["name"].startswith("node-")))
PY

# report NODES FRAMES SECONDS BEFORE AFTER ROWS READ: one line per node, and
# the round's figures appended to ROWS (a JSON object a line).
cat >"$work/report.py" <<'PY'
import json, sys
nodes, frames, seconds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
read = sys.argv[7]
before, after = json.load(open(sys.argv[4])), json.load(open(sys.argv[5]))
MiB = 1048576.0
keys = ("out_bytes", "in_bytes", "out_msgs", "in_msgs", "wire_in")
per = {"node-%d" % i: dict({k: 0 for k in keys}, conns=0) for i in range(1, nodes + 1)}
for cid, c in after["conns"].items():
    if c["name"] not in per:
        continue
    b = before["conns"].get(cid)
    if b is not None and b["name"] != c["name"]:
        b = None
    for k in keys:
        per[c["name"]][k] += c[k] - (b[k] if b else 0)
    per[c["name"]]["conns"] += 1
lost = sum(1 for cid, c in before["conns"].items() if c["name"] in per and cid not in after["conns"])
def grew(name, k):
    return after["streams"].get(name, {}).get(k, 0) - before["streams"].get(name, {}).get(k, 0)
fb, fm = grew("AGENTHUB_FRAMES", "bytes"), grew("AGENTHUB_FRAMES", "messages")
bb, bm = grew("AGENTHUB_BUS", "bytes"), grew("AGENTHUB_BUS", "messages")
fr = max(frames, 1)
print("  frames written: %d in a window of %d s (the Runners' start and the consumers' last deliveries"
      " included)" % (frames, seconds))
print("  AGENTHUB_FRAMES grew %6.1f MiB, %6d messages, %4.0f bytes per frame written" % (fb / MiB, fm, fb / fr))
print("  AGENTHUB_BUS    grew %6.1f MiB, %6d messages, %4.0f bytes per frame written" % (bb / MiB, bm, bb / fr))
print("  %-7s %5s %12s %8s %8s %8s %9s %9s %11s" % ("node", "conns", "ingress MiB", "msgs", "B/frame",
      "/frames", "wire MiB", "wire B/f", "egress MiB"))
for name, v in per.items():
    print("  %-7s %5d %12.1f %8d %8.0f %7.2fx %9.1f %9.0f %11.1f" % (
        name, v["conns"], v["out_bytes"] / MiB, v["out_msgs"], v["out_bytes"] / fr,
        v["out_bytes"] / max(fb, 1), v["wire_in"] / MiB, v["wire_in"] / fr, v["in_bytes"] / MiB))
if lost:
    print("  warning: %d node connection(s) closed during the window: their bytes are missing" % lost)
ing = [v["out_bytes"] for v in per.values()]
wire = [v["wire_in"] for v in per.values()]
with open(sys.argv[6], "a") as f:
    f.write(json.dumps({"nodes": nodes, "read": read, "frames": frames, "fb": fb, "fm": fm, "bb": bb, "bm": bm,
                        "ing": ing, "wire": wire}) + "\n")
PY

# summary ROWS SIZE SESSIONS: the table over the NODES counts, and the
# baseline: what a node receives when it consumes everything.
cat >"$work/summary.py" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
size, sessions = int(sys.argv[2]), int(sys.argv[3])
MiB = 1048576.0
print("%5s %-9s %7s %10s %8s  %-17s %-15s %-13s %-17s" % ("nodes", "read", "frames", "frames MiB",
      "bus MiB", "ingress MiB", "B/frame", "/frames", "wire B/frame"))
for r in rows:
    fr, fb = max(r["frames"], 1), max(r["fb"], 1)
    lo, hi = min(r["ing"]), max(r["ing"])
    print("%5d %-9s %7d %10.1f %8.1f  %7.1f - %-7.1f %5.0f - %-7.0f %4.2f - %-6.2f %5.0f - %-5.0f" % (
        r["nodes"], r.get("read", "all"), r["frames"], r["fb"] / MiB, r["bb"] / MiB, lo / MiB,
        hi / MiB, lo / fr, hi / fr, lo / fb, hi / fb, min(r["wire"]) / fr, max(r["wire"]) / fr))
print()
def per_frame(r):
    return sum(r["ing"]) / len(r["ing"]) / max(r["frames"], 1)
for r in rows:
    if r.get("read") != "on-demand":
        continue
    base = [b for b in rows if b["nodes"] == r["nodes"] and b.get("read", "all") == "all"]
    if base:
        print("%d nodes: a node reading sessions on demand receives %.0f B/frame against %.0f reading"
              " everything: %.2fx (wire %.2fx)" % (
              r["nodes"], per_frame(r), per_frame(base[0]), per_frame(r) / per_frame(base[0]),
              (sum(r["wire"]) / max(r["frames"], 1)) / max(sum(base[0]["wire"]) / max(base[0]["frames"], 1), 1)))
print()
rows = [r for r in rows if r.get("read", "all") == "all"]
# A stored message counts a record header (34 bytes with headers) and its
# subject besides what a delivery's out_bytes counts (headers and body); a
# node also receives the acknowledgement of each message it published
# (about 40 bytes of JSON; it publishes 1/NODES of them).
def subject_len(nodes):
    per = sessions // nodes
    names = ["ing-%d" % i if j == 1 else "ing-%d-%d" % (i, j)
             for i in range(1, nodes + 1) for j in range(1, per + 1)]
    return len("agenthub.frames.") + sum(map(len, names)) / len(names)
print('"every node consumes everything" (today) baseline: a node receives the whole frames stream and')
print("the whole bus stream, and the acknowledgements of its own publishes, whatever NODES is:")
for r in rows:
    n, fr = r["nodes"], max(r["frames"], 1)
    frames = r["fb"] - r["fm"] * (34 + subject_len(n))
    bus = r["bb"] - r["bm"] * (34 + len("agenthub.bus"))
    acks = (r["fm"] + r["bm"]) / n * 40
    mean = sum(r["ing"]) / len(r["ing"])
    print("  %d nodes: expected %.1f MiB per node (frames %.1f + bus %.1f + acks %.1f) = %.0f B/frame;"
          " measured %.1f MiB = %.0f B/frame (%.2fx); the bus is %.0f%% of it" % (
          n, (frames + bus + acks) / MiB, frames / MiB, bus / MiB, acks / MiB,
          (frames + bus + acks) / fr, mean / MiB, mean / fr, mean / (frames + bus + acks),
          100 * bus / (frames + bus + acks)))
if len(rows) > 1:
    a, b = rows[0], rows[-1]
    ra = sum(a["ing"]) / len(a["ing"]) / max(a["frames"], 1)
    rb = sum(b["ing"]) / len(b["ing"]) / max(b["frames"], 1)
    print("  per-node ingress per frame, %d nodes against %d: %.2fx (1.00x: every node takes it all;"
          " 1/NODES of the frames would give less at more nodes)" % (b["nodes"], a["nodes"], rb / ra))
for r in rows:
    f, bus = r["fb"], r["bb"]
    print("  a node taking only its own sessions' frames, the bus still whole, would get about %.2fx of"
          " this at %d nodes" % ((f / r["nodes"] + bus) / max(f + bus, 1), r["nodes"]))
print("(%d-byte frames; B/frame: a node's ingress over the frames written cluster-wide; /frames: over"
      " the frames stream's growth; ingress: connz out_bytes, headers and bodies; wire: TCP bytes"
      " the node's NATS sockets received, protocol lines included)" % size)
PY

# Set through eval below.
c='' public='' runner=''
. bench/nats_cluster.sh

# stop_round: the nodes first, newest first, then the NATS servers (a node
# that loses NATS while it drains only logs it).
stop_round() {
    reversed=""
    for p in $round_pids; do reversed="$p $reversed"; done
    for p in $reversed; do
        kill "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    round_pids=""
}

: >"$work/rows.json"
for NODES in $NODE_COUNTS; do
for READ in $READ_MODES; do
    round_dir="$work/nodes-$NODES-$READ"
    mkdir -p "$round_dir"
    per_node=$((SESSIONS / NODES))
    rate_node=$((RATE / NODES))
    frames_node=$((rate_node * DURATION))
    echo "== $NODES nodes reading $READ: $((per_node * NODES)) sessions ($per_node per node), $((rate_node * NODES)) frames/s of $SIZE bytes for $DURATION s ($rate_node/s through each node), one subscriber per node"
    # The demo world plus, for node I, a Runner (t-bench-runner-I), its
    # container and its sessions ing-I, ing-I-2 .. ing-I-PER_NODE, the
    # names fanout --session ing-I --spread PER_NODE writes.
    python3 - "$round_dir/world.json" "$NODES" "$per_node" <<'PY'
import json, sys
w = json.load(open("deploy/demo-world.json"))
nodes, per = int(sys.argv[2]), int(sys.argv[3])
for i in range(1, nodes + 1):
    w["runners"].append({"id": "bench-runner-%d" % i, "tokens": ["t-bench-runner-%d" % i]})
    w["containers"].append({"name": "bench-ctr-%d" % i, "agent_account": "agent-1",
                            "runner": "bench-runner-%d" % i})
    w["sessions"] += [{"id": "ing-%d" % i if j == 1 else "ing-%d-%d" % (i, j),
                       "container": "bench-ctr-%d" % i, "owner": "alice"}
                      for j in range(1, per + 1)]
json.dump(w, open(sys.argv[1], "w"))
PY
    build/agenthub admin --db "$round_dir/db" import "$round_dir/world.json" >/dev/null
    nats_cluster_start "$round_dir" || exit 1
    round_pids="$round_pids $nats_pids"
    # Node I connects to server (I-1) mod 3 + 1 first; the bus stream is
    # made big enough to hold the window's events (its default, 16 MiB,
    # would drop the oldest and hide part of the growth).
    for i in $(seq "$NODES"); do
        eval "c=\$c$(((i - 1) % 3 + 1))"
        "$AGENTHUBD" --db "$round_dir/db" --listen 127.0.0.1:0 --runner-listen 127.0.0.1:0 \
            --cluster "nats://127.0.0.1:$c" --node-id "node-$i" --cluster-replicas 3 \
            --cluster-read "$READ" \
            --max-sessions-per-account $((SESSIONS + 64)) --bus-bytes 268435456 \
            --subscriber-buffer-bytes 268435456 2>"$round_dir/node-$i.log" &
        pids="$pids $!"
        round_pids="$round_pids $!"
    done
    for i in $(seq "$NODES"); do
        for _ in $(seq 300); do grep -q 'caught up with JetStream' "$round_dir/node-$i.log" && break; sleep 0.1; done
        grep -q 'caught up with JetStream' "$round_dir/node-$i.log" || { cat "$round_dir/node-$i.log"; exit 1; }
        eval "public_$i=\$(sed -n 's/^agenthubd: listening public //p' \"\$round_dir/node-$i.log\")"
        eval "runner_$i=\$(sed -n 's/^agenthubd: listening runner //p' \"\$round_dir/node-$i.log\")"
    done
    sleep 1
    /usr/bin/python3 "$work/snap.py" "$round_dir/before.json" "$h1:$c1" "$h2:$c2" "$h3:$c3" >/dev/null
    started=$(date +%s)
    load_pids=""
    for i in $(seq "$NODES"); do
        eval "public=\$public_$i runner=\$runner_$i"
        build/bench/fanout --public "$public" --runner "$runner" --token t-admin \
            --runner-token "t-bench-runner-$i" --session "ing-$i" --spread "$per_node" \
            -k 1 -n "$frames_node" --size "$SIZE" --rate "$rate_node" >"$round_dir/load-$i.txt" 2>&1 &
        load_pids="$load_pids $!"
    done
    for p in $load_pids; do wait "$p" || { echo "a load failed:"; cat "$round_dir"/load-*.txt; exit 1; }; done
    # Until every node's consumers have what the servers hold: the nodes'
    # ingress grows by less than 64 KiB a second (heartbeats and pings).
    last=$(/usr/bin/python3 "$work/snap.py" "$round_dir/after.json" "$h1:$c1" "$h2:$c2" "$h3:$c3")
    for _ in $(seq 30); do
        sleep 1
        now=$(/usr/bin/python3 "$work/snap.py" "$round_dir/after.json" "$h1:$c1" "$h2:$c2" "$h3:$c3")
        [ $((now - last)) -lt 65536 ] && break
        last=$now
    done
    window=$(($(date +%s) - started))
    frames=0
    for i in $(seq "$NODES"); do
        n=$(sed -n 's/.*ingest: \([0-9]*\) frames into.*/\1/p' "$round_dir/load-$i.txt")
        frames=$((frames + ${n:-0}))
        if grep -q 'dropped\|ended\|refused' "$round_dir/load-$i.txt"; then
            sed "s/^/  node-$i load: /" "$round_dir/load-$i.txt"
        fi
    done
    /usr/bin/python3 "$work/report.py" "$NODES" "$frames" "$window" "$round_dir/before.json" \
        "$round_dir/after.json" "$work/rows.json" "$READ"
    stop_round
done
done

echo
echo "== summary: per-node NATS ingress while the cluster writes $RATE frames/s of $SIZE bytes into $SESSIONS sessions for $DURATION s"
/usr/bin/python3 "$work/summary.py" "$work/rows.json" "$SIZE" "$SESSIONS"
