# shellcheck shell=sh
# bench/nats_cluster.sh, sourced by the cluster benchmarks: three NATS
# JetStream servers on loopback ports.
#
# nats_cluster_start DIR [CONF]: starts them with their stores and logs in
# DIR/nats-1..3 (made afresh), with -c CONF when given, and waits until
# bench/nats_ready.py says an R3 stream can be placed; servers that do not
# get there in 20 s are stopped and three new ones started on new ports,
# up to three times (nats-server 2.10 now and then never elects a meta
# leader, or answers 10005 "no suitable peers" for as long as one waits).
# Sets c1..c3, r1..r3, h1..h3 (each server's client, route and monitoring
# port) and nats_pids, and adds the pids to $pids.  Returns 1 when no try
# formed a cluster.  Needs port (a free loopback port) and $nats.
# shellcheck disable=SC2034 # read by the scripts that source this
c1='' c2='' c3='' r1='' r2='' r3='' h1='' h2='' h3='' nats_pids=''
_c='' _r='' _h=''
nats_cluster_start() {
    _dir=$1 _conf=${2:-}
    : "${nats:?nats_cluster_start needs \$nats}"
    for _attempt in 1 2 3; do
        _routes=
        for _i in 1 2 3; do
            eval "c$_i=$(port) r$_i=$(port) h$_i=$(port)"
            eval "_routes=\"\${_routes:+\$_routes,}nats://127.0.0.1:\$r$_i\""
        done
        nats_pids=
        for _i in 1 2 3; do
            eval "_c=\$c$_i _r=\$r$_i _h=\$h$_i"
            rm -rf "$_dir/nats-$_i"
            mkdir -p "$_dir/nats-$_i"
            # shellcheck disable=SC2086
            "$nats" ${_conf:+-c "$_conf"} -js -sd "$_dir/nats-$_i" -n "n$_i" -a 127.0.0.1 \
                -p "$_c" -m "$_h" --cluster_name bench --cluster "nats://127.0.0.1:$_r" \
                --routes "$_routes" -l "$_dir/nats-$_i.log" &
            pids="$pids $!"
            nats_pids="$nats_pids $!"
        done
        for _ in $(seq 100); do
            /usr/bin/python3 bench/nats_ready.py "$c1" "$h1" "$h2" "$h3" 2>/dev/null && return 0
            sleep 0.2
        done
        echo "the NATS servers did not form a cluster (attempt $_attempt)"
        for _p in $nats_pids; do kill "$_p" 2>/dev/null || true; wait "$_p" 2>/dev/null || true; done
    done
    return 1
}
