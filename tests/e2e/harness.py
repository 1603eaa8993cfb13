"""The one harness every e2e suite uses.

- build_dir() / BUILD: where the binaries are ($AGENTHUB_BUILD, relative to
  the repository root; default build-asan, a FAILPOINTS build with the
  test-only EchoService).
- protos(): the python modules generated from proto/ with protoc, once per
  process (health, echo, frames, services, reflection; load(name) for more).
- Server: one agenthubd.  Options: a world provisioned through
  `agenthub admin import`, which doors listen, a blob directory, extra flags,
  environment, an existing store; restart() starts it again on the same
  store and ports.  stop() SIGTERMs it and requires exit 0 within the stop
  timeout and no sanitizer report in its stderr.
- Postgres / postgres(): a PostgreSQL 15 server in a temporary folder
  (tests/pg_server.sh), databases on it, stopped and started again on the
  same port, always removed at the end.
- parse_metrics(), wait_for(), free_port().
- NatsCluster / nats_cluster(): three nats-servers with JetStream (-js -sd
  DIR) routed into one cluster on loopback ports in a temporary folder;
  `with nats_cluster() as c:` always stops them.
"""
import copy
import importlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPO = str(ROOT)


def build_dir():
    """$AGENTHUB_BUILD (relative to the repository root), default build-asan."""
    build = os.environ.get("AGENTHUB_BUILD", "build-asan")
    if not os.path.isabs(build):
        build = os.path.join(REPO, build)
    return build


BUILD = Path(build_dir())
AGENTHUBD = BUILD / "agenthubd"
AGENTHUB = BUILD / "agenthub"
WORLD = ROOT / "deploy" / "demo-world.json"

START_TIMEOUT = 30.0
STOP_TIMEOUT = 5.0
DOORS = ("public", "runner", "metrics")
_DOOR_FLAG = {"public": "--listen", "runner": "--runner-listen", "metrics": "--metrics-listen"}
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


# --- Small helpers ----------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout=10.0, interval=0.02, what="condition"):
    """Polls PREDICATE until it returns a true value, which is returned;
    raises AssertionError after TIMEOUT seconds (WHAT, a string or a
    function making one, says what was awaited)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + (what() if callable(what) else what))
        time.sleep(interval)


def parse_metrics(text):
    """Prometheus text -> {"name{labels}": value}; unlabelled series by name."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, value = line.rpartition(" ")
        try:
            out[key] = float(value)
        except ValueError:
            pass
    return out


# --- Generated protobuf modules ---------------------------------------------

# Protos under proto/grpc/ would generate a python package named "grpc" that
# shadows grpcio, so they are generated from copies under other names.
_RENAMED_PROTOS = {
    "grpc/health/v1/health.proto": "std/health.proto",
    "grpc/reflection/v1/reflection.proto": "agenthub_reflection_v1.proto",
}
_PLAIN_PROTOS = [
    "agenthub/testing/v1/echo.proto",
    "compass/v1/frames.proto",
    "compass/v1/services.proto",
]
_PROTOS_LOCK = threading.Lock()
_PROTOS = {}


def protos():
    """The generated modules, made once per process: .health, .echo, .frames,
    .services, .reflection, and .load("dotted.module_pb2") for others."""
    with _PROTOS_LOCK:
        if "ns" in _PROTOS:
            return _PROTOS["ns"]
        tmp = Path(tempfile.mkdtemp(prefix="agenthub-pb-"))
        src, out = tmp / "src", tmp / "out"
        out.mkdir(parents=True)
        for orig, renamed in _RENAMED_PROTOS.items():
            (src / renamed).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / "proto" / orig, src / renamed)
        subprocess.run(["protoc", "-I" + str(src), "--python_out=" + str(out)]
                       + list(_RENAMED_PROTOS.values()), check=True)
        plain = [p for p in _PLAIN_PROTOS if (ROOT / "proto" / p).exists()]
        subprocess.run(["protoc", "-I" + str(ROOT / "proto"), "--python_out=" + str(out)]
                       + plain, check=True)
        sys.path.insert(0, str(out))
        ns = types.SimpleNamespace(load=importlib.import_module)
        ns.health = importlib.import_module("std.health_pb2")
        ns.echo = importlib.import_module("agenthub.testing.v1.echo_pb2")
        ns.frames = importlib.import_module("compass.v1.frames_pb2")
        ns.services = importlib.import_module("compass.v1.services_pb2")
        ns.reflection = importlib.import_module("agenthub_reflection_v1_pb2")
        _PROTOS["ns"] = ns
        return ns


# --- Worlds -----------------------------------------------------------------

def demo_world():
    with open(WORLD) as f:
        return json.load(f)


def world_with(**extra):
    """The demo world plus extra rows, e.g. sessions=[{...}]."""
    world = copy.deepcopy(demo_world())
    for key, rows in extra.items():
        world.setdefault(key, []).extend(rows)
    return world


def is_postgres(db):
    """True when DB is a PostgreSQL URI rather than a SQLite path."""
    return isinstance(db, str) and db.startswith(("postgres://", "postgresql://"))


def provision(db, world=None):
    """Imports WORLD (a dict; the demo world when None) into the store DB (a
    SQLite path or a PostgreSQL URI)."""
    text = json.dumps(world if world is not None else demo_world())
    if is_postgres(db):
        with tempfile.NamedTemporaryFile("w", suffix=".world.json", delete=False) as f:
            f.write(text)
        world_file = f.name
    else:
        db = Path(db)
        world_file = str(db.parent / (db.name + ".world.json"))
        Path(world_file).write_text(text)
    try:
        subprocess.run([str(AGENTHUB), "admin", "--db", str(db), "import", world_file],
                       check=True, capture_output=True)
    finally:
        if is_postgres(db):
            os.unlink(world_file)


# --- PostgreSQL -------------------------------------------------------------

PG_SCRIPT = ROOT / "tests" / "pg_server.sh"


class Postgres:
    """A PostgreSQL 15 server from Debian's packages in a temporary folder,
    on 127.0.0.1 at a free port (tests/pg_server.sh; as the postgres system
    user when run as root, since initdb refuses root).

    uri          postgres://postgres@127.0.0.1:PORT (no database)
    database()   creates a fresh database; returns its URI
    sql()        runs SQL through psql; returns its output
    stop()       stops the server (fast shutdown); start() brings it back on
                 the same port and data
    close()      stops it for good and removes the folder (idempotent)
    """

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="agenthub-pg-")
        out = subprocess.run([str(PG_SCRIPT), "start", self.dir], capture_output=True,
                             text=True, timeout=120)
        if out.returncode != 0:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise AssertionError("PostgreSQL did not start:\n" + out.stderr)
        self.uri = out.stdout.strip()
        self.count = 0
        self.closed = False

    def database(self):
        self.count += 1
        name = "agenthub_%d" % self.count
        self.sql("CREATE DATABASE %s" % name)
        return "%s/%s" % (self.uri, name)

    def sql(self, statement, database="postgres"):
        out = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                              "%s/%s" % (self.uri, database), "-c", statement],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    def stop(self):
        subprocess.run([str(PG_SCRIPT), "pause", self.dir], check=True, capture_output=True,
                       timeout=60)

    def start(self):
        subprocess.run([str(PG_SCRIPT), "resume", self.dir], check=True, capture_output=True,
                       timeout=60)

    def close(self):
        if not self.closed:
            self.closed = True
            subprocess.run([str(PG_SCRIPT), "stop", self.dir], capture_output=True, timeout=60)


def _pytest_fixture(fn):
    try:
        import pytest
    except ImportError:  # the harness is also imported outside pytest
        return fn
    return pytest.fixture(fn)


@_pytest_fixture
def postgres():
    """A fresh PostgreSQL server for one test, always removed afterwards."""
    pg = Postgres()
    try:
        yield pg
    finally:
        pg.close()


# --- The server -------------------------------------------------------------

# What the log must never show: a token of the demo world, SQL text, or a
# pointer value.
_LOG_LEAK = re.compile(r"(?<![\w-])t-(admin|alice|bob|carol|agent-\d|runner-\d|wrong)\b|"
                       r"\b(SELECT|INSERT INTO|DELETE FROM)\b|0x[0-9a-f]{8,}")


class Server:
    """One agenthubd.

    world        None: an empty store; True: the demo world; a dict: that
                 world (imported with `agenthub admin import` before start).
    doors        the listeners to open, each on 127.0.0.1:0 unless ports
                 names an address for it ({"public": "127.0.0.1:4000"}).
    blob_dir     True: a --blob-dir in the work directory; a path: that one.
    flags, env   extra command-line flags and environment.
    db           an existing store (not provisioned again).
    check_log    at stop, also assert the log shows no token, SQL or pointer.
    hold_stderr  a threading.Event: after the listening lines, stderr is not
                 read until it is set (a server whose log pipe fills up).
    start        False: construct only; call start() later.
    """

    def __init__(self, world=None, doors=DOORS, blob_dir=False, flags=(), env=None, db=None,
                 workdir=None, ports=None, check_log=False, hold_stderr=None,
                 stop_timeout=STOP_TIMEOUT, start=True):
        if not AGENTHUBD.exists():
            import pytest
            pytest.skip("%s is not built" % AGENTHUBD)
        self.tmp = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="agenthubd-"))
        self.tmp.mkdir(parents=True, exist_ok=True)
        if db is not None:
            self.db = db if is_postgres(db) else Path(db)
        else:
            self.db = self.tmp / "hub.db"
            if world is not None and world is not False:
                provision(self.db, None if world is True else world)
        self.doors = tuple(doors)
        self.bind = {door: (ports or {}).get(door, "127.0.0.1:0") for door in self.doors}
        self.blob_dir = None
        if blob_dir:
            self.blob_dir = Path(blob_dir) if isinstance(blob_dir, (str, Path)) else \
                self.tmp / "blobs"
            self.blob_dir.mkdir(parents=True, exist_ok=True)
        self.flags = list(flags)
        self.env_extra = dict(env or {})
        self.check_log = check_log
        self.hold_stderr = hold_stderr
        self.stop_timeout = stop_timeout
        self.proc = None
        self.lines = []
        self.addr = {}
        self.stopped = True
        self.returncode = None
        self._closers = []
        if start:
            self.start()

    # -- lifecycle

    def args(self):
        args = [str(AGENTHUBD), "--db", str(self.db)]
        for door in self.doors:
            args += [_DOOR_FLAG[door], self.bind[door]]
        if self.blob_dir:
            args += ["--blob-dir", str(self.blob_dir)]
        return args + self.flags

    def start(self):
        """Starts agenthubd and waits for every door's listening line;
        returns self."""
        full_env = dict(os.environ)
        full_env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        full_env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        # agenthubd reads a flag from every AGENTHUB_<FLAG> variable
        # (docs/configuration.md): the server sees only those the test
        # gives, not whatever the shell running the suite exported.
        for name in [n for n in full_env if n.startswith("AGENTHUB_")]:
            del full_env[name]
        full_env.update(self.env_extra)
        self.lines = []
        self.addr = {}
        self._want = set(self.doors)
        self._ready = threading.Event()
        self.proc = subprocess.Popen(self.args(), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, errors="replace", env=full_env, cwd=str(self.tmp))
        self.stopped = False
        self.returncode = None
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()
        if not self._ready.wait(START_TIMEOUT) or not self._want <= set(self.addr):
            self.kill()
            raise AssertionError("agenthubd did not print its listening lines (rc=%s):\n%s"
                                 % (self.proc.returncode, self.stderr()))
        # A restart binds the same addresses.
        self.bind.update(self.addr)
        return self

    def _drain(self):
        for line in self.proc.stderr:
            self.lines.append(line)
            if line.startswith("agenthubd: listening "):
                parts = line.split()
                self.addr[parts[2]] = parts[3]
                if self._want <= set(self.addr):
                    self._ready.set()
                    if self.hold_stderr is not None:
                        self.hold_stderr.wait()
        self._ready.set()

    def stderr(self):
        return "".join(self.lines)

    def log(self, lines=60):
        return "".join(self.lines[-lines:])

    def track(self, closeable):
        """Closes CLOSEABLE before the server is stopped, so the drain does
        not wait for it; returns it."""
        self._closers.append(closeable.close)
        return closeable

    def close_clients(self):
        closers, self._closers = self._closers, []
        for close in closers:
            try:
                close()
            except Exception:
                pass

    def terminate(self):
        """Sends SIGTERM (once)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def wait_exit(self, timeout=None):
        """Waits for exit; returns (returncode, seconds waited); None rc on timeout."""
        start = time.monotonic()
        try:
            rc = self.proc.wait(timeout=self.stop_timeout if timeout is None else timeout)
        except subprocess.TimeoutExpired:
            rc = None
        return rc, time.monotonic() - start

    def stop(self):
        """SIGTERM; asserts exit 0 within the stop timeout, no sanitizer report
        in stderr and, with check_log, no secret in the log."""
        if self.stopped:
            return self.returncode
        self.stopped = True
        self.close_clients()
        if self.hold_stderr is not None:
            self.hold_stderr.set()
        self.terminate()
        rc, _ = self.wait_exit()
        if rc is None:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(5)
        self.returncode = rc
        err = self.stderr()
        assert rc is not None, "agenthubd did not exit within %.0f s of SIGTERM:\n%s" % (
            self.stop_timeout, err[-6000:])
        assert rc == 0, "agenthubd exited %d:\n%s" % (rc, err[-12000:])
        for marker in SANITIZER_MARKERS:
            assert marker not in err, "sanitizer report in agenthubd stderr:\n" + err
        if self.check_log:
            leak = _LOG_LEAK.search(err)
            assert not leak, "the log leaks %r:\n%s" % (leak.group(0), err[-4000:])
        return rc

    def restart(self):
        """stop(), then start() on the same store and addresses; returns self."""
        self.stop()
        return self.start()

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        # The old reader must be done before a start replaces what it sets
        # (its end of stderr would tell the next start it is ready).
        if getattr(self, "_reader", None) is not None:
            self._reader.join(5)
        self.stopped = True

    # -- addresses and clients

    @property
    def addresses(self):
        return self.addr

    @property
    def public(self):
        return self.addr["public"]

    @property
    def runner_addr(self):
        return self.addr["runner"]

    @property
    def metrics_addr(self):
        return self.addr["metrics"]

    @property
    def pid(self):
        return self.proc.pid

    def channel(self, door="public", options=None):
        import grpc
        return self.track(grpc.insecure_channel(self.addr[door], options=options or []))

    def raw(self, door="public", **kwargs):
        import rawh2
        return self.track(rawh2.RawH2.connect(self.addr[door], **kwargs))

    # -- the metrics door

    def http_get(self, path, timeout=5.0):
        """(status, body) of GET http://METRICS_DOOR/PATH."""
        url = "http://%s%s" % (self.addr["metrics"], path)
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def metrics(self):
        status, body = self.http_get("/metrics")
        assert status == 200, body
        return parse_metrics(body)

    def metric(self, key):
        return self.metrics().get(key, 0.0)

    def wait_metric(self, key, predicate, timeout=10.0):
        """Polls /metrics until KEY is present and PREDICATE(its value) holds;
        returns the value."""
        last = []

        def holds():
            value = self.metrics().get(key)
            last[:] = [value]
            return value is not None and predicate(value)

        wait_for(holds, timeout, what=lambda: "metric %s (last %r)" % (key, last[0]))
        return last[0]


# --- NATS JetStream -----------------------------------------------------------

NATS_SERVER = shutil.which("nats-server") or "/usr/sbin/nats-server"


class NatsServer:
    """One nats-server of a NatsCluster: JetStream on (-js) with its store
    in DIR, its client port, its route port and its monitoring port, all on
    127.0.0.1."""

    def __init__(self, name, workdir, port, route_port, http_port, routes, cluster_name):
        self.name = name
        self.dir = Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = port
        self.route_port = route_port
        self.http_port = http_port
        self.routes = routes
        self.cluster_name = cluster_name
        self.proc = None
        self.log_path = self.dir / "nats.log"

    @property
    def url(self):
        return "nats://127.0.0.1:%d" % self.port

    def args(self):
        return [NATS_SERVER, "-js", "-sd", str(self.dir / "js"), "-n", self.name,
                "-a", "127.0.0.1", "-p", str(self.port), "-m", str(self.http_port),
                "--cluster_name", self.cluster_name,
                "--cluster", "nats://127.0.0.1:%d" % self.route_port,
                "--routes", ",".join(self.routes), "-l", str(self.log_path)]

    def start(self):
        self.proc = subprocess.Popen(self.args(), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return self

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def healthy(self):
        """1 when /healthz answers 200 and the JetStream meta group has a
        leader (streams can be created)."""
        return self.meta() is not None

    def jetstream_request(self, subject, body=b""):
        """One JetStream API request to this server over the plain NATS
        protocol: the decoded JSON reply."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
            stream = sock.makefile("rb")
            stream.readline()  # INFO
            sock.sendall(b'CONNECT {"verbose":false,"pedantic":false}\r\nSUB _INBOX.t 1\r\n'
                         b"PUB %s _INBOX.t %d\r\n%s\r\n" % (subject.encode(), len(body), body))
            while True:
                line = stream.readline()
                if line.startswith(b"PING"):
                    sock.sendall(b"PONG\r\n")
                elif line.startswith(b"MSG"):
                    return json.loads(stream.read(int(line.split()[-1]) + 2)[:-2])
                elif not line or line.startswith(b"-ERR"):
                    raise AssertionError("NATS: %r" % line)

    def meta(self):
        """The meta group as /jsz tells it, when /healthz answers 200 and it
        has a leader; else None."""
        base = "http://127.0.0.1:%d" % self.http_port
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=1.0) as resp:
                if resp.status != 200:
                    return None
            with urllib.request.urlopen(base + "/jsz", timeout=1.0) as resp:
                meta = json.load(resp).get("meta_cluster", {})
                return meta if meta.get("leader") else None
        except Exception:
            return None

    def kill(self):
        """SIGKILL, as a crash."""
        if self.running():
            self.proc.kill()
            self.proc.wait()

    def stop(self):
        if self.running():
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log(self, lines=40):
        try:
            return "".join(self.log_path.read_text(errors="replace").splitlines(True)[-lines:])
        except OSError:
            return ""


class NatsCluster:
    """N nats-servers forming one JetStream cluster on loopback ports, their
    stores in a temporary folder.  url is the comma-separated list of every
    client URL (what --cluster takes)."""

    def __init__(self, size=3, workdir=None):
        self.tmp = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="nats-"))
        ports = [(free_port(), free_port(), free_port()) for _ in range(size)]
        routes = ["nats://127.0.0.1:%d" % p[1] for p in ports]
        self.servers = [NatsServer("n%d" % (i + 1), self.tmp / ("n%d" % (i + 1)), p[0], p[1],
                                   p[2], routes, "agenthub-test")
                        for i, p in enumerate(ports)]

    @property
    def url(self):
        return ",".join(s.url for s in self.servers)

    def start(self, timeout=30.0):
        for s in self.servers:
            s.start()
        self.wait_healthy(timeout)
        return self

    def wait_healthy(self, timeout=30.0):
        """Every running server healthy and its meta group counting every
        server: before that, a stream with --cluster-replicas 3 may find no
        peers to be placed on."""
        running = [s for s in self.servers if s.running()]

        def whole():
            metas = [s.meta() for s in running]
            return all(m is not None for m in metas) and any(
                m.get("cluster_size", 0) >= len(running) for m in metas)
        wait_for(whole, timeout, interval=0.1, what=lambda: "the NATS cluster to be healthy:\n" +
                 "\n".join(s.log() for s in self.servers))

    def stop_servers(self):
        """Stops every server at once, so a client is not left a moment in
        which it reconnects to the last one still running."""
        running = [s for s in self.servers if s.running()]
        for s in running:
            s.proc.terminate()
        for s in running:
            s.stop()

    def stop(self):
        self.stop_servers()
        shutil.rmtree(self.tmp, ignore_errors=True)


class nats_cluster:
    """with nats_cluster() as cluster: three JetStream servers, always
    stopped (and their stores removed) on the way out."""

    def __init__(self, size=3, workdir=None):
        self.size = size
        self.workdir = workdir
        self.cluster = NatsCluster(size, workdir)

    def __enter__(self):
        # nats-server 2.10 now and then forms its routes without ever
        # electing a meta leader (every server logs "has not established
        # contact with a meta leader" for good): such a cluster is stopped
        # and a fresh one, on new ports, started in its place.
        for attempt in range(3):
            try:
                return self.cluster.start(timeout=20.0)
            except AssertionError:
                self.cluster.stop()
                if attempt == 2:
                    raise
                self.cluster = NatsCluster(self.size, self.workdir)
            except BaseException:
                self.cluster.stop()
                raise

    def __exit__(self, *exc):
        self.cluster.stop()
        return False
