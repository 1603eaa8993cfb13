"""Shared fixtures for the agenthub CLI end-to-end suites (test_cli_*.py).

Starts agenthubd through tests/e2e/harness.py on a fresh store provisioned
from deploy/demo-world.json, and runs the `agenthub` binary from
$AGENTHUB_BUILD (default build-asan) against it.  Tokens of the demo world: t-admin (admin),
t-alice (owns sess-1), t-agent-1 (agent account of ctr-1: a producer),
t-runner-1 (hosts ctr-1).
"""

import json
import os
import subprocess
import tempfile

import pytest

import harness
from harness import AGENTHUB, AGENTHUBD, BUILD, ROOT, WORLD, free_port, wait_for  # noqa: F401


class Server(harness.Server):
    """harness.Server on the demo world with the public and Runner doors
    (metrics=True adds the metrics door); a store and ports that outlive
    stop() and start(); cli() and ok() run the `agenthub` CLI against it."""

    def __init__(self, tmp, extra=(), metrics=False, **kwargs):
        doors = ("public", "runner") + (("metrics",) if metrics else ())
        kwargs.setdefault("stop_timeout", 10.0)
        super().__init__(world=True, doors=doors, flags=extra, workdir=tmp, **kwargs)

    def env(self, token=None, **extra):
        env = dict(os.environ)
        for name in ("AGENTHUB_TOKEN", "AGENTHUB_TERMINAL_ID", "AGENTHUB_EMIT_RAW",
                     "AGENTHUB_SPOOL", "AGENTHUB_TLS", "AGENTHUB_CA"):
            env.pop(name, None)
        env["AGENTHUB_ADDR"] = self.public
        env["AGENTHUB_RUNNER_ADDR"] = self.runner_addr
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


def pb():
    """(frames, services) of harness.protos()."""
    p = harness.protos()
    return p.frames, p.services


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
        stream = call(services.SubscribeAgentSessionRequest(session_id=session_id, tail=tail,
                                                            agenthub_events=True),
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
    srv = Server(tmp)
    try:
        yield srv
    finally:
        srv.stop()

