#!/bin/sh
# A throwaway PostgreSQL 15 server for the tests (Debian's binaries).
#
#   tests/pg_server.sh start DIR   initdb into DIR/data and start a server on
#                                  (DIR may exist; its parent must be one the
#                                  postgres user can enter, such as /tmp)
#                                  127.0.0.1 at a free port (its socket in
#                                  DIR); prints postgres://postgres@127.0.0.1:PORT
#                                  (AGENTHUB_PG_HOST: another loopback address)
#   tests/pg_server.sh pause DIR   stops the server, keeping DIR (fast shutdown)
#   tests/pg_server.sh resume DIR  starts it again on the same port and data
#   tests/pg_server.sh stop DIR    stops it and removes DIR
#
# initdb refuses to run as root, and CI runs as root: then every server
# command runs as the postgres system user, in a DIR it owns.  Durability is
# off (fsync, full pages): the data is thrown away.  Trust authentication,
# listening on loopback only.
set -eu
bin=${AGENTHUB_PG_BIN:-/usr/lib/postgresql/15/bin}
host=${AGENTHUB_PG_HOST:-127.0.0.1}
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|pause|resume|stop DIR" >&2; exit 2; }

as_pg() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
    /usr/bin/python3 -c 'import socket; import sys; s = socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' "$host"
}

server_start() {
    as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
        -o "-h $host -p $1 -k $dir -c fsync=off -c full_page_writes=off -c synchronous_commit=off -c max_connections=200" \
        start >/dev/null 2>&1
}

case $cmd in
start)
    [ -x "$bin/initdb" ] || { echo "pg_server: no $bin/initdb (make deps installs postgresql)" >&2; exit 1; }
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    if ! as_pg "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C \
        >"$dir/initdb.log" 2>&1; then
        cat "$dir/initdb.log" >&2
        exit 1
    fi
    # Clients on any loopback address (the nemesis suite gives each process
    # one of its own).
    echo "host all all 127.0.0.0/8 trust" >> "$dir/data/pg_hba.conf"
    # A port taken between free_port and the bind fails the start; retry.
    for attempt in 1 2 3; do
        port=$(free_port)
        if server_start "$port"; then
            echo "$port" > "$dir/port"
            echo "postgres://postgres@$host:$port"
            exit 0
        fi
    done
    cat "$dir/server.log" >&2
    exit 1
    ;;
pause)
    as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null
    ;;
resume)
    server_start "$(cat "$dir/port")" || { cat "$dir/server.log" >&2; exit 1; }
    ;;
stop)
    if [ -d "$dir/data" ]; then
        as_pg "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: $0 start|pause|resume|stop DIR" >&2
    exit 2
    ;;
esac
