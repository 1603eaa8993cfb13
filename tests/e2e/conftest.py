"""Shared fixtures for the end-to-end suites.

The suites drive a real agenthubd (by default the sanitizer build in
build-asan/, which also registers the test-only EchoService) with
python3-grpcio, and with a small raw HTTP/2 client (tests/e2e/rawh2.py) for
frame-level checks.  AGENTHUB_BUILD must be a FAILPOINTS build (build-asan
or build-fp): the release build has no EchoService.

  tests/run_e2e.sh build-asan /dev/null       # what `make test` runs
  AGENTHUB_BUILD=build-fp python3 -m pytest -q tests/e2e -k tls

Fixtures:
  pb            generated python modules: pb.health, pb.echo, pb.load("compass.v1.services_pb2")
  start_server  a factory: start_server("--flag", "value") -> Server
  server        one default Server
  tls_dir       TLS material made by deploy/make-tls.sh (session-scoped)

Every Server is stopped at teardown with SIGTERM and must exit 0 within
5 s; ASan/LSan findings make the exit status nonzero, and the captured
stderr is shown in the failure.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import types
import urllib.request

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import rawh2  # noqa: E402  (needs the path above)
from helpers import REPO, build_dir  # noqa: E402


# --- Generated protobuf modules ---------------------------------------------

# Protos under proto/grpc/ would generate a python package named "grpc" that
# shadows grpcio, so they are copied under std/ first.  (Reflection is left
# to test_reflection.py, which loads its own copy: the default descriptor
# pool refuses a second file defining the same symbols.)
_STD_PROTOS = {
    "grpc/health/v1/health.proto": "std/health.proto",
}
_PLAIN_PROTOS = [
    "agenthub/testing/v1/echo.proto",
    "compass/v1/frames.proto",
    "compass/v1/services.proto",
]


@pytest.fixture(scope="session")
def pb(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("pb"))
    src = str(tmp_path_factory.mktemp("proto-src"))
    proto_dir = os.path.join(REPO, "proto")
    for orig, copy in _STD_PROTOS.items():
        os.makedirs(os.path.join(src, os.path.dirname(copy)), exist_ok=True)
        shutil.copy(os.path.join(proto_dir, orig), os.path.join(src, copy))
    subprocess.run(["protoc", "-I" + src, "--python_out=" + out] + list(_STD_PROTOS.values()),
                   check=True)
    plain = [p for p in _PLAIN_PROTOS if os.path.exists(os.path.join(proto_dir, p))]
    subprocess.run(["protoc", "-I" + proto_dir, "--python_out=" + out] + plain, check=True)
    sys.path.insert(0, out)
    import importlib
    ns = types.SimpleNamespace()
    ns.health = importlib.import_module("std.health_pb2")
    ns.echo = importlib.import_module("agenthub.testing.v1.echo_pb2")
    # Others on demand, e.g. pb.load("compass.v1.services_pb2").
    ns.load = importlib.import_module
    return ns


# --- TLS material -----------------------------------------------------------

@pytest.fixture(scope="session")
def tls_dir(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("tls"))
    subprocess.run([os.path.join(REPO, "deploy", "make-tls.sh"), out], check=True,
                   stdout=subprocess.DEVNULL)
    files = types.SimpleNamespace(dir=out)
    for name in ("server.crt", "server.key", "ca.crt", "ca.key", "client.crt", "client.key"):
        path = os.path.join(out, name)
        assert os.path.exists(path), "make-tls.sh did not write " + name
        setattr(files, name.replace(".", "_"), path)
    return files


# --- The server -------------------------------------------------------------

LISTEN_RE = re.compile(r"^agenthubd: listening (public|runner|metrics) (\S+)$")
START_TIMEOUT = 15.0
STOP_TIMEOUT = 5.0


def parse_metrics(text):
    """Prometheus text -> {"name{labels}": value}; unlabelled series by name."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, value = line.rpartition(" ")
        out[key] = float(value)
    return out


class Server:
    """One agenthubd process with every listener on port 0."""

    def __init__(self, workdir, flags=(), runner=True, metrics=True, env=None):
        self.workdir = workdir
        self.binary = os.path.join(build_dir(), "agenthubd")
        assert os.access(self.binary, os.X_OK), "no agenthubd in " + build_dir()
        self.args = [self.binary, "--db", os.path.join(workdir, "db"),
                     "--listen", "127.0.0.1:0"]
        if runner:
            self.args += ["--runner-listen", "127.0.0.1:0"]
        if metrics:
            self.args += ["--metrics-listen", "127.0.0.1:0"]
        self.args += list(flags)
        self.stderr_path = os.path.join(workdir, "agenthubd.stderr")
        self._stderr = open(self.stderr_path, "wb")
        full_env = dict(os.environ)
        full_env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        full_env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        full_env.update(env or {})
        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self._stderr,
                                     env=full_env, cwd=workdir)
        self.addresses = {}
        self._closers = []
        self.stopped = False
        self.returncode = None
        self._wait_listening(runner, metrics)

    def stderr(self):
        with open(self.stderr_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def _wait_listening(self, runner, metrics):
        want = {"public"}
        if runner:
            want.add("runner")
        if metrics:
            want.add("metrics")
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            for line in self.stderr().splitlines():
                m = LISTEN_RE.match(line)
                if m:
                    self.addresses[m.group(1)] = m.group(2)
            if want <= set(self.addresses):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.01)
        self.proc.kill()
        self.proc.wait()
        pytest.fail("agenthubd did not print its listening lines (rc=%s):\n%s"
                    % (self.proc.returncode, self.stderr()))

    @property
    def public(self):
        return self.addresses["public"]

    @property
    def runner(self):
        return self.addresses["runner"]

    @property
    def metrics_addr(self):
        return self.addresses["metrics"]

    @property
    def pid(self):
        return self.proc.pid

    # Clients made through the server are closed before it is stopped, so
    # the drain does not wait for them.
    def track(self, closeable):
        self._closers.append(closeable.close)
        return closeable

    def channel(self, door="public", options=None):
        import grpc
        return self.track(grpc.insecure_channel(self.addresses[door], options=options or []))

    def raw(self, door="public", **kwargs):
        return self.track(rawh2.RawH2.connect(self.addresses[door], **kwargs))

    def http_get(self, path, timeout=5.0):
        """(status, body) of GET http://metrics/PATH."""
        url = "http://%s%s" % (self.metrics_addr, path)
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def metrics(self):
        status, body = self.http_get("/metrics")
        assert status == 200, body
        return parse_metrics(body)

    def wait_metric(self, key, predicate, timeout=10.0):
        """Polls /metrics until PREDICATE(value of KEY) holds; returns the value."""
        deadline = time.monotonic() + timeout
        value = None
        while True:
            value = self.metrics().get(key)
            if value is not None and predicate(value):
                return value
            if time.monotonic() > deadline:
                pytest.fail("metric %s never satisfied the condition (last %r)" % (key, value))
            time.sleep(0.02)

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

    def wait_exit(self, timeout=STOP_TIMEOUT):
        """Waits for exit; returns (returncode, seconds waited); None rc on timeout."""
        start = time.monotonic()
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
        return rc, time.monotonic() - start

    def stop(self):
        """SIGTERM; asserts a clean exit (status 0, no sanitizer report) in 5 s."""
        if self.stopped:
            return self.returncode
        self.stopped = True
        self.close_clients()
        self.terminate()
        rc, waited = self.wait_exit()
        if rc is None:
            self.proc.kill()
            self.proc.wait()
        self._stderr.close()
        self.returncode = rc
        err = self.stderr()
        assert rc is not None, "agenthubd did not exit within %.0f s of SIGTERM:\n%s" % (
            STOP_TIMEOUT, err)
        assert rc == 0, "agenthubd exited %d:\n%s" % (rc, err)
        for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
            assert marker not in err, "sanitizer report in agenthubd stderr:\n" + err
        return rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._stderr.close()
        self.stopped = True


@pytest.fixture
def start_server(tmp_path):
    servers = []

    def start(*flags, runner=True, metrics=True, env=None):
        workdir = tempfile.mkdtemp(dir=str(tmp_path), prefix="agenthubd-")
        s = Server(workdir, flags, runner=runner, metrics=metrics, env=env)
        servers.append(s)
        return s

    yield start
    failures = []
    for s in servers:
        try:
            s.stop()
        except AssertionError as e:
            failures.append(str(e))
        finally:
            if not s.stopped:
                s.kill()
    if failures:
        pytest.fail("\n\n".join(failures))


@pytest.fixture
def server(start_server):
    return start_server()
