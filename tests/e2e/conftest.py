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
  nats_cluster  three JetStream nats-servers in one cluster (harness.NatsCluster)

Servers are tests/e2e/harness.py's Server: every one is stopped at
teardown with SIGTERM and must exit 0 within 5 s with no sanitizer report;
the captured stderr is shown in the failure.
"""
import os
import subprocess
import sys
import types

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402  (needs the path above)
from harness import REPO, parse_metrics  # noqa: E402,F401  (parse_metrics: for suites)


@pytest.fixture(scope="session")
def pb():
    """The generated modules (harness.protos()): pb.health, pb.echo,
    pb.frames, pb.services, pb.load("compass.v1.services_pb2")."""
    return harness.protos()


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

Server = harness.Server


@pytest.fixture
def start_server(tmp_path):
    """start_server("--flag", "value", runner=True, metrics=True, env=None,
    world=None) -> Server; every one is stopped (exit 0) at teardown."""
    servers = []

    def start(*flags, runner=True, metrics=True, env=None, world=None, **kwargs):
        doors = ("public",) + (("runner",) if runner else ()) + (("metrics",) if metrics else ())
        workdir = tmp_path / ("agenthubd-%d" % len(servers))
        s = harness.Server(world=world, doors=doors, flags=flags, env=env, workdir=workdir,
                           **kwargs)
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


@pytest.fixture
def nats_cluster():
    """Three nats-servers with JetStream routed into one cluster on loopback
    ports (harness.NatsCluster); always stopped at teardown."""
    with harness.nats_cluster() as cluster:
        yield cluster
