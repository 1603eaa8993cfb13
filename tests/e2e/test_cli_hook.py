"""`agenthub hook claude` against a live agenthubd, fed the JSON shapes Claude
Code sends for each hook event; checks the record that arrived and that no
prompt text or tool input reached the server; the spool across a server
restart, at scale, under its cap and with hooks killed mid-delivery; the 2 s
bound; the ReportAgentState fallback."""

import json
import os
import random
import re
import signal
import socket
import subprocess
import threading
import time
import uuid
from concurrent import futures
from pathlib import Path

import pytest

from cli_harness import (AGENTHUB, Server, free_port, pb, server,  # noqa: F401  (fixture)
                         subscribe_frames, wait_for)

SECRET_PROMPT = "please refactor the s3cr3t-prompt module"
SECRET_INPUT = "cat /home/u/s3cr3t-tool-input.txt"
SECRET_OUTPUT = "s3cr3t-tool-response"


def base(sid, event, tmp="/tmp"):
    return {"session_id": sid, "transcript_path": f"{tmp}/.claude/projects/p/{sid}.jsonl",
            "cwd": "/work/project", "permission_mode": "default", "hook_event_name": event}


def shapes(sid):
    """Each event as Claude Code sends it."""
    return {
        "SessionStart": dict(base(sid, "SessionStart"), source="startup"),
        "UserPromptSubmit": dict(base(sid, "UserPromptSubmit"), prompt=SECRET_PROMPT),
        "PreToolUse": dict(base(sid, "PreToolUse"), tool_name="Bash",
                           tool_input={"command": SECRET_INPUT, "description": "read"},
                           tool_use_id="toolu_01"),
        "PostToolUse": dict(base(sid, "PostToolUse"), tool_name="Bash",
                            tool_input={"command": SECRET_INPUT},
                            tool_response={"stdout": SECRET_OUTPUT, "stderr": "",
                                           "interrupted": False},
                            tool_use_id="toolu_01"),
        "PermissionRequest": dict(base(sid, "PermissionRequest"), tool_name="Write",
                                  tool_input={"file_path": "/x", "content": SECRET_INPUT},
                                  permission_suggestions=[]),
        "Notification": dict(base(sid, "Notification"),
                             message="Claude needs your permission to use Bash",
                             notification_type="permission_prompt"),
        "Stop": dict(base(sid, "Stop"), stop_hook_active=False),
        "SessionEnd": dict(base(sid, "SessionEnd"), reason="prompt_input_exit"),
    }


class Hooks:
    def __init__(self, server, terminal, spool):
        self.server = server
        self.terminal = terminal
        self.spool = spool

    def fire(self, payload, raw=False, **env):
        extra = {"AGENTHUB_TERMINAL_ID": self.terminal, "AGENTHUB_SPOOL": self.spool}
        if raw:
            extra["AGENTHUB_EMIT_RAW"] = "1"
        extra.update(env)
        text = payload if isinstance(payload, str) else json.dumps(payload)
        start = time.monotonic()
        r = self.server.cli("hook", "claude", input=text, **extra)
        elapsed = time.monotonic() - start
        assert r.returncode == 0, r.stderr
        assert elapsed < 2.0, f"hook took {elapsed:.2f} s"
        assert r.stdout == ""
        return r


@pytest.fixture
def hooks(server, tmp_path):
    return Hooks(server, server.terminal(), tmp_path / "spool.jsonl")


def spool_files(spool):
    """The spool's files in delivery order, each with the offset its pending
    bytes start at: sealed segments (P.<seq>-<offset>) oldest first, then P."""
    spool = Path(spool)
    sealed = []
    for f in spool.parent.iterdir():
        m = re.fullmatch(re.escape(spool.name) + r"\.(\d+)-(\d+)", f.name)
        if m:
            sealed.append((int(m[1]), int(m[2]), f))
    files = [(f, offset) for _, offset, f in sorted(sealed)]
    if spool.exists():
        files.append((spool, 0))
    return files


def spooled(spool):
    """Every op still pending in the spool, in delivery order."""
    ops = []
    for f, offset in spool_files(spool):
        for line in f.read_bytes()[offset:].splitlines():
            if line.strip():
                ops.append(json.loads(line))
    return ops


def spooled_bytes(spool):
    return sum(f.stat().st_size - offset for f, offset in spool_files(spool))


def record_line(name):
    """The record line a spooled tool_start for NAME is sent as."""
    return json.dumps({"type": "tool_start", "data": {"tool_name": name}},
                      separators=(",", ":")) + "\n"


def write_spool(spool, sid, names):
    """Spools one tool_start append per name, straight in the spool format."""
    with open(spool, "a") as f:
        for name in names:
            f.write(json.dumps({"op": "append", "provider": "claude", "native_id": sid,
                                "record": {"type": "tool_start",
                                           "data": {"tool_name": name}}},
                               separators=(",", ":")) + "\n")


def records(server, sid):
    """The record frames of claude:SID as (type, data)."""
    frames = server.log_json(f"claude:{sid}")
    return [(f["type"], f["data"]) for f in frames if f["type"] != "state"]


def assert_no_secrets(server, sid):
    out = server.ok("log", f"claude:{sid}", "--json")
    for secret in (SECRET_PROMPT, "s3cr3t"):
        assert secret not in out
    session_id = json.loads(server.ok("show", f"claude:{sid}", "--json"))["session_id"]
    for frame in subscribe_frames(server.public, "t-alice", session_id, timeout=2):
        assert b"s3cr3t" not in frame.SerializeToString()


def started(hooks):
    sid = str(uuid.uuid4())
    hooks.fire(shapes(sid)["SessionStart"])
    return sid


def test_session_start_opens_the_session(server, hooks):
    sid = started(hooks)
    shown = json.loads(server.ok("show", f"claude:{sid}", "--json"))
    assert shown["provider"] == "claude" and shown["native_id"] == sid
    assert records(server, sid) == [("session_start", {"source": "startup"})]
    # resume / clear / compact reuse the session.
    for source in ("resume", "clear", "compact"):
        hooks.fire(dict(shapes(sid)["SessionStart"], source=source))
    listed = [json.loads(line) for line in server.ok("list", "--json").splitlines()]
    assert [row["session_id"] for row in listed if row["native_id"] == sid] == \
        [shown["session_id"]]
    assert [d["source"] for t, d in records(server, sid)] == \
        ["startup", "resume", "clear", "compact"]


def test_user_prompt_submit_sends_the_length_only(server, hooks):
    sid = started(hooks)
    hooks.fire(shapes(sid)["UserPromptSubmit"])
    assert records(server, sid)[-1] == ("prompt", {"length": len(SECRET_PROMPT)})
    assert json.loads(server.ok("show", f"claude:{sid}", "--json"))["state"] == "working"
    assert_no_secrets(server, sid)


def test_prompt_length_counts_characters(server, hooks):
    sid = started(hooks)
    hooks.fire(dict(shapes(sid)["UserPromptSubmit"], prompt="héllo ✓"))
    assert records(server, sid)[-1] == ("prompt", {"length": 7})


def test_tool_use_sends_the_tool_name_only(server, hooks):
    sid = started(hooks)
    hooks.fire(shapes(sid)["PreToolUse"])
    hooks.fire(shapes(sid)["PostToolUse"])
    assert records(server, sid)[-2:] == [("tool_start", {"tool_name": "Bash"}),
                                         ("tool_end", {"tool_name": "Bash"})]
    assert_no_secrets(server, sid)


def test_permission_request_is_ask_and_blocks(server, hooks):
    sid = started(hooks)
    hooks.fire(shapes(sid)["PermissionRequest"])
    assert records(server, sid)[-1] == ("ask", {"tool_name": "Write"})
    assert json.loads(server.ok("show", f"claude:{sid}", "--json"))["state"] == "blocked"
    assert_no_secrets(server, sid)


@pytest.mark.parametrize("notification_type,kind,state", [
    ("permission_prompt", "permission", "blocked"),
    ("elicitation_dialog", "elicitation", "blocked"),
    ("elicitation_url_dialog", "elicitation_url", "blocked"),
    ("worker_permission_prompt", "worker_permission", "blocked"),
    ("idle_prompt", "idle", None),
])
def test_notification_kinds(server, hooks, notification_type, kind, state):
    sid = started(hooks)
    hooks.fire(dict(shapes(sid)["Notification"], notification_type=notification_type,
                    message="Claude is waiting for your input"))
    assert records(server, sid)[-1] == ("notification", {"kind": kind})
    if state:
        assert json.loads(server.ok("show", f"claude:{sid}", "--json"))["state"] == state
    out = server.ok("log", f"claude:{sid}", "--json")
    assert "waiting for your input" not in out


def test_stop_is_done(server, hooks):
    sid = started(hooks)
    hooks.fire(shapes(sid)["UserPromptSubmit"])
    hooks.fire(shapes(sid)["Stop"])
    assert records(server, sid)[-1] == ("stop", {})
    assert json.loads(server.ok("show", f"claude:{sid}", "--json"))["state"] == "done"


def test_session_end_emits_then_closes(server, hooks):
    sid = started(hooks)
    session_id = json.loads(server.ok("show", f"claude:{sid}", "--json"))["session_id"]
    follower = subprocess.Popen([str(AGENTHUB), "log", session_id, "--follow", "--json"],
                                env=server.env("t-alice"), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        hooks.fire(shapes(sid)["SessionEnd"])
        out, err = follower.communicate(timeout=20)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    assert follower.returncode == 0, err
    frames = [json.loads(line) for line in out.splitlines()]
    assert ("session_end", {"reason": "prompt_input_exit"}) in \
        [(f["type"], f["data"]) for f in frames]
    assert json.loads(server.ok("show", session_id, "--json"))["state"] == "stopped"


def test_session_start_after_session_end_resumes_the_same_session(server, hooks):
    sid = started(hooks)
    session_id = json.loads(server.ok("show", f"claude:{sid}", "--json"))["session_id"]
    hooks.fire(shapes(sid)["SessionEnd"])
    assert json.loads(server.ok("show", session_id, "--json"))["state"] == "stopped"
    # `claude --resume` sends SessionStart for the same session id: nothing
    # it records afterwards may be lost.
    hooks.fire(dict(shapes(sid)["SessionStart"], source="resume"))
    hooks.fire(shapes(sid)["UserPromptSubmit"])
    assert json.loads(server.ok("show", f"claude:{sid}", "--json"))["session_id"] == session_id
    assert records(server, sid)[-2:] == [("session_start", {"source": "resume"}),
                                         ("prompt", {"length": len(SECRET_PROMPT)})]
    assert json.loads(server.ok("show", session_id, "--json"))["state"] == "working"


def test_provider_raw_only_with_emit_raw(server, hooks):
    sid = started(hooks)
    hooks.fire(shapes(sid)["PreToolUse"])
    assert "provider_raw" not in [t for t, _ in records(server, sid)]
    hooks.fire(shapes(sid)["PreToolUse"], raw=True)
    got = records(server, sid)
    # The raw hook first, then what it means (a session_end's raw hook
    # reaches the panes it ends).
    assert got[-2] == ("provider_raw", shapes(sid)["PreToolUse"])
    assert got[-1] == ("tool_start", {"tool_name": "Bash"})


def test_unknown_events_fields_and_garbage_are_ignored(server, hooks):
    sid = started(hooks)
    before = records(server, sid)
    hooks.fire(dict(base(sid, "ConfigChange"), source="project_settings"))
    hooks.fire(dict(base(sid, "SomeEventClaudeCodeAddsLater"), trigger="auto"))
    hooks.fire("not json at all")
    hooks.fire("")
    hooks.fire(json.dumps({"hook_event_name": "Stop"}))  # no session_id
    hooks.fire(dict(shapes(sid)["Stop"], brand_new_field={"x": [1, 2]}, another=7))
    assert records(server, sid) == before + [("stop", {})]


def fire_measured(hooks, payload, hold_open=0.0, **env):
    """Runs one hook fed PAYLOAD (bytes) through a pipe, the writer keeping
    the pipe open HOLD_OPEN s after it; returns (exit code, seconds until
    the hook exited, its peak RSS in KiB).  The peak comes from GNU time
    (a child forked from this big Python process would count its pages)."""
    extra = {"AGENTHUB_TERMINAL_ID": hooks.terminal, "AGENTHUB_SPOOL": hooks.spool}
    extra.update(env)
    peak_file = Path(hooks.spool).parent / "peak-rss"
    p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", str(peak_file),
                          str(AGENTHUB), "hook", "claude"],
                         env=hooks.server.env("t-agent-1", **extra), stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    done = threading.Event()

    def writer():
        try:
            p.stdin.write(payload)
            p.stdin.flush()
            done.wait(hold_open)
            p.stdin.close()
        except (BrokenPipeError, ValueError):
            pass

    start = time.monotonic()
    t = threading.Thread(target=writer)
    t.start()
    code = p.wait(30)
    elapsed = time.monotonic() - start
    done.set()
    t.join()
    return code, elapsed, int(peak_file.read_text().split()[-1])


BIG = 20 << 20


def test_a_20_mib_tool_call_is_recorded_in_little_memory(server, hooks):
    """A PreToolUse whose tool_input is 20 MiB and a PostToolUse whose
    tool_response is as large: each recorded with its tool name, within the
    hook's 2 s, and the hook's peak memory does not grow with the input."""
    sid = started(hooks)
    small = json.dumps(shapes(sid)["PreToolUse"]).encode()
    code, _, small_peak = fire_measured(hooks, small)
    assert code == 0
    pre = dict(shapes(sid)["PreToolUse"], tool_name="Write",
               tool_input={"file_path": "/x", "content": SECRET_INPUT + "x" * BIG})
    code, elapsed, pre_peak = fire_measured(hooks, json.dumps(pre).encode())
    assert code == 0 and elapsed < 2.0
    post = dict(shapes(sid)["PostToolUse"], tool_name="Read",
                tool_response={"content": [SECRET_OUTPUT + "é\u0000" * (BIG // 8)],
                               "n": 12345678901234567890123})
    code, elapsed, post_peak = fire_measured(hooks, json.dumps(post).encode())
    assert code == 0 and elapsed < 2.0
    assert records(server, sid)[-3:] == [("tool_start", {"tool_name": "Bash"}),
                                         ("tool_start", {"tool_name": "Write"}),
                                         ("tool_end", {"tool_name": "Read"})]
    assert_no_secrets(server, sid)
    # Peak RSS (ASan build): what a small hook needs, give or take a few
    # MiB, never the input's 20 MiB.
    print(f"peak RSS: small hook {small_peak} KiB, 20 MiB PreToolUse {pre_peak} KiB, "
          f"20 MiB PostToolUse {post_peak} KiB")
    assert pre_peak < small_peak + 4096 and post_peak < small_peak + 4096
    assert pre_peak < (BIG >> 10)


def test_a_10_mib_prompt_counts_every_character(server, hooks):
    """A UserPromptSubmit with a 10 MiB prompt (escaped: é, ✓, surrogate
    pairs, quotes, newlines): recorded with its exact length in characters."""
    sid = started(hooks)
    code, _, small_peak = fire_measured(hooks,
                                        json.dumps(shapes(sid)["UserPromptSubmit"]).encode())
    assert code == 0
    unit = 'héllo ✓ 😀 "q"\n\t'
    prompt = (unit * (BIG // 2 // len(unit) + 1))[:BIG // 2]
    for ensure_ascii in (True, False):
        payload = json.dumps(dict(shapes(sid)["UserPromptSubmit"], prompt=prompt + SECRET_PROMPT),
                             ensure_ascii=ensure_ascii).encode()
        code, elapsed, peak = fire_measured(hooks, payload)
        assert code == 0 and elapsed < 2.0
        print(f"peak RSS: small prompt {small_peak} KiB, {len(payload)} bytes {peak} KiB")
        assert peak < small_peak + 4096 and peak < len(payload) >> 10
        assert records(server, sid)[-1] == ("prompt",
                                            {"length": len(prompt) + len(SECRET_PROMPT)})
    assert_no_secrets(server, sid)


def test_emit_raw_of_a_large_hook_is_a_marker_with_its_size(server, hooks):
    sid = started(hooks)
    pre = dict(shapes(sid)["PreToolUse"], tool_input={"content": "x" * (1 << 20)})
    payload = json.dumps(pre)
    hooks.fire(payload, raw=True)
    assert records(server, sid)[-2:] == [
        ("provider_raw", {"hook_event_name": "PreToolUse", "truncated": True,
                          "bytes": len(payload)}),
        ("tool_start", {"tool_name": "Bash"})]


def test_a_writer_that_keeps_stdin_open_does_not_hold_the_hook(server, hooks):
    """The whole hook written, stdin left open: the hook stops reading at its
    deadline, records the event, and exits within 2 s.  Half a hook left
    open: nothing is recorded, still within 2 s."""
    sid = started(hooks)
    before = records(server, sid)
    half = json.dumps(dict(shapes(sid)["PreToolUse"], tool_name="Half")).encode()
    code, elapsed, _ = fire_measured(hooks, half[:len(half) // 2], hold_open=10)
    assert code == 0 and elapsed < 2.0
    assert records(server, sid) == before
    whole = json.dumps(dict(shapes(sid)["PreToolUse"], tool_name="Open")).encode()
    code, elapsed, _ = fire_measured(hooks, whole, hold_open=10)
    assert code == 0 and elapsed < 2.0
    assert records(server, sid) == before + [("tool_start", {"tool_name": "Open"})]


def test_hook_exits_within_2s_when_the_server_hangs(server, tmp_path):
    """A server that accepts and never answers: exit 0 in < 2 s, record spooled."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        addr = "127.0.0.1:%d" % silent.getsockname()[1]
        spool = tmp_path / "spool.jsonl"
        sid = str(uuid.uuid4())
        h = Hooks(server, 1, spool)
        h.fire(shapes(sid)["UserPromptSubmit"], AGENTHUB_ADDR=addr)
    lines = [json.loads(line) for line in spool.read_text().splitlines()]
    assert lines == [{"op": "append", "provider": "claude", "native_id": sid,
                      "record": {"type": "prompt", "data": {"length": len(SECRET_PROMPT)}}}]


def test_spool_survives_a_server_restart(tmp_path):
    """Server stopped, three hooks fire (spooled), server restarted on the same
    db and ports, the fourth fires: all four records arrive in order."""
    (tmp_path / "srv").mkdir()
    srv = Server(tmp_path / "srv")
    public, runner = srv.public, srv.runner_addr
    try:
        terminal = srv.terminal()
        spool = tmp_path / "spool.jsonl"
        h = Hooks(srv, terminal, spool)
        sid = str(uuid.uuid4())
        events = shapes(sid)
        srv.stop()
        for name in ("SessionStart", "UserPromptSubmit", "PreToolUse"):
            h.fire(events[name])
        ops = [json.loads(line) for line in spool.read_text().splitlines()]
        assert [o["op"] for o in ops] == ["open", "append", "append", "append"]
        srv.start()  # the same store and ports
        assert (srv.public, srv.runner_addr) == (public, runner)
        h.fire(events["PostToolUse"])
        assert spooled(spool) == [] and spool_files(spool) == []
        assert records(srv, sid) == [("session_start", {"source": "startup"}),
                                     ("prompt", {"length": len(SECRET_PROMPT)}),
                                     ("tool_start", {"tool_name": "Bash"}),
                                     ("tool_end", {"tool_name": "Bash"})]
        assert_no_secrets(srv, sid)
    finally:
        srv.stop()


def test_spool_default_path_is_xdg_state_home(server, tmp_path):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        addr = "127.0.0.1:%d" % closed.getsockname()[1]  # bound, not listening: refused
    sid = str(uuid.uuid4())
    r = server.cli("hook", "claude", input=json.dumps(shapes(sid)["Stop"]),
                   AGENTHUB_ADDR=addr, XDG_STATE_HOME=tmp_path / "state")
    assert r.returncode == 0
    spool = tmp_path / "state" / "agenthub" / "spool.jsonl"
    assert json.loads(spool.read_text())["record"] == {"type": "stop", "data": {}}


def test_fallback_to_report_agent_state_without_resource_kinds(tmp_path):
    """A server whose GetServerInfo lacks RESOURCE_KINDS gets ReportAgentState."""
    import grpc
    _, services = pb()
    reports = []

    def server_info(request, context):
        return services.GetServerInfoResponse(version="old", api_version="1", features=0)

    def report_state(request, context):
        reports.append((request.resource_id, request.session_id, request.state))
        return services.ReportAgentStateResponse()

    fake = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    fake.add_generic_rpc_handlers([
        grpc.method_handlers_generic_handler("compass.v1.CompassService", {
            "GetServerInfo": grpc.unary_unary_rpc_method_handler(
                server_info, services.GetServerInfoRequest.FromString,
                services.GetServerInfoResponse.SerializeToString)}),
        grpc.method_handlers_generic_handler("compass.v1.ResourceService", {
            "ReportAgentState": grpc.unary_unary_rpc_method_handler(
                report_state, services.ReportAgentStateRequest.FromString,
                services.ReportAgentStateResponse.SerializeToString)}),
    ])
    port = fake.add_insecure_port("127.0.0.1:0")
    fake.start()
    try:
        class Fake:
            def cli(self, *args, **kw):
                import os
                env = dict(os.environ, AGENTHUB_ADDR=f"127.0.0.1:{port}",
                           AGENTHUB_TOKEN="t-agent-1")
                env.update({k: str(v) for k, v in kw.pop("extra", {}).items()})
                return subprocess.run([str(AGENTHUB), *args], env=env, capture_output=True,
                                      text=True, timeout=10, input=kw.get("input"))
        h = Fake()
        sid = str(uuid.uuid4())
        for name in ("UserPromptSubmit", "PermissionRequest", "Stop"):
            r = h.cli("hook", "claude", input=json.dumps(shapes(sid)[name]),
                      extra={"AGENTHUB_SPOOL": tmp_path / "spool", "AGENTHUB_SESSION_ID": "sess-9",
                             "AGENTHUB_TERMINAL_ID": "4"})
            assert r.returncode == 0
        assert reports == [(4, "sess-9", "working"), (4, "sess-9", "blocked"),
                           (4, "sess-9", "done")]
    finally:
        fake.stop(0)


def test_spool_flush_skips_a_refused_record_and_keeps_order(server, hooks):
    """A spooled record the server refuses for good is dropped alone; the
    records around it arrive, in order, ahead of the new one."""
    sid = started(hooks)

    def op(record):
        return json.dumps({"op": "append", "provider": "claude", "native_id": sid,
                           "record": record})
    lines = [op({"type": "tool_start", "data": {"tool_name": f"T{i}"}}) for i in range(40)]
    lines.insert(20, op({"type": "no_such_type", "data": {}}))
    lines.insert(5, "this line is not JSON")
    hooks.spool.write_text("\n".join(lines) + "\n")
    hooks.fire(shapes(sid)["Stop"])
    assert spooled(hooks.spool) == []
    assert records(server, sid)[1:] == \
        [("tool_start", {"tool_name": f"T{i}"}) for i in range(40)] + [("stop", {})]


def test_parallel_hooks_against_a_hung_server_lose_nothing(server, hooks):
    """Hooks fired together while the server hangs all exit 0 within 2 s and
    all their records are spooled; the next hook that reaches the server
    delivers every one of them."""
    sid = started(hooks)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        addr = "127.0.0.1:%d" % silent.getsockname()[1]
        env = server.env("t-agent-1", AGENTHUB_ADDR=addr, AGENTHUB_SPOOL=hooks.spool,
                         AGENTHUB_TERMINAL_ID=hooks.terminal)
        start = time.monotonic()
        procs = [subprocess.Popen([str(AGENTHUB), "hook", "claude"], env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for _ in range(6)]
        for i, p in enumerate(procs):
            p.stdin.write(json.dumps(dict(shapes(sid)["PreToolUse"], tool_name=f"P{i}")))
            p.stdin.close()
        for p in procs:
            assert p.wait(5) == 0
        assert time.monotonic() - start < 2.5
    spooled = [json.loads(line) for line in hooks.spool.read_text().splitlines()]
    assert sorted(o["record"]["data"]["tool_name"] for o in spooled) == \
        [f"P{i}" for i in range(6)]
    hooks.fire(shapes(sid)["Stop"])
    got = records(server, sid)[1:]
    assert sorted(d["tool_name"] for t, d in got[:-1]) == [f"P{i}" for i in range(6)]
    assert got[-1] == ("stop", {})


def tool_names(srv, sid):
    """The tool_start names the server holds for claude:SID, in order."""
    return [d["tool_name"] for t, d in records(srv, sid) if t == "tool_start"]


def down_then_up(tmp_path, extra=()):
    """A server with a terminal and an open claude session, then stopped:
    (server, hooks, sid, restart)."""
    (tmp_path / "srv").mkdir()
    srv = Server(tmp_path / "srv", extra=list(extra))
    public, runner = srv.public, srv.runner_addr
    h = Hooks(srv, srv.terminal(), tmp_path / "spool.jsonl")
    sid = started(h)
    srv.stop()

    def restart():
        srv.start()  # the same store and ports
        assert (srv.public, srv.runner_addr) == (public, runner)
    return srv, h, sid, restart


def drain(h, sid, limit=60, parallel=1, **env):
    """Fires PostToolUse hooks (PARALLEL at a time) until the spool is
    empty; each exits 0 within 2 s.  Returns how many fired."""
    fired = 0
    for _ in range(limit):
        if not spool_files(h.spool):
            return fired
        if parallel == 1:
            h.fire(dict(shapes(sid)["PostToolUse"]), **env)
            fired += 1
            continue
        procs = []
        for _ in range(parallel):
            p = subprocess.Popen([str(AGENTHUB), "hook", "claude"],
                                 env=h.server.env("t-agent-1", AGENTHUB_SPOOL=h.spool,
                                                  AGENTHUB_TERMINAL_ID=h.terminal, **env),
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            procs.append(p)
        for p in procs:
            p.communicate(json.dumps(shapes(sid)["PostToolUse"]), timeout=10)
            assert p.returncode == 0
        fired += parallel
    assert not spool_files(h.spool), f"spool not drained after {fired} hooks"
    return fired


def test_a_200k_op_spool_is_delivered_exactly_once(tmp_path):
    """200,000 ops spooled while the server is down: hooks with the server
    down stay O(1) and lose nothing, then hooks fired three at a time against
    the restarted server deliver every op exactly once, in order, each hook
    within its 2 s bound."""
    n = 200_000
    srv, h, sid, restart = down_then_up(tmp_path, ["--agent-log-bytes", str(256 << 20)])
    try:
        names = [f"T{i}" for i in range(n)]
        write_spool(h.spool, sid, names)
        for i in range(3):
            h.fire(dict(shapes(sid)["PreToolUse"], tool_name=f"D{i}"))
        ops = spooled(h.spool)
        assert len(ops) == n + 3
        assert [o["record"]["data"]["tool_name"] for o in ops] == names + ["D0", "D1", "D2"]
        restart()
        drain(h, sid, parallel=3)
        got = tool_names(srv, sid)
        assert got == names + ["D0", "D1", "D2"]
        ends = [t for t, _ in records(srv, sid) if t == "tool_end"]
        assert ends and not (tmp_path / "spool.jsonl.dropped").exists()
    finally:
        srv.stop()


def test_spool_cap_drops_the_oldest_and_reports_the_count(tmp_path):
    """Over AGENTHUB_SPOOL_MAX_BYTES the oldest spooled ops are dropped
    (never the new one), the spool stays under its cap, and the next hook
    that reaches the server delivers the rest and then tells the session how
    many were dropped: a notification of kind spool_dropped."""
    cap = 256 << 10
    n = 20_000
    srv, h, sid, restart = down_then_up(tmp_path)
    try:
        names = [f"T{i}" for i in range(n)]
        write_spool(h.spool, sid, names)
        h.fire(dict(shapes(sid)["PreToolUse"], tool_name="NEW"),
               AGENTHUB_SPOOL_MAX_BYTES=cap)
        ops = spooled(h.spool)
        kept = [o["record"]["data"]["tool_name"] for o in ops]
        assert kept[-1] == "NEW"
        assert spooled_bytes(h.spool) <= cap
        dropped = n - (len(kept) - 1)
        assert dropped > 0 and kept[:-1] == names[dropped:]
        assert int((tmp_path / "spool.jsonl.dropped").read_text()) == dropped
        restart()
        drain(h, sid, AGENTHUB_SPOOL_MAX_BYTES=cap)
        # The draining hooks append too, so the cap may drop a few more
        # before delivery starts: the report counts exactly what is missing.
        got = records(srv, sid)
        delivered = [d["tool_name"] for t, d in got if t == "tool_start"]
        missing = n - (len(delivered) - 1)
        assert missing >= dropped and delivered == names[missing:] + ["NEW"]
        notices = [d for t, d in got if t == "notification"]
        assert notices == [{"kind": "spool_dropped", "ops": missing}]
        assert not (tmp_path / "spool.jsonl.dropped").exists()
    finally:
        srv.stop()


def test_hooks_killed_mid_delivery_lose_nothing(tmp_path):
    """Hooks SIGKILLed at random points while delivering a backlog (the
    worst a 2 s alarm could do): every op still arrives, in order; a kill
    between the server's answer and the bookkeeping may send that one batch
    again, and nothing more."""
    n = 60_000
    kills = 6
    srv, h, sid, restart = down_then_up(tmp_path, ["--agent-log-bytes", str(64 << 20)])
    try:
        names = [f"T{i}" for i in range(n)]
        write_spool(h.spool, sid, names)
        restart()
        rng = random.Random(7)
        env = srv.env("t-agent-1", AGENTHUB_SPOOL=h.spool, AGENTHUB_TERMINAL_ID=h.terminal)
        for _ in range(kills):
            p = subprocess.Popen([str(AGENTHUB), "hook", "claude"], env=env,
                                 stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            p.stdin.write(json.dumps(shapes(sid)["PostToolUse"]).encode())
            p.stdin.close()
            time.sleep(rng.uniform(0.05, 0.6))
            p.send_signal(signal.SIGKILL)
            p.wait()
        drain(h, sid)
        got = tool_names(srv, sid)
        assert set(got) == set(names)
        # Whatever came twice is a re-sent batch: the order never goes back
        # further than one call's worth of records.
        # A call carries at most 64 KiB of records; the shortest names come
        # first, so the first call carries the most (1306 of them).
        per_call, size = 0, 0
        while size + len(record_line(names[per_call])) <= 64 << 10:
            size += len(record_line(names[per_call]))
            per_call += 1
        positions = [int(name[1:]) for name in got]
        assert positions[0] == 0 and positions[-1] == n - 1
        assert len(got) - n <= kills * per_call
        back = [a - b for a, b in zip(positions, positions[1:]) if b <= a]
        assert all(step < per_call for step in back), back
    finally:
        srv.stop()
