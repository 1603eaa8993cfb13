"""Shared fixtures for the agenthub CLI end-to-end suites (test_cli_*.py).

Starts agenthubd from $AGENTHUB_BUILD (default build-asan) on a fresh store
provisioned from deploy/demo-world.json with `agenthub admin import`, and runs
the `agenthub` binary against it.  Tokens of the demo world: t-admin (admin),
t-alice (owns sess-1), t-agent-1 (agent account of ctr-1: a producer),
t-runner-1 (hosts ctr-1).
"""

import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("AGENTHUB_BUILD", ROOT / "build-asan"))
AGENTHUBD = BUILD / "agenthubd"
AGENTHUB = BUILD / "agenthub"
WORLD = ROOT / "deploy" / "demo-world.json"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One agenthubd process on a store that outlives restarts."""

    def __init__(self, tmp, extra=()):
        self.tmp = Path(tmp)
        self.db = self.tmp / "agenthub.db"
        self.extra = list(extra)
        self.proc = None
        self.public = None
        self.runner = None
        self.lines = []
        subprocess.run([str(AGENTHUB), "admin", "--db", str(self.db), "import", str(WORLD)],
                       check=True, stdout=subprocess.DEVNULL)

    def start(self, public="127.0.0.1:0", runner="127.0.0.1:0"):
        self.lines = []
        self.proc = subprocess.Popen(
            [str(AGENTHUBD), "--db", str(self.db), "--listen", public, "--runner-listen", runner]
            + self.extra,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        found = {}
        ready = threading.Event()
        wanted = {"public", "runner"} | ({"metrics"} if "--metrics-listen" in self.extra else set())

        def drain(proc=self.proc, lines=self.lines):
            for line in proc.stderr:
                lines.append(line)
                if line.startswith("agenthubd: listening "):
                    parts = line.split()
                    found[parts[2]] = parts[3]
                    if wanted <= set(found):
                        ready.set()
            ready.set()

        threading.Thread(target=drain, daemon=True).start()
        assert ready.wait(30) and "public" in found, \
            "agenthubd did not listen:\n" + "".join(self.lines)
        self.public = found["public"]
        self.runner = found["runner"]
        self.metrics = found.get("metrics")
        return self

    def stop(self):
        """SIGTERM; asserts a clean exit 0."""
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError("agenthubd did not exit within 10 s of SIGTERM")
        assert rc == 0, f"agenthubd exited {rc}:\n" + "".join(self.lines[-30:])

    def env(self, token=None, **extra):
        env = dict(os.environ)
        for name in ("AGENTHUB_TOKEN", "AGENTHUB_TERMINAL_ID", "AGENTHUB_EMIT_RAW",
                     "AGENTHUB_SPOOL", "AGENTHUB_TLS", "AGENTHUB_CA"):
            env.pop(name, None)
        env["AGENTHUB_ADDR"] = self.public
        env["AGENTHUB_RUNNER_ADDR"] = self.runner
        env["XDG_STATE_HOME"] = str(self.tmp / "state")
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "detect_leaks=1")
        if token:
            env["AGENTHUB_TOKEN"] = token
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def cli(self, *args, token="t-agent-1", input=None, timeout=30, **extra):
        """Runs `agenthub ARGS`; returns the CompletedProcess (text)."""
        return subprocess.run([str(AGENTHUB), *map(str, args)], env=self.env(token, **extra),
                              input=input, capture_output=True, text=True, timeout=timeout)

    def ok(self, *args, **kw):
        """Runs `agenthub ARGS`, asserts exit 0, returns stdout."""
        r = self.cli(*args, **kw)
        assert r.returncode == 0, f"agenthub {args} exited {r.returncode}: {r.stderr}"
        return r.stdout

    def terminal(self, container="ctr-1"):
        """Registers a terminal (as the admin); returns its resource id."""
        return int(self.ok("terminal", "open", container, token="t-admin").strip())

    def log_json(self, session, token="t-agent-1", *more):
        out = self.ok("log", session, "--json", *more, token=token)
        return [json.loads(line) for line in out.splitlines() if line.strip()]


_PB = {}


def pb():
    """compass.v1 message modules generated with protoc (cached): (frames, services)."""
    if not _PB:
        import importlib
        import sys
        out = Path(tempfile.mkdtemp(prefix="agenthub-cli-pb-"))
        subprocess.run(["protoc", "-I", str(ROOT / "proto"), "--python_out", str(out),
                        "compass/v1/frames.proto", "compass/v1/services.proto"], check=True)
        sys.path.insert(0, str(out))
        _PB["frames"] = importlib.import_module("compass.v1.frames_pb2")
        _PB["services"] = importlib.import_module("compass.v1.services_pb2")
    return _PB["frames"], _PB["services"]


def append_records(address, token, records, session_id="", provider="", native_id=""):
    """AppendResourceOutput of RECORDS (dicts) in one call with python-grpc."""
    import grpc
    _, services = pb()
    body = "".join(json.dumps(r) + "\n" for r in records).encode()
    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary(
            "/compass.v1.ResourceService/AppendResourceOutput",
            request_serializer=services.AppendResourceOutputRequest.SerializeToString,
            response_deserializer=services.AppendResourceOutputResponse.FromString)
        return call(services.AppendResourceOutputRequest(
            bytes=body, session_id=session_id, provider=provider, native_id=native_id),
            metadata=[("authorization", f"Bearer {token}")], timeout=10)


def subscribe_frames(address, token, session_id, tail=1 << 31, timeout=5.0):
    """The retained frames of SESSION_ID via python-grpc SubscribeAgentSession
    (reads until TIMEOUT passes without a frame)."""
    import grpc
    frames_pb, services = pb()
    frames = []
    with grpc.insecure_channel(address) as channel:
        call = channel.unary_stream(
            "/compass.v1.CompassService/SubscribeAgentSession",
            request_serializer=services.SubscribeAgentSessionRequest.SerializeToString,
            response_deserializer=frames_pb.AgentSessionFrame.FromString)
        stream = call(services.SubscribeAgentSessionRequest(session_id=session_id, tail=tail),
                      metadata=[("authorization", f"Bearer {token}")], timeout=timeout)
        try:
            for frame in stream:
                frames.append(frame)
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                raise
    return frames


@pytest.fixture(scope="module")
def server():
    if not AGENTHUBD.exists() or not AGENTHUB.exists():
        pytest.skip(f"{BUILD} is not built")
    tmp = tempfile.mkdtemp(prefix="agenthub-cli-")
    srv = Server(tmp).start()
    try:
        yield srv
    finally:
        srv.stop()


def wait_for(predicate, timeout=10.0, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return predicate()
