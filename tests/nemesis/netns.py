"""The network the suite runs in: a network namespace of its own, made by
`unshare --net`, where only loopback exists.

Every process has one loopback address.  A process listens on it, and its
outgoing connections leave from it too: each process runs under a uid of
its own, and a policy-routing rule per uid (`ip rule ... uidrange`) picks
a routing table whose loopback route names that address as the source.
So a packet's two addresses always name the two processes it travels
between, and nftables can cut a link by address pair.

Partitions are one nftables table, `inet nemesis`, with a chain on the
output hook dropping both directions of every cut pair.  Nothing in it
outlives the namespace.
"""
import os
import subprocess
import sys

TABLE = "nemesis"


def run(*args, check=True):
    out = subprocess.run(list(args), capture_output=True, text=True)
    if check and out.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(args), out.returncode,
                                                   out.stderr.strip()))
    return out


def probe():
    """None when this machine can run the suite, else why not."""
    if os.geteuid() != 0:
        return "the nemesis suite needs root (network namespaces, nftables, uids)"
    for tool in ("unshare", "ip", "nft"):
        if not any(os.access(os.path.join(d, tool), os.X_OK)
                   for d in os.environ.get("PATH", "").split(":") + ["/usr/sbin", "/sbin"]):
            return "no %s (make deps installs it)" % tool
    script = ("ip link set lo up && nft add table inet probe && "
              "ip rule add pref 10 uidrange 60000-60000 lookup 100")
    out = subprocess.run(["unshare", "--net", "sh", "-c", script], capture_output=True,
                         text=True)
    if out.returncode != 0:
        return "no network namespace support here: " + out.stderr.strip()[-300:]
    return None


def setup_loopback(sources):
    """Brings lo up inside the namespace; SOURCES maps uid -> the loopback
    address that uid's connections leave from."""
    run("ip", "link", "set", "lo", "up")
    for i, (uid, addr) in enumerate(sorted(sources.items())):
        table = str(100 + i)
        run("ip", "route", "add", "local", "127.0.0.0/8", "dev", "lo", "src", addr,
            "table", table)
        run("ip", "rule", "add", "pref", str(10 + i), "uidrange", "%d-%d" % (uid, uid),
            "lookup", table)
    # The local table comes after the uid rules (it is consulted first by
    # default, and names 127.0.0.1 as every loopback route's source).
    run("ip", "rule", "add", "pref", "1000", "lookup", "local")
    run("ip", "rule", "del", "pref", "0")
    run("nft", "add", "table", "inet", TABLE)
    run("nft", "add", "chain", "inet", TABLE, "cuts",
        "{ type filter hook output priority 0; policy accept; }")


def in_namespace():
    """True when this process is not in the initial network namespace."""
    try:
        return os.readlink("/proc/self/ns/net") != os.readlink("/proc/1/ns/net")
    except OSError:
        return False


class Partitions:
    """The links cut now, as nftables rules (both directions per pair)."""

    def __init__(self):
        self.pairs = set()

    def cut(self, pairs):
        lines = []
        for a, b in pairs:
            key = tuple(sorted((a, b)))
            if key in self.pairs:
                continue
            self.pairs.add(key)
            lines.append("add rule inet %s cuts ip saddr %s ip daddr %s drop" % (TABLE, a, b))
            lines.append("add rule inet %s cuts ip saddr %s ip daddr %s drop" % (TABLE, b, a))
        if lines:
            out = subprocess.run(["nft", "-f", "-"], input="\n".join(lines) + "\n",
                                 capture_output=True, text=True)
            if out.returncode != 0:
                raise RuntimeError("nft: " + out.stderr.strip())

    def heal(self):
        self.pairs.clear()
        run("nft", "flush", "chain", "inet", TABLE, "cuts")

    def rules(self):
        return run("nft", "list", "chain", "inet", TABLE, "cuts", check=False).stdout


if __name__ == "__main__":
    why = probe()
    print(why or "ok")
    sys.exit(1 if why else 0)
