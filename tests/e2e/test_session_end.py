"""A pane ends when its agent ends, and an ended session's log stays readable:
panes end OK with the agenthub-last-seq trailer when the Runner relays the
agent's terminal status and when a hook session is closed, `agenthub log
--follow` returns, the log of an ended session replays (tail, since_seq, the
CLI, the MCP tool) and then ends, retention evicts by bytes (the oldest ended
first) and by age and counts it, and a resumed session continues its ring."""
import json
import os
import signal
import subprocess

import grpc
import pytest

from rpc_harness import (BUILD, ROOT, F, S, hub, start_hub, state, state_frame,  # noqa: F401
                         subscribe, text, wait_for)

AGENTHUB = BUILD / "agenthub"
AGENT = ROOT / "tests/agents/scripted-agent"
EVICTIONS = 'agenthub_ended_session_log_evictions_total{reason="%s"}'


def cli_env(h, token):
    env = dict(os.environ)
    for name in ("AGENTHUB_TERMINAL_ID", "AGENTHUB_SPOOL", "AGENTHUB_TLS", "AGENTHUB_CA"):
        env.pop(name, None)
    env.update(AGENTHUB_ADDR=h.public, AGENTHUB_TOKEN=token,
               ASAN_OPTIONS=env.get("ASAN_OPTIONS", "detect_leaks=1"))
    return env


def cli(h, *args, token="t-bob"):
    """Runs `agenthub ARGS` against H; asserts exit 0; returns stdout."""
    r = subprocess.run([str(AGENTHUB), *args], env=cli_env(h, token), capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, "agenthub %s exited %d: %s" % (args, r.returncode, r.stderr)
    return r.stdout


def log_json(h, sid, *more, token="t-bob"):
    return [json.loads(line) for line in cli(h, "log", sid, "--json", *more,
                                             token=token).splitlines()]


class Follower:
    """`agenthub log S --follow --json` in the background."""

    def __init__(self, h, sid, token):
        self.proc = subprocess.Popen([str(AGENTHUB), "log", sid, "--follow", "--json"],
                                     env=cli_env(h, token), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)

    def first_line(self):
        return json.loads(self.proc.stdout.readline())

    def returns(self, timeout=30):
        """Waits for the exit; returns (exit status, the remaining --json lines)."""
        out, err = self.proc.communicate(timeout=timeout)
        assert self.proc.returncode == 0, err
        return self.proc.returncode, [json.loads(line) for line in out.splitlines()]


def status(h, sid, token="t-admin"):
    return h.call("GetAgentStatus", S.GetAgentStatusRequest(session_id=sid),
                  token=token).statuses[0]


def spawn(h, native_id=""):
    """A hook session in ctr-1 (a terminal, then an AGENT_SESSION)."""
    terminal = h.call("SpawnResource", S.SpawnResourceRequest(
        kind=S.RESOURCE_KIND_TERMINAL, container_name="ctr-1"), token="t-runner-1",
        door="runner").resource_id
    return h.call("SpawnResource", S.SpawnResourceRequest(
        kind=S.RESOURCE_KIND_AGENT_SESSION, parent=terminal, provider="claude",
        native_id=native_id), token="t-agent-1")


def append(h, sid, *records):
    body = "".join(json.dumps(r) + "\n" for r in records).encode()
    return h.call("AppendResourceOutput", S.AppendResourceOutputRequest(
        session_id=sid, bytes=body), token="t-agent-1")


def close(h, sid):
    h.call("CloseResource", S.CloseResourceRequest(session_id=sid), token="t-agent-1")


def ended_ok(pane):
    """Asserts PANE ended OK with the last delivered seq as its trailer."""
    code, trailers = pane.finish()
    assert code == grpc.StatusCode.OK
    last = pane.items[-1].seq if pane.items else None
    if last is not None:
        assert trailers["agenthub-last-seq"] == str(last)
    return trailers


# --- A pane ends when its agent ends ---------------------------------------------

@pytest.mark.parametrize("terminal", ["STOPPED", "ERRORED"])
def test_panes_end_ok_when_the_runner_relays_the_agents_end(hub, terminal):
    r = hub.runner("runner-1")
    r.enroll()
    r.open_sessions(["sess-1"])
    r.publish("sess-1", text("hello"))
    live = subscribe(hub, "sess-1", token="t-alice")
    replaying = subscribe(hub, "sess-1", token="t-bob", tail=100)
    follower = Follower(hub, "sess-1", "t-alice")
    assert follower.first_line()["seq"] >= 1
    r.publish("sess-1", text("bye"))
    # The reference Runner's order: the terminal state frame, then PROCESS evidence.
    r.publish("sess-1", state_frame(terminal))
    r.call("ReportEvidence", S.ReportEvidenceRequest(
        session_id="sess-1", rank=S.EVIDENCE_RANK_PROCESS,
        state=F.AGENT_SESSION_STATE_STOPPED, live_child=False))
    for pane in (live, replaying):
        ended_ok(pane)
        assert pane.items[-1].state == state(terminal)
    assert [f.event.assistant_text.text for f in replaying.items if f.event.HasField(
        "assistant_text")] == ["hello", "bye"]
    _, lines = follower.returns()
    assert lines[-1]["type"] == "state" and lines[-1]["data"]["state"] == terminal.lower()
    assert status(hub, "sess-1").state == state(terminal)
    # The session is still open: a new pane replays the log and ends.
    late = subscribe(hub, "sess-1", token="t-bob", tail=2)
    ended_ok(late)
    assert [f.seq for f in late.items] == [status(hub, "sess-1").last_seq - 1,
                                           status(hub, "sess-1").last_seq]
    assert subscribe(hub, "sess-1", token="t-bob").finish()[0] == grpc.StatusCode.OK
    _, lines = Follower(hub, "sess-1", "t-alice").returns()
    assert [f["seq"] for f in lines] == list(range(1, status(hub, "sess-1").last_seq + 1))
    assert hub.metric("agenthub_ended_session_logs") == 1
    assert hub.metric("agenthub_session_subscribers") == 0


def test_the_follower_returns_when_the_hosted_agent_exits(hub, tmp_path):
    follower = Follower(hub, "sess-1", "t-alice")
    log_path = tmp_path / "runner.log"
    with open(log_path, "w") as log:
        runner = subprocess.Popen(
            [str(BUILD / "agenthub-runner"), "--addr", hub.runner_addr, "--token", "t-runner-1",
             "--session", "sess-1", "--agent",
             "/usr/bin/python3 %s --speed 20 --exit-after-script" % AGENT],
            stdout=subprocess.DEVNULL, stderr=log)
        try:
            _, lines = follower.returns(timeout=60)
        finally:
            runner.send_signal(signal.SIGTERM)
            rc = runner.wait(15)
    assert rc == 0, log_path.read_text()
    assert "agent exited with status 0" in log_path.read_text()
    types = [f["type"] for f in lines]
    assert "assistant_text" in types and "tool_call" in types
    assert lines[-1] == {**lines[-1], "type": "state", "data": {"state": "stopped"}}
    assert lines[-1]["seq"] == status(hub, "sess-1").last_seq


def test_a_resumed_agent_is_a_new_tail(hub):
    r = hub.runner("runner-1")
    r.enroll()
    r.open_sessions(["sess-1"])
    r.publish("sess-1", text("first run"), state_frame("STOPPED"))
    stopped_at = status(hub, "sess-1").last_seq
    draining = subscribe(hub, "sess-1", token="t-bob", tail=100)
    ended_ok(draining)
    # The agent comes back (the Runner hosts it again): frames go on from
    # where the log was, and a new pane follows them live.
    r.publish("sess-1", state_frame("WORKING"))
    follow = subscribe(hub, "sess-1", token="t-alice")
    r.publish("sess-1", text("second run"))
    items = follow.wait_count(1)
    assert items[0].event.assistant_text.text == "second run"
    assert items[0].seq == stopped_at + 2
    assert not follow.done.is_set()
    assert status(hub, "sess-1").state == state("WORKING")
    assert hub.metric("agenthub_ended_session_logs") == 0
    r.publish("sess-1", state_frame("STOPPED"))
    ended_ok(follow)
    assert follow.items[-1].state == state("STOPPED")


def test_closing_a_hook_session_ends_its_panes_and_the_follower_returns(hub):
    sid = spawn(hub).session_id
    append(hub, sid, {"type": "prompt", "data": {"length": 5}})
    pane = subscribe(hub, sid, token="t-bob", tail=10)
    follower = Follower(hub, sid, "t-bob")
    assert follower.first_line()["seq"] >= 1
    append(hub, sid, {"type": "stop", "data": {}})
    close(hub, sid)
    ended_ok(pane)
    _, lines = follower.returns()
    assert any(f["type"] == "stop" for f in lines)
    assert pane.items[-1].seq == status(hub, sid).last_seq


# --- An ended session's log stays readable -----------------------------------

def test_an_ended_sessions_log_is_readable_after_the_end(hub):
    sid = spawn(hub).session_id
    first = append(hub, sid, *[{"type": "prompt", "data": {"length": i}} for i in range(5)])
    close(hub, sid)
    st = status(hub, sid)
    assert st.state == state("STOPPED") and st.last_seq >= first.last_seq
    everything = subscribe(hub, sid, token="t-bob", tail=1000)
    ended_ok(everything)
    assert [f.seq for f in everything.items] == list(range(1, st.last_seq + 1))
    tail = subscribe(hub, sid, token="t-bob", tail=2)
    ended_ok(tail)
    assert [f.seq for f in tail.items] == [st.last_seq - 1, st.last_seq]
    since = subscribe(hub, sid, token="t-bob", since_seq=first.first_seq + 1)
    ended_ok(since)
    assert [f.seq for f in since.items] == list(range(first.first_seq + 2, st.last_seq + 1))
    caught_up = subscribe(hub, sid, token="t-bob", since_seq=st.last_seq)
    assert ended_ok(caught_up)["agenthub-last-seq"] == str(st.last_seq)
    assert caught_up.items == []
    # The CLI, with and without --follow, and the MCP tool read it too.
    lines = log_json(hub, sid)
    assert [f["seq"] for f in lines] == list(range(1, st.last_seq + 1))
    assert [f["data"]["length"] for f in lines if f["type"] == "prompt"] == list(range(5))
    _, followed = Follower(hub, sid, "t-bob").returns()
    assert followed == lines
    assert mcp_log(hub, sid, tail=3, token="t-bob") == lines[-3:]
    assert hub.metric("agenthub_ended_session_logs") == 1
    assert hub.metric("agenthub_ended_session_log_bytes") > 0
    assert hub.metric("agenthub_session_log_bytes") >= hub.metric(
        "agenthub_ended_session_log_bytes")


def test_a_stopped_session_is_readable_after_stop_agent_session(hub):
    r = hub.runner("runner-1")
    r.enroll()
    r.open_sessions(["sess-1"])
    r.publish("sess-1", text("one"), text("two"))
    hub.call("StopAgentSession", S.StopAgentSessionRequest(session_id="sess-1"), token="t-alice")
    late = subscribe(hub, "sess-1", token="t-bob", tail=10)
    ended_ok(late)
    assert [f.event.assistant_text.text for f in late.items
            if f.event.HasField("assistant_text")] == ["one", "two"]
    assert late.items[-1].state == state("STOPPED")
    # Frames relayed after the end are still dropped.
    r.publish("sess-1", text("late"))
    assert status(hub, "sess-1").last_seq == late.items[-1].seq


def test_a_reopened_hook_session_continues_its_ring(hub):
    first = spawn(hub, native_id="resume-me")
    sid = first.session_id
    ran = append(hub, sid, {"type": "prompt", "data": {"length": 1}})
    close(hub, sid)
    ended_at = status(hub, sid).last_seq
    old = subscribe(hub, sid, token="t-bob", tail=100)
    ended_ok(old)
    # claude --resume: the same (provider, native_id) reopens the same session.
    again = spawn(hub, native_id="resume-me")
    assert again.session_id == sid
    follow = subscribe(hub, sid, token="t-bob")
    more = append(hub, sid, {"type": "prompt", "data": {"length": 2}})
    assert more.first_seq > ended_at >= ran.last_seq
    assert follow.wait_count(1)[0].seq == more.first_seq
    assert not follow.done.is_set()
    assert hub.metric("agenthub_ended_session_logs") == 0
    lines = log_json(hub, sid)
    assert [f["seq"] for f in lines] == list(range(1, status(hub, sid).last_seq + 1))
    assert [f["data"]["length"] for f in lines if f["type"] == "prompt"] == [1, 2]
    close(hub, sid)
    ended_ok(follow)


# --- Retention ---------------------------------------------------------------------

def test_retention_evicts_the_oldest_ended_session_first_past_its_bytes(start_hub):
    # A small log takes 5120 heap bytes (a 4 KiB buffer and its index): two fit.
    h = start_hub(flags=["--ended-log-bytes", "12000"])
    sids = [spawn(h).session_id for _ in range(3)]
    for sid in reversed(sids):  # the first to end is the last appended to
        append(h, sid, {"type": "prompt", "data": {"length": 3}})
    close(h, sids[0])
    close(h, sids[1])
    # An end takes effect once the session log has stored it (on disk: a
    # moment after CloseResource answers).
    wait_for(lambda: h.metric("agenthub_ended_session_logs") == 2, what="two ended logs")
    assert h.metric(EVICTIONS % "bytes") == 0
    close(h, sids[2])
    wait_for(lambda: h.metric(EVICTIONS % "bytes") == 1, what="one eviction")
    assert h.metric("agenthub_ended_session_logs") == 2
    assert h.metric("agenthub_ended_session_log_bytes") <= 12000
    gone = subscribe(h, sids[0], token="t-bob", tail=100)
    assert gone.finish()[0] == grpc.StatusCode.OK and gone.items == []
    assert log_json(h, sids[0]) == []
    for sid in sids[1:]:
        assert [f["type"] for f in log_json(h, sid)][:1] == ["prompt"]


def test_retention_evicts_logs_older_than_its_age(start_hub):
    h = start_hub(flags=["--ended-log-age-ms", "3000"])
    sid = spawn(h).session_id
    append(h, sid, {"type": "prompt", "data": {"length": 3}})
    close(h, sid)
    assert log_json(h, sid)  # readable at first
    wait_for(lambda: h.metric(EVICTIONS % "age") == 1, what="the age eviction")
    assert h.metric("agenthub_ended_session_logs") == 0
    assert h.metric("agenthub_ended_session_log_bytes") == 0
    assert log_json(h, sid) == []
    pane = subscribe(h, sid, token="t-bob", tail=100)
    assert pane.finish()[0] == grpc.StatusCode.OK and pane.items == []


def test_retention_off_frees_an_ended_log_at_once(start_hub):
    h = start_hub(flags=["--ended-log-bytes", "0"])
    sid = spawn(h).session_id
    append(h, sid, {"type": "prompt", "data": {"length": 3}})
    close(h, sid)
    assert log_json(h, sid) == []
    assert h.metric("agenthub_ended_session_logs") == 0
    assert h.metric("agenthub_session_log_bytes") == 0


@pytest.mark.parametrize("flag,value,message", [
    ("--ended-log-bytes", "-1", "--ended-log-bytes: -1 is out of range (0.."),
    ("--ended-log-age-ms", "soon", "--ended-log-age-ms: expected a number in 0.."),
])
def test_retention_flags_are_checked(flag, value, message):
    r = subprocess.run([str(BUILD / "agenthubd"), "--db", "/nonexistent", "--listen",
                        "127.0.0.1:0", flag, value], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and message in r.stderr


def test_help_documents_the_retention_flags():
    out = subprocess.run([str(BUILD / "agenthubd"), "--help"], capture_output=True, text=True,
                         timeout=30).stdout
    assert "--ended-log-bytes N" in out and "--ended-log-age-ms N" in out


# --- the MCP tool ------------------------------------------------------------------

def mcp_log(h, sid, tail, token):
    """agenthub_agent_log through `agenthub mcp`; returns its frames."""
    proc = subprocess.Popen([str(AGENTHUB), "mcp"], env=cli_env(h, token),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "pytest", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "agenthub_agent_log", "arguments": {"session": sid, "tail": tail}}},
    ]
    out, err = proc.communicate("".join(json.dumps(m) + "\n" for m in messages), timeout=30)
    assert proc.returncode == 0, err
    replies = {r.get("id"): r for r in map(json.loads, out.splitlines())}
    result = replies[2]["result"]
    assert result["isError"] is False, result
    return [json.loads(line) for line in result["content"][0]["text"].splitlines()]
