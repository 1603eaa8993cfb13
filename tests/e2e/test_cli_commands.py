"""agenthub CLI commands against a live agenthubd: whoami, list, show,
session open/close, terminal open, emit, log (human, --json, --tail,
--follow), events, skip-batch, send, exit statuses and --help."""

import json
import signal
import subprocess
import threading
import time

import pytest

from cli_harness import AGENTHUB, server, wait_for  # noqa: F401  (fixture)


def open_session(server, native_id, token="t-agent-1"):
    terminal = server.terminal()
    sid = server.ok("session", "open", f"@{terminal}", "--provider", "claude", "--native-id",
                    native_id, token=token).strip()
    assert sid
    return terminal, sid


def test_help_on_every_command(server):
    for args in (["--help"], ["session", "--help"], ["session", "open", "--help"],
                 ["session", "close", "--help"], ["terminal", "--help"], ["emit", "--help"],
                 ["log", "--help"], ["show", "--help"], ["list", "--help"],
                 ["events", "--help"], ["skip-batch", "--help"], ["send", "--help"],
                 ["whoami", "--help"], ["hook", "--help"], ["hook", "claude", "--help"],
                 ["mcp", "--help"]):
        r = server.cli(*args)
        assert r.returncode == 0, (args, r.stderr)
        assert "usage:" in r.stdout, args


def test_usage_errors_exit_2(server):
    for args in ([], ["nope"], ["emit", "x"], ["log"], ["log", "s", "--tail", "zero"],
                 ["session", "open", "12"], ["session", "open", "@x", "--provider", "p"],
                 ["show", "a", "b"], ["list", "--bogus"], ["emit", "s", "--type", "stop",
                                                            "--data", "[1]"]):
        r = server.cli(*args)
        assert r.returncode == 2, (args, r.returncode, r.stderr)


def test_whoami(server):
    assert server.ok("whoami", token="t-alice").strip() == "alice"
    assert server.ok("whoami", token="t-agent-1").strip() == "agent-1"
    # Flags override the environment.
    assert server.ok("whoami", "--token", "t-bob", token="t-alice").strip() == "bob"
    assert server.ok("whoami", "--addr", server.public, token="t-bob").strip() == "bob"


def test_server_error_exit_1_with_status_name(server):
    r = server.cli("whoami", token="t-wrong")
    assert r.returncode == 1
    assert r.stderr.startswith("agenthub: UNAUTHENTICATED: ")
    r = server.cli("show", "no-such-session", token="t-alice")
    assert r.returncode == 1
    assert r.stderr.startswith("agenthub: NOT_FOUND: ") or \
        r.stderr.startswith("agenthub: PERMISSION_DENIED: "), r.stderr
    r = server.cli("whoami", "--addr", "127.0.0.1:1", token="t-alice")
    assert r.returncode == 1
    assert r.stderr.startswith("agenthub: UNAVAILABLE: ")


def test_session_open_emit_log_show_list_close(server):
    terminal, sid = open_session(server, "cmd-1")
    # Reopening the same (provider, native_id) reuses the session.
    again = server.ok("session", "open", f"@{terminal}", "--provider", "claude",
                      "--native-id", "cmd-1", "--json")
    assert json.loads(again)["session_id"] == sid

    assert server.ok("emit", sid, "--type", "prompt", "--data", '{"length":3}').strip() == "1"
    seq = int(server.ok("emit", "claude:cmd-1", "--type", "tool_start", "--data", "-",
                        input='{"tool_name":"Read"}').strip())
    assert seq >= 2
    r = server.cli("emit", sid, "--type", "bogus")
    assert r.returncode == 1 and "INVALID_ARGUMENT" in r.stderr and "RECORD_INVALID" in r.stderr

    frames = server.log_json(sid)
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
    for f in frames:
        assert set(f) == {"seq", "ts_ms", "type", "data"}
        assert f["ts_ms"] > 1_600_000_000_000
    kinds = [(f["type"], f["data"]) for f in frames]
    assert ("prompt", {"length": 3}) in kinds
    assert ("tool_start", {"tool_name": "Read"}) in kinds
    assert ("state", {"state": "working"}) in kinds
    # provider:native_id resolves to the same log; alice (channel member) sees it.
    assert server.log_json("claude:cmd-1") == frames
    assert server.log_json(sid, "t-alice") == frames
    # --tail N: the last N frames.
    assert server.log_json(sid, "t-agent-1", "--tail", "1") == frames[-1:]

    human = server.ok("log", sid).splitlines()
    assert len(human) == len(frames)
    assert " prompt " in human[0] and '{"length":3}' in human[0]
    assert human[0].split()[1] == "1"

    show = server.ok("show", "claude:cmd-1")
    assert sid in show and "working" in show and "cmd-1" in show
    shown = json.loads(server.ok("show", sid, "--json"))
    assert shown["state"] == "working" and shown["provider"] == "claude"
    assert shown["last_seq"] == frames[-1]["seq"]
    listed = [json.loads(line) for line in server.ok("list", "--json").splitlines()]
    assert sid in [row["session_id"] for row in listed]
    assert "SESSION" in server.ok("list").splitlines()[0]
    # carol is not in chan-a: the session is invisible to her.
    carol = [json.loads(line) for line in server.ok("list", "--json", token="t-carol").splitlines()]
    assert sid not in [row["session_id"] for row in carol]

    server.ok("session", "close", sid)
    assert json.loads(server.ok("show", sid, "--json"))["state"] == "stopped"
    r = server.cli("emit", sid, "--type", "stop")
    assert r.returncode == 1 and "FAILED_PRECONDITION" in r.stderr


def test_list_and_show_mark_ended_sessions(server):
    _, live = open_session(server, "ended-live")
    _, gone = open_session(server, "ended-gone")
    server.ok("emit", gone, "--type", "prompt", "--data", '{"length":1}')
    server.ok("session", "close", gone)

    def ids(*flags):
        rows = [json.loads(line) for line in server.ok("list", "--json", *flags).splitlines()]
        return {row["session_id"]: row["ended"] for row in rows}

    everything = ids()
    assert everything[live] is False and everything[gone] is True
    assert live in ids("--live") and gone not in ids("--live")
    assert gone in ids("--ended") and live not in ids("--ended")
    table = server.ok("list", "--ended").splitlines()
    assert table[0].split()[:3] == ["SESSION", "STATE", "ENDED"]
    assert [line.split()[:3] for line in table[1:] if line.startswith(gone)] == \
        [[gone, "stopped", "ended"]]
    assert "(ended" in server.ok("show", gone) and "(ended" not in server.ok("show", live)
    assert json.loads(server.ok("show", gone, "--json"))["ended"] is True
    assert server.cli("list", "--live", "--ended").returncode == 2


def test_session_close_by_resource_id_session_id_or_native_id(server):
    terminal = server.terminal()
    opened = json.loads(server.ok("session", "open", f"@{terminal}", "--provider", "claude",
                                  "--native-id", "cmd-2", "--json"))
    server.ok("session", "close", f"#{opened['resource_id']}")
    assert json.loads(server.ok("show", opened["session_id"], "--json"))["state"] == "stopped"

    _, sid = open_session(server, "cmd-3")
    server.ok("session", "close", "claude:cmd-3")
    assert json.loads(server.ok("show", sid, "--json"))["state"] == "stopped"
    r = server.cli("session", "close", "claude:no-such-session")
    assert r.returncode == 1 and "NOT_FOUND" in r.stderr


def test_terminal_over_runner_door(server):
    out = server.ok("terminal", "open", "ctr-1", "--runner", token="t-runner-1")
    assert int(out) > 0
    r = server.cli("terminal", "open", "ctr-1", token="t-alice")
    assert r.returncode == 1 and "PERMISSION_DENIED" in r.stderr


def test_log_follow_sees_live_frames_and_ends_with_the_session(server):
    terminal, sid = open_session(server, "follow-1")
    server.ok("emit", sid, "--type", "prompt", "--data", '{"length":1}')
    follower = subprocess.Popen([str(AGENTHUB), "log", sid, "--follow", "--json"],
                                env=server.env("t-alice"), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    try:
        first = json.loads(follower.stdout.readline())
        assert first["type"] == "prompt"
        server.ok("emit", sid, "--type", "tool_start", "--data", '{"tool_name":"Grep"}')
        server.ok("emit", sid, "--type", "session_end", "--data", '{"reason":"exit"}')
        server.ok("session", "close", sid)
        out, err = follower.communicate(timeout=20)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    assert follower.returncode == 0, err
    types = [json.loads(line)["type"] for line in out.splitlines()]
    assert "tool_start" in types and "session_end" in types


def test_log_without_follow_exits_at_live_edge(server):
    _, sid = open_session(server, "edge-1")
    for i in range(5):
        server.ok("emit", sid, "--type", "tool_end", "--data", json.dumps({"tool_name": f"T{i}"}))
    start = time.monotonic()
    frames = server.log_json(sid)
    assert time.monotonic() - start < 10
    assert [f["data"].get("tool_name") for f in frames if f["type"] == "tool_end"] == \
        [f"T{i}" for i in range(5)]


def test_events_bus(server):
    _, sid = open_session(server, "events-1")
    # The snapshot (server_status; the session has no status yet), then live.
    follower = subprocess.Popen([str(AGENTHUB), "events", "--json", "--limit", "3"],
                                env=server.env("t-alice"), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        server.ok("emit", sid, "--type", "prompt", "--data", '{"length":9}')
        out, err = follower.communicate(timeout=20)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    assert follower.returncode == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    assert len(events) == 3
    assert events[0]["type"] == "server_status" and events[0]["data"] == {"state": "READY"}
    assert events[0]["seq"] < min(e["seq"] for e in events[1:])
    events = events[1:]
    assert all(e["session_id"] == sid for e in events)
    assert {"agent_record", "agent_session_status"} == {e["type"] for e in events}
    record = next(e for e in events if e["type"] == "agent_record")
    assert record["data"] == {"type": "prompt", "data": {"length": 9}}
    # Resuming from a seq of this boot replays what followed it.
    first = min(events, key=lambda e: e["seq"])
    out = server.ok("events", "--since", first["seq"] - 1, "--epoch", first["epoch"], "--json",
                    "--limit", "2", token="t-alice", timeout=20)
    assert [json.loads(line)["seq"] for line in out.splitlines()] == sorted(e["seq"] for e in events)
    # A resume point of another boot: resync_required, exit 0.
    out = server.ok("events", "--since", "1", "--epoch", "1", "--json", token="t-alice",
                    timeout=20)
    assert json.loads(out.splitlines()[0])["type"] == "resync_required"


def test_skip_batch_and_send_reach_the_server(server):
    # No Runner hosts ctr-1 in this test: the server says so, the CLI exits 1
    # with the status name, after resolving the session.
    for args in (["skip-batch", "sess-1"], ["send", "sess-1", "hello"]):
        r = server.cli(*args, token="t-alice")
        assert r.returncode == 1
        assert r.stderr.startswith("agenthub: UNAVAILABLE: "), r.stderr
    # bob is a member but not the owner.
    r = server.cli("send", "sess-1", "hello", token="t-bob")
    assert r.returncode == 1 and r.stderr.startswith("agenthub: "), r.stderr
    r = server.cli("skip-batch", "claude:none", token="t-alice")
    assert r.returncode == 1 and "NOT_FOUND" in r.stderr


def test_log_follow_survives_a_lag_drop(tmp_path):
    """A follower stopped while ~20 MB of records go by is dropped for lag
    (the server counts it) and resumes from the agenthub-last-seq trailer:
    it prints every seq exactly once."""
    from cli_harness import AGENTHUBD, Server, append_records
    if not AGENTHUBD.exists():
        pytest.skip("not built")
    srv = Server(tmp_path, extra=["--subscriber-buffer-bytes", "65536",
                                  "--agent-log-bytes", str(256 << 20)], metrics=True)
    try:
        terminal = srv.terminal()
        sid = srv.ok("session", "open", f"@{terminal}", "--provider", "claude",
                     "--native-id", "lag-1").strip()
        follower = subprocess.Popen([str(AGENTHUB), "log", sid, "--follow", "--json"],
                                    env=srv.env("t-alice"), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
        lines = []
        reader = threading.Thread(
            target=lambda: lines.extend(json.loads(line) for line in follower.stdout),
            daemon=True)
        reader.start()
        srv.ok("emit", sid, "--type", "prompt", "--data", '{"length":1}')
        assert wait_for(lambda: len(lines) >= 1)
        follower.send_signal(signal.SIGSTOP)
        pad = "x" * 15000
        for i in range(350):
            append_records(srv.public, "t-agent-1",
                           [{"type": "provider_raw", "data": {"i": i * 4 + k, "pad": pad}}
                            for k in range(4)], session_id=sid)
        assert srv.metric("agenthub_subscriber_lag_drops_total") >= 1, "no lag drop happened"
        follower.send_signal(signal.SIGCONT)
        # The follower catches up through a resubscription before the session ends.
        assert wait_for(lambda: any(f["type"] == "provider_raw" and f["data"]["i"] == 1399
                                    for f in lines[-3:]), timeout=60)
        srv.ok("emit", sid, "--type", "session_end", "--data", '{"reason":"exit"}')
        srv.ok("session", "close", sid)
        assert follower.wait(30) == 0, follower.stderr.read()
        reader.join(10)
        seqs = [f["seq"] for f in lines]
        assert seqs == list(range(1, len(seqs) + 1)), "gap or repeat in the follow"
        raw = [f["data"]["i"] for f in lines if f["type"] == "provider_raw"]
        assert raw == list(range(1400))
        assert any(f["type"] == "session_end" for f in lines)
    finally:
        srv.stop()


def test_tls_and_ca_flags(tmp_path):
    from cli_harness import AGENTHUBD, Server
    if not AGENTHUBD.exists():
        pytest.skip("not built")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    (tmp_path / "srv").mkdir()
    srv = Server(tmp_path / "srv", extra=["--tls-cert", str(cert), "--tls-key", str(key)])
    try:
        assert srv.ok("whoami", "--tls", "--ca", cert, token="t-alice").strip() == "alice"
        port = srv.public.rsplit(":", 1)[1]
        assert srv.ok("whoami", "--tls", "--ca", cert, "--addr", f"localhost:{port}",
                      token="t-alice").strip() == "alice"
        assert srv.ok("whoami", token="t-alice", AGENTHUB_TLS="1",
                      AGENTHUB_CA=cert).strip() == "alice"
        r = srv.cli("whoami", "--tls", token="t-alice")  # system roots: not trusted
        assert r.returncode == 1 and r.stderr.startswith("agenthub: UNAVAILABLE: ")
        assert "certificate verify failed" in r.stderr
        r = srv.cli("whoami", token="t-alice")  # h2c against a TLS port
        assert r.returncode == 1 and r.stderr.startswith("agenthub: UNAVAILABLE: ")
    finally:
        srv.stop()


def test_follow_stops_when_its_reader_goes_away(server):
    """`agenthub log S --follow | head -1` and `events | head -1` end."""
    _, sid = open_session(server, "pipe-1")
    server.ok("emit", sid, "--type", "prompt", "--data", '{"length":1}')
    for args in (["log", sid, "--follow", "--json"], ["events", "--json"]):
        proc = subprocess.Popen([str(AGENTHUB), *args], env=server.env("t-alice"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            if args[0] == "events":
                time.sleep(0.5)
                server.ok("emit", sid, "--type", "stop")
            proc.stdout.readline()
            proc.stdout.close()
            for _ in range(3):
                server.ok("emit", sid, "--type", "tool_start", "--data", '{"tool_name":"X"}')
            assert proc.wait(10) == 0, proc.stderr.read()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
