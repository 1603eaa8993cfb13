"""The processes of one nemesis run, each on its own loopback address and
under its own uid (netns.py says why): three nats-servers routed into one
JetStream cluster, three agenthubd nodes with --cluster, and a PostgreSQL
server they share as their store.

Fixed ports are safe: nothing else lives in the namespace."""
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NATS_SERVER = shutil.which("nats-server") or "/usr/sbin/nats-server"
PG_SCRIPT = ROOT / "tests" / "pg_server.sh"

CLIENT_ADDR = "127.0.0.1"   # the test's own clients (root)
PG_ADDR = "127.0.0.2"
NATS_ADDRS = ["127.0.0.11", "127.0.0.12", "127.0.0.13"]
NODE_ADDRS = ["127.0.0.21", "127.0.0.22", "127.0.0.23"]
NATS_UIDS = [61011, 61012, 61013]
NODE_UIDS = [61021, 61022, 61023]
NATS_PORT, ROUTE_PORT, MONITOR_PORT = 4222, 6222, 8222
PUBLIC_PORT, RUNNER_PORT, METRICS_PORT = 50051, 50052, 9090
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


def build_dir():
    """$AGENTHUB_BUILD (relative to the repository root); else build/, else
    build-asan/."""
    build = os.environ.get("AGENTHUB_BUILD")
    if not build:
        build = "build" if (ROOT / "build" / "agenthubd").exists() else "build-asan"
    path = Path(build)
    return path if path.is_absolute() else ROOT / path


def source_addresses():
    """uid -> the loopback address its connections leave from."""
    return dict(zip(NATS_UIDS + NODE_UIDS, NATS_ADDRS + NODE_ADDRS))


def http_get(url, timeout=1.0):
    """(status, body) or (None, why)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except Exception as e:  # refused, timed out (paused), reset
        return None, str(e)


def own_dir(path, uid):
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, uid, uid)
    return path


class Proc:
    """A program run under UID, stderr (and stdout) appended to LOG; start()
    again after a kill reuses everything."""

    def __init__(self, name, uid, log):
        self.name = name
        self.uid = uid
        self.log_path = Path(log)
        self.proc = None
        self.paused = False
        self.starts = 0

    def args(self):
        raise NotImplementedError

    def env(self):
        return dict(os.environ)

    def start(self):
        with open(self.log_path, "a") as log:
            log.write("=== nemesis: start #%d at %.3f\n" % (self.starts + 1, time.time()))
            log.flush()
            self.proc = subprocess.Popen(self.args(), stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=log, user=self.uid, group=self.uid,
                                         extra_groups=[], env=self.env(),
                                         cwd=str(self.log_path.parent))
        self.starts += 1
        self.paused = False
        return self

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self):
        return self.proc.pid

    def kill(self):
        """SIGKILL, as a crash (a paused process dies too)."""
        if self.running():
            self.proc.kill()
            self.proc.wait()
        self.paused = False

    def pause(self):
        if self.running():
            self.proc.send_signal(signal.SIGSTOP)
            self.paused = True

    def resume(self):
        if self.running():
            self.proc.send_signal(signal.SIGCONT)
        self.paused = False

    def stop(self, timeout=10):
        """SIGTERM (SIGCONT first); SIGKILL after TIMEOUT.  Returns the exit
        code, or None when it had to be killed."""
        if not self.running():
            return self.proc.returncode if self.proc else None
        self.resume()
        self.proc.terminate()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None

    def log(self, lines=40):
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "".join(text.splitlines(True)[-lines:])

    def log_text(self):
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


class Nats(Proc):
    def __init__(self, index, workdir):
        self.index = index
        self.addr = NATS_ADDRS[index]
        self.server_name = "n%d" % (index + 1)
        self.dir = own_dir(Path(workdir) / self.server_name, NATS_UIDS[index])
        super().__init__(self.server_name, NATS_UIDS[index], self.dir / "nats.log")

    @property
    def url(self):
        return "nats://%s:%d" % (self.addr, NATS_PORT)

    def args(self):
        routes = ",".join("nats://%s:%d" % (a, ROUTE_PORT) for a in NATS_ADDRS)
        return [NATS_SERVER, "-js", "-sd", str(self.dir / "js"), "-n", self.server_name,
                "-a", self.addr, "-p", str(NATS_PORT), "-m", str(MONITOR_PORT),
                "--cluster_name", "nemesis",
                "--cluster", "nats://%s:%d" % (self.addr, ROUTE_PORT), "--routes", routes]

    def monitor(self, path, timeout=1.0):
        status, body = http_get("http://%s:%d%s" % (self.addr, MONITOR_PORT, path), timeout)
        if status != 200:
            return None
        try:
            return json.loads(body)
        except ValueError:
            return None

    def healthy(self):
        """/healthz answers 200 and the meta group has a leader."""
        if not self.running() or self.paused:
            return False
        status, _ = http_get("http://%s:%d/healthz" % (self.addr, MONITOR_PORT))
        if status != 200:
            return False
        jsz = self.monitor("/jsz")
        return bool(jsz and jsz.get("meta_cluster", {}).get("leader"))


def node_read_flags(index):
    """The --cluster-read flags of node INDEX: NEMESIS_CLUSTER_READ all or
    on-demand for every node; mixed (the default) reads every session on
    node-1 and sessions on demand on the others, letting an unused one go
    after 1 s, so both ways of reading meet the same faults."""
    mode = os.environ.get("NEMESIS_CLUSTER_READ", "mixed")
    if mode == "mixed":
        mode = "all" if index == 0 else "on-demand"
    return ["--cluster-read", mode, "--cluster-linger-ms", "1000"]


class Node(Proc):
    def __init__(self, index, workdir, build, db, nats_urls, flags=()):
        self.index = index
        self.addr = NODE_ADDRS[index]
        self.node_id = "node-%d" % (index + 1)
        self.dir = own_dir(Path(workdir) / self.node_id, NODE_UIDS[index])
        self.build = Path(build)
        self.db = db
        self.nats_urls = nats_urls
        self.flags = list(flags)
        super().__init__(self.node_id, NODE_UIDS[index], self.dir / "agenthubd.log")

    @property
    def public(self):
        return "%s:%d" % (self.addr, PUBLIC_PORT)

    @property
    def runner_addr(self):
        return "%s:%d" % (self.addr, RUNNER_PORT)

    def args(self):
        return [str(self.build / "agenthubd"), "--db", self.db,
                "--listen", self.public, "--runner-listen", self.runner_addr,
                "--metrics-listen", "%s:%d" % (self.addr, METRICS_PORT),
                "--cluster", self.nats_urls, "--node-id", self.node_id,
                "--cluster-replicas", "3",
                # Every session's whole log stays in every copy: the
                # checker reads them whole at the end.
                "--agent-log-bytes", str(64 << 20),
                "--subscriber-buffer-bytes", str(16 << 20)] + self.flags

    def env(self):
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
        env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        env.pop("AGENTHUB_FAILPOINTS", None)
        return env

    def healthz(self):
        if not self.running():
            return None, "not running"
        if self.paused:
            return None, "paused"
        return http_get("http://%s:%d/healthz" % (self.addr, METRICS_PORT))

    def serving(self):
        return self.healthz()[0] == 200

    def metrics(self):
        status, body = http_get("http://%s:%d/metrics" % (self.addr, METRICS_PORT))
        out = {}
        if status != 200:
            return out
        for line in body.splitlines():
            if line and not line.startswith("#"):
                key, _, value = line.rpartition(" ")
                try:
                    out[key] = float(value)
                except ValueError:
                    pass
        return out


class Postgres:
    """PostgreSQL 15 on PG_ADDR (tests/pg_server.sh) in DIR; one database."""

    def __init__(self, workdir):
        self.dir = Path(workdir) / "pg"
        env = dict(os.environ, AGENTHUB_PG_HOST=PG_ADDR)
        out = subprocess.run([str(PG_SCRIPT), "start", str(self.dir)], capture_output=True,
                             text=True, timeout=120, env=env)
        if out.returncode != 0:
            raise RuntimeError("PostgreSQL did not start:\n" + out.stderr)
        self.uri = out.stdout.strip()
        self.sql("CREATE DATABASE agenthub")
        self.db = self.uri + "/agenthub"

    def sql(self, statement, database="postgres"):
        out = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                              "%s/%s" % (self.uri, database), "-c", statement],
                             capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError(out.stderr)
        return out.stdout.strip()

    def close(self):
        subprocess.run([str(PG_SCRIPT), "stop", str(self.dir)], capture_output=True,
                       timeout=60)


def provision(build, db, world, workdir):
    path = Path(workdir) / "world.json"
    path.write_text(json.dumps(world))
    subprocess.run([str(Path(build) / "agenthub"), "admin", "--db", db, "import", str(path)],
                   check=True, capture_output=True, timeout=60)


class Cluster:
    """The three nats-servers, the three nodes and PostgreSQL of one run."""

    def __init__(self, workdir, build):
        self.workdir = Path(workdir)
        self.build = Path(build)
        self.pg = None
        self.nats = [Nats(i, self.workdir) for i in range(3)]
        self.nodes = []

    @property
    def nats_urls(self):
        return ",".join(n.url for n in self.nats)

    def start(self, world, timeout=60):
        self.pg = Postgres(self.workdir)
        provision(self.build, self.pg.db, world, self.workdir)
        self.start_nats()
        self.nodes = [Node(i, self.workdir, self.build, self.pg.db, self.nats_urls,
                           node_read_flags(i)) for i in range(3)]
        for node in self.nodes:
            node.start()
        self.wait(lambda: all(node.serving() for node in self.nodes), timeout,
                  lambda: "the nodes to serve:\n" + "\n".join(n.log(15) for n in self.nodes))

    def whole(self):
        """Every server healthy, and a meta group that counts all three: before
        that, a stream with three replicas finds no peers to be placed on."""
        if not all(n.healthy() for n in self.nats):
            return False
        return any((n.monitor("/jsz") or {}).get("meta_cluster", {}).get("cluster_size", 0) >=
                   len(self.nats) for n in self.nats)

    def start_nats(self, attempts=3, timeout=20):
        """nats-server 2.10 now and then forms its routes without a meta group
        of every server, and stays so: such a cluster is stopped, its stores
        removed, and started again, before any node or fault touches it."""
        for attempt in range(attempts):
            for n in self.nats:
                n.start()
            try:
                return self.wait(self.whole, timeout, lambda: "the NATS cluster to form:\n" +
                                 "\n".join(n.log(15) for n in self.nats))
            except RuntimeError:
                if attempt == attempts - 1:
                    raise
                for n in self.nats:
                    n.kill()
                    shutil.rmtree(n.dir / "js", ignore_errors=True)

    @staticmethod
    def wait(predicate, timeout, what, interval=0.2):
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise RuntimeError("timed out waiting for " + what())
            time.sleep(interval)

    def leaders(self):
        """(meta leader's index, frames stream leader's index), each None when
        no answering server names one."""
        meta = stream = None
        for n in self.nats:
            if not n.running() or n.paused:
                continue
            jsz = n.monitor("/jsz?accounts=true&streams=true", timeout=1.0)
            if not jsz:
                continue
            meta = meta or jsz.get("meta_cluster", {}).get("leader")
            for account in jsz.get("account_details") or []:
                for st in account.get("stream_detail") or []:
                    if st.get("name") == "AGENTHUB_FRAMES":
                        stream = stream or (st.get("cluster") or {}).get("leader")
            if meta and stream:
                break
        names = [n.server_name for n in self.nats]
        return (names.index(meta) if meta in names else None,
                names.index(stream) if stream in names else None)

    def heal_processes(self):
        """SIGCONT every paused process; start every one that is not running."""
        for p in self.nats + self.nodes:
            if p.paused:
                p.resume()
        for p in self.nats + self.nodes:
            if not p.running():
                p.start()

    def stop(self):
        codes = {}
        for p in self.nodes + self.nats:
            try:
                codes[p.name] = p.stop()
            except Exception as e:
                codes[p.name] = "stop failed: %s" % e
        if self.pg is not None:
            self.pg.close()
        return codes
