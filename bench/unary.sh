#!/bin/sh
# bench/unary.sh: unary throughput and latency of grpc.health.v1.Health/Check,
# agenthubd against the stock gRPC C++ reference server
# ($SHARED_DIR/bench/grpcpp), under the same h2load load in the same run.
# A third row is agenthubd answering the same Check over the Connect protocol
# with JSON (application/json, body "{}"), next to its own gRPC row: the
# JSON codec's cost per request (target: at most 2x gRPC's server CPU).
#
#   bench/unary.sh              # h2load -n 200000 -c 8 -m 32 -t 1, 3 rounds
#   N=50000 C=4 M=16 ROUNDS=1 bench/unary.sh
#   PIN=1 bench/unary.sh        # each server on CPU 0, h2load on CPU 1
#
# Both servers are first checked with a real gRPC client (python3-grpcio):
# h2load counts any HTTP 2xx as a success and never reads grpc-status.
# Afterwards agenthubd's own /metrics must count every request as an OK Check.
# Prints req/s, p99 (from h2load's per-request log) and the server's CPU time
# per request (from /proc/PID/stat, which a busy shared machine distorts far
# less than req/s) for each, and the ratios.
# The servers take turns for ROUNDS rounds; the summary is the median round,
# which keeps a noisy shared machine from deciding the result.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
SHARED_DIR=${SHARED_DIR:-$(dirname "$repo")/shared}
N=${N:-200000}
C=${C:-8}
M=${M:-32}
T=${T:-1}
ROUNDS=${ROUNDS:-3}
PIN=${PIN:-0} # PIN=1: servers on CPU 0, h2load on CPU 1 (one core each, less noise)
PY=/usr/bin/python3

die() { echo "unary.sh: $*" >&2; exit 1; }

[ -x "$SHARED_DIR/bench/grpcpp/build.sh" ] ||
    die "no reference server at $SHARED_DIR/bench/grpcpp (set SHARED_DIR)"

# --- Dependencies -----------------------------------------------------------
missing=""
pkg-config --exists grpc++ 2>/dev/null || missing="$missing libgrpc++-dev"
command -v grpc_cpp_plugin >/dev/null || missing="$missing protobuf-compiler-grpc"
command -v protoc >/dev/null || missing="$missing protobuf-compiler"
command -v g++ >/dev/null || missing="$missing g++"
command -v h2load >/dev/null || missing="$missing nghttp2-client"
$PY -c 'import grpc' 2>/dev/null || missing="$missing python3-grpcio"
if [ -n "$missing" ]; then
    echo "unary.sh: installing$missing"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y $missing >/dev/null ||
        { $sudo apt-get update >/dev/null &&
          $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y $missing >/dev/null; } ||
        die "cannot install$missing"
fi

# --- Builds -----------------------------------------------------------------
(cd "$repo" && make -s build/agenthubd) || die "make failed"
ref_dir=$repo/build/bench-reference
ref=$ref_dir/reference_server
if [ ! -x "$ref" ] || [ "$SHARED_DIR/bench/grpcpp/reference_server.cc" -nt "$ref" ]; then
    echo "unary.sh: building the reference server (takes a minute)"
    "$SHARED_DIR/bench/grpcpp/build.sh" "$ref_dir" >/dev/null || die "reference build failed"
fi

# --- Servers ----------------------------------------------------------------
work=$(mktemp -d)
agenthubd_pid=""
ref_pid=""
cleanup() {
    for pid in $agenthubd_pid $ref_pid; do
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    $PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

server_cpu=""
load_cpu=""
if [ "$PIN" = 1 ]; then
    command -v taskset >/dev/null || die "PIN=1 needs taskset (util-linux)"
    server_cpu="taskset -c 0"
    load_cpu="taskset -c 1"
fi

$server_cpu "$repo/build/agenthubd" --db "$work/db" --listen 127.0.0.1:0 \
    --metrics-listen 127.0.0.1:0 2>"$work/agenthubd.err" &
agenthubd_pid=$!
ref_addr=127.0.0.1:$(free_port)
$server_cpu "$ref" "$ref_addr" 2>"$work/reference.err" &
ref_pid=$!

i=0
while :; do
    ah_addr=$(sed -n 's/^agenthubd: listening public //p' "$work/agenthubd.err")
    metrics_addr=$(sed -n 's/^agenthubd: listening metrics //p' "$work/agenthubd.err")
    grep -q 'listening on' "$work/reference.err" 2>/dev/null && ref_up=1 || ref_up=0
    [ -n "$ah_addr" ] && [ -n "$metrics_addr" ] && [ "$ref_up" = 1 ] && break
    i=$((i + 1))
    [ $i -lt 200 ] || die "servers did not start: $(cat "$work/agenthubd.err" "$work/reference.err")"
    sleep 0.05
done

# A real client first: both must answer Check with SERVING and status OK.
for addr in "$ah_addr" "$ref_addr"; do
    $PY - "$addr" <<'EOF' || die "Health/Check against $addr did not answer SERVING"
import sys, grpc
with grpc.insecure_channel(sys.argv[1]) as channel:
    check = channel.unary_unary("/grpc.health.v1.Health/Check")
    reply = check(b"", timeout=10)  # HealthCheckRequest{service: ""}
    assert reply == b"\x08\x01", reply  # HealthCheckResponse{status: SERVING}
EOF
done
echo "unary.sh: both servers answer grpc.health.v1.Health/Check SERVING (python3-grpcio)"
connect_reply=$(curl -s --http2-prior-knowledge -H 'content-type: application/json' -d '{}' \
    "http://$ah_addr/grpc.health.v1.Health/Check") || die "curl failed"
[ "$connect_reply" = '{"status":"SERVING"}' ] ||
    die "Connect JSON Health/Check answered $connect_reply, not SERVING"
echo "unary.sh: agenthubd answers Connect JSON Health/Check $connect_reply (curl)"

# --- Load -------------------------------------------------------------------
printf '\0\0\0\0\0' > "$work/empty.bin"
printf '{}' > "$work/empty.json"

clk_tck=$(getconf CLK_TCK)

# cpu_ticks PID: user + system CPU of the whole process, in clock ticks.
cpu_ticks() {
    sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'
}

# run NAME ADDR PID [connect]: prints "req/s p99_ms server_cpu_us_per_request"
# for one h2load run (gRPC, or Connect with JSON; te: trailers is harmless
# there).
run() {
    body=$work/empty.bin ct=application/grpc
    if [ "${4:-}" = connect ]; then
        body=$work/empty.json ct=application/json
    fi
    cpu0=$(cpu_ticks "$3")
    $load_cpu h2load -n "$N" -c "$C" -m "$M" -t "$T" -d "$body" \
        -H "content-type: $ct" -H 'te: trailers' \
        --log-file="$work/$1.log" "http://$2/grpc.health.v1.Health/Check" >"$work/$1.out" 2>&1 ||
        die "h2load against $1 failed: $(cat "$work/$1.out")"
    rps=$(sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p' "$work/$1.out")
    ok=$(sed -n 's/^requests: .* \([0-9]*\) succeeded.*/\1/p' "$work/$1.out")
    p99=$(awk -F'\t' '{print $3}' "$work/$1.log" | sort -n |
          awk '{v[NR] = $1} END {i = int(NR * 0.99); if (i < NR * 0.99) i++; printf "%.2f", v[i] / 1000}')
    [ "$ok" = "$N" ] || die "h2load against $1: only $ok of $N requests succeeded: $(cat "$work/$1.out")"
    cpu1=$(cpu_ticks "$3")
    cpu_us=$(awk -v t=$((cpu1 - cpu0)) -v hz="$clk_tck" -v n="$N" 'BEGIN {printf "%.2f", t * 1e6 / hz / n}')
    echo "$rps $p99 $cpu_us"
}

echo "unary.sh: h2load -n $N -c $C -m $M -t $T on grpc.health.v1.Health/Check, $ROUNDS round(s)"
: >"$work/reference.rounds"
: >"$work/agenthubd.rounds"
: >"$work/connect.rounds"
r=1
while [ $r -le "$ROUNDS" ]; do
    run reference "$ref_addr" "$ref_pid" >>"$work/reference.rounds"
    run agenthubd "$ah_addr" "$agenthubd_pid" >>"$work/agenthubd.rounds"
    run connect "$ah_addr" "$agenthubd_pid" connect >>"$work/connect.rounds"
    printf 'round %d: reference %s req/s p99 %s ms %s us/req | agenthubd %s req/s p99 %s ms %s us/req | connect-json %s req/s p99 %s ms %s us/req\n' "$r" \
        $(tail -1 "$work/reference.rounds") $(tail -1 "$work/agenthubd.rounds") \
        $(tail -1 "$work/connect.rounds")
    r=$((r + 1))
done

# median FILE COLUMN
median() {
    awk -v c="$2" '{print $c}' "$1" | sort -g |
        awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
ref_rps=$(median "$work/reference.rounds" 1)
ref_p99=$(median "$work/reference.rounds" 2)
ah_rps=$(median "$work/agenthubd.rounds" 1)
ah_p99=$(median "$work/agenthubd.rounds" 2)
ref_cpu=$(median "$work/reference.rounds" 3)
ah_cpu=$(median "$work/agenthubd.rounds" 3)
cj_rps=$(median "$work/connect.rounds" 1)
cj_p99=$(median "$work/connect.rounds" 2)
cj_cpu=$(median "$work/connect.rounds" 3)

# agenthubd's own count: every h2load request was a Check answered OK.
ok_calls=$($PY - "$metrics_addr" <<'EOF'
import sys, urllib.request
text = urllib.request.urlopen("http://%s/metrics" % sys.argv[1], timeout=10).read().decode()
key = 'agenthub_grpc_calls_total{door="public",method="/grpc.health.v1.Health/Check",status="OK"}'
print(next((int(float(l.split()[-1])) for l in text.splitlines() if l.startswith(key + " ")), 0))
EOF
)
expected=$((2 * N * ROUNDS + 2))
[ "$ok_calls" -eq "$expected" ] ||
    die "agenthubd counted $ok_calls OK Checks, expected $expected (h2load's + the client checks)"
echo "unary.sh: agenthubd's /metrics counts all $expected Checks as OK"

echo "median of $ROUNDS round(s):"
printf '%-12s %12s %10s %22s\n' server 'req/s' 'p99 ms' 'server CPU us/request'
printf '%-12s %12.0f %10s %22s\n' reference "$ref_rps" "$ref_p99" "$ref_cpu"
printf '%-12s %12.0f %10s %22s\n' agenthubd "$ah_rps" "$ah_p99" "$ah_cpu"
printf '%-12s %12.0f %10s %22s\n' connect-json "$cj_rps" "$cj_p99" "$cj_cpu"
awk -v a="$ah_rps" -v r="$ref_rps" -v ap="$ah_p99" -v rp="$ref_p99" -v ac="$ah_cpu" -v rc="$ref_cpu" 'BEGIN {
    printf "ratio req/s agenthubd/reference: %.2fx (target >= 4x)\n", a / r
    printf "ratio p99   agenthubd/reference: %.2f (target < 1)\n", (rp > 0 ? ap / rp : 0)
    if (ac > 0)
        printf "server CPU per request, reference/agenthubd: %.2fx (load-independent)\n", rc / ac
}'
awk -v a="$ah_rps" -v j="$cj_rps" -v ac="$ah_cpu" -v jc="$cj_cpu" 'BEGIN {
    printf "ratio req/s connect-json/grpc (agenthubd): %.2fx\n", j / a
    if (ac > 0)
        printf "server CPU per request, connect-json/grpc (agenthubd): %.2fx (target <= 2x)\n", jc / ac
}'
