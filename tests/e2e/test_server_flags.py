"""agenthubd's flag table, from the outside: every numeric flag refuses a
value out of its range (on the command line and from its environment
variable) with exit 2 and a message naming the flag and the range, instead
of wrapping it; a variable sets its flag and the command line beats it; and
docs/configuration.md's table is the one --help prints.

The flags come from `agenthubd --help` (tools/flags_doc.py reads it), so a
new flag is covered without touching this file."""
import os
import subprocess
import sys

import pytest

from harness import AGENTHUBD, ROOT, Server

sys.path.insert(0, str(ROOT / "tools"))
import flags_doc  # noqa: E402

BASE = ["--db", "/nonexistent/hub.db", "--listen", "127.0.0.1:0"]


def clean_env(**extra):
    """The environment without any AGENTHUB_ variable, plus EXTRA."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTHUB_")}
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    env.update(extra)
    return env


def run(*args, **env):
    return subprocess.run([str(AGENTHUBD), *args], capture_output=True, text=True, timeout=30,
                          env=clean_env(**env))


@pytest.fixture(scope="module")
def flags():
    if not AGENTHUBD.exists():
        pytest.skip("%s is not built" % AGENTHUBD)
    found = flags_doc.parse_help(flags_doc.agenthubd_help(str(AGENTHUBD)))
    assert len(found) > 30, "--help lists too few flags: %r" % [f["name"] for f in found]
    return found


def numeric(flags):
    return [f for f in flags if f["max"] is not None]


def bad_values(flag):
    """(value, the message's tail) pairs every numeric flag must refuse."""
    rng = "(%d..%d)" % (flag["min"], flag["max"])
    cases = [(str(flag["max"] + 1), "%d is out of range %s" % (flag["max"] + 1, rng)),
             ("18446744073709551616", "18446744073709551616 is out of range %s" % rng),
             ("-1", "-1 is out of range %s" % rng),
             ("12abc", "expected a number in %d..%d, got '12abc'" % (flag["min"], flag["max"]))]
    if flag["min"] > 0:
        cases.append((str(flag["min"] - 1), "%d is out of range %s" % (flag["min"] - 1, rng)))
    return cases


def test_help_names_a_variable_for_every_flag_but_the_actions(flags):
    for f in flags:
        if f["name"] in ("help", "version"):
            assert f["env"] is None
        else:
            assert f["env"] == "AGENTHUB_" + f["name"].upper().replace("-", "_"), f
    assert {"max-concurrent-streams", "idle-timeout-ms", "max-connections",
            "cluster-replicas"} <= {f["name"] for f in numeric(flags)}


def test_every_numeric_flag_refuses_out_of_range_values_naming_flag_and_range(flags):
    failures = []
    for f in numeric(flags):
        for value, tail in bad_values(f):
            r = run(*BASE, "--" + f["name"], value)
            want = "agenthubd: --%s: %s" % (f["name"], tail)
            if r.returncode != 2 or want not in r.stderr or "listening" in r.stderr:
                failures.append((f["name"], value, r.returncode, r.stderr.strip()))
    assert not failures, failures


def test_every_numeric_variable_refuses_out_of_range_values_naming_the_variable(flags):
    failures = []
    for f in numeric(flags):
        value, tail = bad_values(f)[0]
        r = run(*BASE, **{f["env"]: value})
        want = "agenthubd: %s (--%s): %s" % (f["env"], f["name"], tail)
        if r.returncode != 2 or want not in r.stderr:
            failures.append((f["env"], value, r.returncode, r.stderr.strip()))
    assert not failures, failures


def test_the_bounds_are_the_values_themselves(flags):
    """The largest value of a 32-bit flag is taken (the server starts), one
    more is refused: nothing in between wraps."""
    r = run(*BASE, "--max-concurrent-streams", "4294967296")
    assert r.returncode == 2
    assert r.stderr == ("agenthubd: --max-concurrent-streams: 4294967296 is out of range "
                        "(1..4294967295)\n")
    r = run(*BASE, "--idle-timeout-ms", "4294967297")
    assert r.returncode == 2 and "--idle-timeout-ms: 4294967297 is out of range" in r.stderr


def test_a_variable_sets_its_flag_and_the_command_line_beats_it(start_server):
    env = {"AGENTHUB_SESSION_LOG_BUDGET_BYTES": "8388608"}
    from_env = start_server(env=env)
    assert from_env.metric("agenthub_session_log_budget_bytes") == 8388608
    both = start_server("--session-log-budget-bytes", "16777216", env=env)
    assert both.metric("agenthub_session_log_budget_bytes") == 16777216


def test_a_variable_counts_in_the_checks_across_flags():
    r = run(*BASE, "--log", "memory", AGENTHUB_CLUSTER="nats://127.0.0.1:1")
    assert r.returncode == 2 and "are for a single node" in r.stderr
    r = run("--listen", "127.0.0.1:0", AGENTHUB_DB="")  # empty: unset
    assert r.returncode == 2 and "--db and --listen are required" in r.stderr
    r = run(*BASE, AGENTHUB_WEB="maybe")
    assert r.returncode == 2
    assert "agenthubd: AGENTHUB_WEB (--web): expected on or off, got 'maybe'" in r.stderr


def test_a_variable_with_a_path_is_checked_like_its_flag(tmp_path):
    r = run("--db", str(tmp_path / "hub.db"), "--listen", "127.0.0.1:0",
            AGENTHUB_BLOB_DIR=str(tmp_path / "missing"))
    assert r.returncode == 2 and r.stderr.startswith("agenthubd: --blob-dir ")


def test_help_and_version_ignore_bad_variables():
    r = run("--help", AGENTHUB_MAX_CONNECTIONS="0")
    assert r.returncode == 0 and "--max-connections N" in r.stdout
    r = run("--version", AGENTHUB_MAX_CONNECTIONS="0")
    assert r.returncode == 0 and r.stdout.startswith("agenthubd ")


def test_the_docs_table_is_what_help_prints(flags):
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "flags_doc.py"), str(AGENTHUBD),
                        "--check", str(ROOT / "docs" / "configuration.md")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_the_harness_keeps_the_shells_variables_from_the_server(tmp_path, monkeypatch):
    """A suite run from a shell that exported AGENTHUB_LOG=memory (say)
    must not change the servers it starts."""
    monkeypatch.setenv("AGENTHUB_SESSION_LOG_BUDGET_BYTES", "8388608")
    s = Server(doors=("public", "metrics"), workdir=tmp_path / "s")
    try:
        assert s.metric("agenthub_session_log_budget_bytes") == 512 * 1024 * 1024
    finally:
        s.stop()
