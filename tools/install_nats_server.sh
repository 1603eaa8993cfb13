#!/bin/sh
# Installs nats-server 2.10 or later from Debian's packages when the one on
# this machine is older.  Debian 12 (bookworm) ships 2.9.10, whose stream
# replicas diverge under partitions and pauses (docs/cluster.md, "The NATS
# server"); Debian 13 (trixie) ships 2.10.  Only that package comes from
# trixie: its source is pinned below every other, and nats-server (a static
# Go binary) needs nothing newer than bookworm's libc.  Run as root.
set -eu
if nats-server --version 2>/dev/null | grep -qE 'v2\.(1[0-9]|[2-9][0-9])\.'; then
    echo "deps: $(nats-server --version) is recent enough"
    exit 0
fi
if [ -r /etc/os-release ] && grep -q '^VERSION_CODENAME=trixie' /etc/os-release; then
    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y nats-server
    exit 0
fi
cat > /etc/apt/sources.list.d/agenthub-trixie.sources <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
cat > /etc/apt/preferences.d/agenthub-trixie <<'PIN'
# agenthub: only nats-server comes from trixie (tools/install_nats_server.sh).
Package: *
Pin: release n=trixie
Pin-Priority: 1

Package: nats-server
Pin: release n=trixie
Pin-Priority: 600
PIN
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y nats-server/trixie
nats-server --version
