"""bench/nats_ready.py CPORT MPORT...: exits 0 once every NATS server
(monitoring ports MPORT...) answers /healthz, the meta group has a leader
and counts them all, and an R3 stream can be placed: a probe stream made
through the client port CPORT, then deleted.  nats-server 2.10 can answer
a stream create "no suitable peers for placement" (10005) for many
seconds after its meta group formed, and now and then never elects a
meta leader at all; the cluster benchmarks start such servers again."""
import json, socket, sys, urllib.request
cport, mports = sys.argv[1], sys.argv[2:]
size = 0
for p in mports:
    urllib.request.urlopen("http://127.0.0.1:%s/healthz" % p, timeout=1)
    meta = json.load(urllib.request.urlopen("http://127.0.0.1:%s/jsz" % p, timeout=1)).get("meta_cluster", {})
    if not meta.get("leader"):
        sys.exit(1)
    size = max(size, meta.get("cluster_size", 0))
if size < len(mports):
    sys.exit(1)
s = socket.create_connection(("127.0.0.1", int(cport)), timeout=3)
f = s.makefile("rb")
f.readline()  # INFO
def request(subject, body):
    s.sendall(b"PUB %s _INBOX.ready %d\r\n%s\r\n" % (subject, len(body), body))
    while True:
        line = f.readline()
        if line.startswith(b"PING"):
            s.sendall(b"PONG\r\n")
        elif line.startswith(b"MSG "):
            return json.loads(f.read(int(line.split()[-1]) + 2))
s.sendall(b'CONNECT {"verbose":false,"name":"bench-ready"}\r\nSUB _INBOX.ready 1\r\n')
cfg = {"name": "BENCH_READY", "subjects": ["bench.ready"], "storage": "memory", "num_replicas": 3}
made = request(b"$JS.API.STREAM.CREATE.BENCH_READY", json.dumps(cfg).encode())
request(b"$JS.API.STREAM.DELETE.BENCH_READY", b"")
sys.exit(1 if "error" in made else 0)
