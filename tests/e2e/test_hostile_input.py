"""Hostile input: strings that are not what they claim and log lines that
would lie.

- Log lines: a client-supplied field reaches the log as one escaped line,
  and a server whose stderr nobody reads keeps serving, drops log lines
  instead of blocking, and says how many it dropped.
- Request strings: NUL, invalid UTF-8 and (in ids) control characters are
  refused with INVALID_ARGUMENT naming the field, before any lookup.
- A relayed AgentRecord is exactly one JSON object; runner_seq has a range.
- `agenthub admin import` never prints token material; `agenthub mcp` caps
  an input line.

Every server test also asserts that a good client on another connection is
served within 100 ms meanwhile (helpers.GoodClient)."""
import json
import os
import re
import signal
import subprocess
import threading

import grpc

from helpers import GoodClient, vm_rss_kib
from rpc_harness import (BUILD, COMPASS, RESOURCE, RUNNER, F, Hub, S, auth, event_frame, fail,
                         method, start_hub, subscribe, subscribe_events, text,  # noqa: F401
                         wait_for)

INVALID_ARGUMENT = grpc.StatusCode.INVALID_ARGUMENT
AGENTHUB = BUILD / "agenthub"
FORGED = "agenthubd: error: forged"
MAX_SEQ = 2 ** 63 - 1


def good_client(hub, pb):
    client = GoodClient(hub.public, pb)
    hub.track(client.channel)
    return client


def raw_unary(channel, path):
    """A unary callable that sends its argument's bytes as they are."""
    return channel.unary_unary(path, request_serializer=lambda b: b,
                               response_deserializer=lambda b: b)


def raw_client_stream(channel, path):
    return channel.stream_unary(path, request_serializer=lambda b: b,
                                response_deserializer=lambda b: b)


def swap(message, placeholder, raw):
    """MESSAGE's bytes with the string PLACEHOLDER replaced by RAW bytes of
    the same length (so every length prefix stays right)."""
    body = message.SerializeToString()
    assert len(placeholder) == len(raw) and body.count(placeholder.encode()) == 1
    return body.replace(placeholder.encode(), raw)


def log_lines(hub):
    return hub.stderr().splitlines()


def assert_every_line_is_the_servers(hub):
    for line in log_lines(hub):
        assert line.startswith("agenthubd: "), "a line the server did not write: %r" % line
        assert not line.startswith(FORGED), line


# --- log lines -----------------------------------------------------------------

def test_client_strings_reach_the_log_as_one_escaped_line_each(start_hub, pb):
    h = start_hub(flags=["--verbose"])
    good = good_client(h, pb)
    r = h.runner("runner-1")
    version = "v9\n" + FORGED + " \x1b[31mred\x1b[0m \u202eevil " + "x" * 2000
    r.enroll(version=version)
    shown = version.encode()[:64].decode()  # the handler logs 64 bytes of it
    shown = shown.replace("\n", "\\n").replace("\x1b", "\\x1b").replace("\u202e", "\\u202e")
    enrolled = wait_for(lambda: [line for line in log_lines(h) if "enrolled (version" in line],
                        what="the enrolled line")
    assert enrolled == ["agenthubd: info: runner runner-1 enrolled (version %s, resumed its run, "
                        "last runner_seq 0)" % shown], enrolled

    # An id with a right-to-left override is no control character: it gets
    # as far as the handler and its log line, escaped there.
    r.open_sessions()
    r.ack("42\u202e", ok=True)
    wait_for(lambda: [line for line in log_lines(h) if "unknown request" in line],
             what="the unknown-request line")
    assert [line for line in log_lines(h) if "unknown request" in line] == [
        "agenthubd: debug: runner runner-1 answered unknown request 42\\u202e"]
    sid = "sess-" + "\u202e" * 100
    r.publish_raw([r.request(sid, F.AgentFrame())])
    line = wait_for(lambda: [line for line in log_lines(h) if "unrecognized variant" in line],
                    what="the unrecognized-variant line")
    assert len(line) == 1 and "sess-" + "\\u202e" * 41 + " has" in line[0], line

    # Ids holding newlines or escapes never get that far.
    for session_id in ("sess-1\n" + FORGED, "sess-1\x1b[2J"):
        err = fail(r.publish_raw, [r.request(session_id, text("x"))])
        assert (err.code(), err.details()) == (INVALID_ARGUMENT,
                                               "session_id holds a control character")
    err = fail(raw_unary(r.channel, RUNNER + "Enroll"),
               swap(S.EnrollRequest(runner_version="PLACEHOLD"), "PLACEHOLD",
                    b"v1\xff\xfe\n" + FORGED.encode()[:4]), metadata=auth(r.token), timeout=10)
    assert (err.code(), err.details()) == (INVALID_ARGUMENT, "runner_version is not valid UTF-8")
    good.assert_served()
    assert_every_line_is_the_servers(h)


def stalled_hub(**kwargs):
    """A Hub whose stderr pipe is read up to the listening lines, then left
    alone until h.hold_stderr is set."""
    return Hub(hold_stderr=threading.Event(), **kwargs)


F_SETPIPE_SZ = 1031


def flood_log(hub, runner, frames):
    """FRAMES PublishEvents messages with no frame variant: each is counted
    and logged as one warn line naming its (long, valid) session id."""
    sid = "sess-" + "x" * 120
    runner.publish_raw([runner.request(sid, F.AgentFrame()) for _ in range(frames)])


def stall(hub):
    import fcntl
    try:  # a small pipe fills sooner; the default (64 KiB) works too
        fcntl.fcntl(hub.proc.stderr.fileno(), F_SETPIPE_SZ, 4096)
    except OSError:
        pass


def flood_while_served(hub, runner, good, frames):
    """Floods the log from another thread, asserting GOOD is served meanwhile."""
    done = threading.Event()
    flood = threading.Thread(target=lambda: (flood_log(hub, runner, frames), done.set()),
                             daemon=True)
    flood.start()
    while not done.wait(0.05):
        good.assert_served()
    flood.join()
    assert done.is_set(), "the flood did not finish"
    good.assert_served()


def test_a_stderr_nobody_reads_never_stalls_the_server(pb):
    # ASan keeps freed blocks in a quarantine that grows with every request;
    # without it VmRSS shows what the server really holds.
    h = stalled_hub(env={"ASAN_OPTIONS": "detect_leaks=1:quarantine_size_mb=0"})
    try:
        stall(h)
        good = good_client(h, pb)
        r = h.runner("runner-1")
        r.enroll()
        flood_log(h, r, 200)  # warm up: the pipe and the buffer fill
        rss0 = vm_rss_kib(h.proc.pid)
        flood_while_served(h, r, good, 3000)
        rss1 = vm_rss_kib(h.proc.pid)
        flood_while_served(h, r, good, 12000)
        rss4 = vm_rss_kib(h.proc.pid)
        m = h.metrics()
        total = 200 + 3000 + 12000
        assert m["agenthub_relay_unknown_frames_total"] == total
        dropped = m["agenthub_log_lines_dropped_total"]
        # The pipe and the 64 KiB buffer hold a few hundred of these lines.
        assert 0 < dropped < total and total - dropped < 1000
        # What waits for stderr is bounded: 4x the lines is no more memory.
        assert rss4 - rss1 < 2048 + (rss1 - rss0), (rss0, rss1, rss4)

        # A reader comes back: what was buffered arrives, then one line
        # saying how many were dropped, then the log carries on.
        h.hold_stderr.set()
        summary = wait_for(lambda: [line for line in h.lines if "dropped" in line],
                           what="the dropped-lines summary")
        assert summary == ["agenthubd: warn: %d log line(s) dropped: stderr was not taking "
                           "them\n" % dropped]
        r.enroll(version="after")
        wait_for(lambda: any("version after" in line for line in h.lines), what="a new line")
        unknown = [line for line in h.lines if "unrecognized variant" in line]
        assert len(unknown) == total - dropped
        good.assert_served()
    finally:
        h.hold_stderr.set()
        h.stop()


def test_sigterm_with_a_stalled_stderr_still_exits_promptly(pb):
    h = stalled_hub()
    try:
        stall(h)
        good = good_client(h, pb)
        r = h.runner("runner-1")
        r.enroll()
        flood_log(h, r, 3000)
        good.assert_served()
        assert h.metrics()["agenthub_log_lines_dropped_total"] > 0
        for x in h.runners:
            x.close()
        h.close_clients()
        h.runners = []
        h.proc.send_signal(signal.SIGTERM)
        assert h.proc.wait(5) == 0  # nobody reads stderr even now
    finally:
        h.hold_stderr.set()
        h.stop()


# --- request strings ---------------------------------------------------------

NUL_ID = "sess-1\x00junk"


def id_calls():
    """(door, method, token, request) for every unary method taking a
    session id, with SESSION standing for it."""
    return [
        ("public", "SkipBatchWindow", "t-alice", lambda sid: S.SkipBatchWindowRequest(
            session_id=sid)),
        ("public", "StopAgentSession", "t-alice", lambda sid: S.StopAgentSessionRequest(
            session_id=sid)),
        ("public", "SendAgentMessage", "t-alice", lambda sid: S.SendAgentMessageRequest(
            session_id=sid, text="hi")),
        ("public", "GetAgentStatus", "t-alice", lambda sid: S.GetAgentStatusRequest(
            session_id=sid)),
        ("public", "AppendResourceOutput", "t-agent-1", lambda sid: S.AppendResourceOutputRequest(
            session_id=sid, bytes=b'{"type":"prompt","data":{}}\n')),
        ("public", "ReportAgentState", "t-agent-1", lambda sid: S.ReportAgentStateRequest(
            session_id=sid, state="working")),
        ("runner", "UploadSessionBlob", "t-runner-1", lambda sid: S.UploadSessionBlobRequest(
            session_id=sid, content_type="text/plain", data=b"x")),
        ("runner", "FetchSessionBlob", "t-runner-1", lambda sid: S.FetchSessionBlobRequest(
            session_id=sid, blob_ref="0" * 64)),
        ("runner", "ReportEvidence", "t-runner-1", lambda sid: S.ReportEvidenceRequest(
            session_id=sid, rank=S.EVIDENCE_RANK_SCREEN, state=F.AGENT_SESSION_STATE_WORKING)),
    ]


def test_ids_holding_nul_or_control_characters_are_refused_before_any_lookup(start_hub, pb):
    h = start_hub(blob_dir=True)
    good = good_client(h, pb)
    bus = subscribe_events(h)
    pane = subscribe(h, "sess-1")
    r = h.runner("runner-1")
    r.open_sessions()
    before = h.metrics()
    for door, name, token, build in id_calls():
        for sid, why in ((NUL_ID, "holds a NUL byte"), ("sess-1\n", "holds a control character"),
                         ("sess-1\x1b[2J", "holds a control character"),
                         ("sess-1\x7f", "holds a control character"),
                         ("sess-1\u009b", "holds a control character")):
            err = fail(h.call, name, build(sid), token=token, door=door)
            assert (err.code(), err.details()) == (INVALID_ARGUMENT, "session_id " + why), name
        good.assert_served()
    # Streams: the subscription, and both Runner streams.
    err = fail(lambda: list(method(h.channel(), "SubscribeAgentSession")(
        S.SubscribeAgentSessionRequest(session_id=NUL_ID), metadata=auth("t-alice"),
        timeout=10)))
    assert (err.code(), err.details()) == (INVALID_ARGUMENT, "session_id holds a NUL byte")
    err = fail(r.publish_raw, [r.request(NUL_ID, text("smuggled"))])
    assert (err.code(), err.details()) == (INVALID_ARGUMENT, "session_id holds a NUL byte")
    err = fail(h.call, "StartAgentSession", S.StartAgentSessionRequest(container_name="ctr-1\0"),
               token="t-admin")
    assert (err.code(), err.details()) == (INVALID_ARGUMENT, "container_name holds a NUL byte")
    other = h.runner("runner-2")
    other.open_sessions(wait=False, live_sessions=["sess-1", "sess-1\r"])
    wait_for(lambda: other.stream_error is not None, what="the Sessions stream to end")
    assert (other.stream_error.code(), other.stream_error.details()) == (
        INVALID_ARGUMENT, "live_sessions[1] holds a control character")

    # Nothing reached the Runner, the pane or the bus: a good message
    # after them is the first thing each of them sees.
    h.call("SendAgentMessage", S.SendAgentMessageRequest(session_id="sess-1", text="good"),
           token="t-alice")
    r.publish("sess-1", text("marker"))
    pane.wait(lambda items: any(i.event.assistant_text.text == "marker" for i in items),
              what="the marker")
    assert [i.event.assistant_text.text for i in pane.items
            if i.event.HasField("assistant_text")] == ["marker"]
    assert not [i for i in pane.items if i.event.HasField("record")]
    assert [c.WhichOneof("command") for c in r.commands] == ["deliver_control"]
    bus.wait(lambda items: any(e.agent_message_chunk.text == "marker" for e in items),
             what="the marker on the bus")
    assert [e.agent_message_chunk.text for e in bus.items
            if e.HasField("agent_message_chunk")] == ["marker"]
    assert not [e for e in bus.items if e.HasField("agent_record")]
    after = h.metrics()
    assert after["agenthub_records_appended_total"] == before["agenthub_records_appended_total"]
    pane.cancel()
    bus.cancel()
    good.assert_served()


def test_strings_that_are_not_utf8_are_refused_naming_the_field(start_hub, pb):
    h = start_hub()
    good = good_client(h, pb)
    pane = subscribe(h, "sess-1")
    r = h.runner("runner-1")
    r.open_sessions()
    public = h.channel()
    body = swap(S.SendAgentMessageRequest(session_id="sess-1", text="hello PLACEHOLD"),
                "PLACEHOLD", b"\xc0\xafetc/pwd")
    err = fail(raw_unary(public, COMPASS + "SendAgentMessage"), body, metadata=auth("t-alice"),
               timeout=10)
    assert (err.code(), err.details()) == (INVALID_ARGUMENT, "text is not valid UTF-8")
    # Nested: the path names the field inside the frame.
    body = swap(r.request("sess-1", text("PLACEHOLD")), "PLACEHOLD", b"ok\xed\xa0\x80 sur")
    err = fail(raw_client_stream(r.channel, RUNNER + "PublishEvents"), iter([body]),
               metadata=auth(r.token), timeout=10)
    assert (err.code(), err.details()) == (
        INVALID_ARGUMENT, "frame.session.typed_event.assistant_text.text is not valid UTF-8")
    body = swap(S.AppendResourceOutputRequest(session_id="sess-1", provider="PLACEHOLD",
                                              bytes=b"{}"), "PLACEHOLD", b"claude\xff\xff\xff")
    err = fail(raw_unary(public, RESOURCE + "AppendResourceOutput"), body,
               metadata=auth("t-agent-1"), timeout=10)
    assert (err.code(), err.details()) == (INVALID_ARGUMENT, "provider is not valid UTF-8")
    good.assert_served()
    r.publish("sess-1", text("marker"))
    pane.wait(lambda items: [i for i in items if i.event.HasField("assistant_text")],
              what="the marker")
    assert [i.event.assistant_text.text for i in pane.items
            if i.event.HasField("assistant_text")] == ["marker"]
    assert r.commands == []
    pane.cancel()


def test_a_relayed_record_is_exactly_one_json_object(start_hub, pb):
    h = start_hub()
    good = good_client(h, pb)
    bus = subscribe_events(h)
    pane = subscribe(h, "sess-1")
    r = h.runner("runner-1")
    smuggled = [
        '{"length":1}\n{"type":"stop","data":{}}',  # two lines in one record
        '{"length":1},"type":"stop"',               # members after the object
        '{"length":1}}',
        '{"a":"line\nbreak"}',                      # a raw newline in a string
        '[1]',
        '{"a":1,"a":2}',
    ]
    r.publish("sess-1", *[event_frame(record=F.AgentRecord(type="prompt", data_json=d))
                          for d in smuggled])
    h.wait_metric("agenthub_relay_invalid_records_total", lambda v: v == len(smuggled))
    good.assert_served()
    # Whitespace between tokens is fine, and is gone once relayed.
    r.publish("sess-1", event_frame(record=F.AgentRecord(
        type="notification", data_json=' {"kind" : "permission",\n "n": [1, 2]}\n')))
    got = pane.wait(lambda items: [i for i in items if i.event.HasField("record")],
                    what="the valid record")
    assert [(i.event.record.type, i.event.record.data_json) for i in got] == [
        ("notification", '{"kind":"permission","n":[1,2]}')]
    on_bus = bus.wait(lambda items: [e for e in items if e.HasField("agent_record")],
                      what="the valid record on the bus")
    assert [(e.agent_record.type, e.agent_record.data_json) for e in on_bus] == [
        ("notification", '{"kind":"permission","n":[1,2]}')]
    # The record's evidence counted: a permission notification blocks.
    status = h.call("GetAgentStatus", S.GetAgentStatusRequest(session_id="sess-1"),
                    token="t-alice").statuses[0]
    assert status.state == F.AGENT_SESSION_STATE_BLOCKED
    assert h.metric("agenthub_relay_invalid_records_total") == len(smuggled)
    pane.cancel()
    bus.cancel()


def test_runner_seq_outside_its_range_is_refused_and_does_not_wedge(start_hub, pb):
    h = start_hub()
    good = good_client(h, pb)
    pane = subscribe(h, "sess-1")
    r = h.runner("runner-1")
    assert r.enroll().last_runner_seq == 0
    r.publish("sess-1", text("one"))
    for seq in (2 ** 64 - 1, 2 ** 63, 0):
        err = fail(r.publish_raw, [r.request("sess-1", text("bad"), runner_seq=seq)])
        assert (err.code(), err.details()) == (
            INVALID_ARGUMENT, "runner_seq must be 1 to 9223372036854775807"), seq
        good.assert_served()
    assert r.enroll().last_runner_seq == 1
    r.publish("sess-1", text("two"))
    # The top of the range is stored and read back as it is.
    r.publish_raw([r.request("sess-1", text("top"), runner_seq=MAX_SEQ)])
    assert r.enroll().last_runner_seq == MAX_SEQ
    texts = pane.wait(lambda items: [i.event.assistant_text.text for i in items
                                     if i.event.HasField("assistant_text")][2:] and
                      [i.event.assistant_text.text for i in items
                       if i.event.HasField("assistant_text")], what="three texts")
    assert texts == ["one", "two", "top"]
    pane.cancel()


# --- the command line ------------------------------------------------------------

def test_admin_import_never_prints_token_material(tmp_path):
    db = tmp_path / "db"
    files = {
        "comma.json": '{"accounts": [{"id": "a", "tokens": ["tok-s3cret-1" "tok-s3cret-2"]}]}',
        "open.json": '{"accounts": [{"id": "a", "tokens": ["tok-s3cret-1\n"]}]}',
        "tail.json": '{"accounts": []} tok-s3cret-1',
        "key.json": '{"accounts": [{"id": "a", "tok-s3cret-1": 1, "tok-s3cret-1": 2}]}',
        "shape.json": '{"accounts": [{"id": "a", "tok-s3cret-1": 1}]}',
    }
    for name, content in files.items():
        (tmp_path / name).write_bytes(content.encode())
        r = subprocess.run([str(AGENTHUB), "admin", "--db", str(db), "import",
                            str(tmp_path / name)], capture_output=True, text=True, timeout=30)
        assert r.returncode == 2, (name, r)
        assert "s3cret" not in r.stderr + r.stdout and "near" not in r.stderr, (name, r.stderr)
        if name != "shape.json":
            assert re.search(re.escape(name) + r":\d+:\d+: ", r.stderr), (name, r.stderr)
    (tmp_path / "bytes.json").write_bytes(b'{"accounts": [{"id": "a", "tokens": ["s3cret\xff"]}]}')
    r = subprocess.run([str(AGENTHUB), "admin", "--db", str(db), "import",
                        str(tmp_path / "bytes.json")], capture_output=True, timeout=30)
    assert r.returncode == 2 and b"s3cret" not in r.stderr
    assert b"bytes.json:1:" in r.stderr and b"not valid UTF-8" in r.stderr, r.stderr


def test_mcp_answers_an_overlong_line_and_keeps_working():
    env = dict(os.environ, AGENTHUB_ADDR="127.0.0.1:9", AGENTHUB_TOKEN="t-none")
    proc = subprocess.Popen([str(AGENTHUB), "mcp"], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + \
            b"x" * (1024 * 1024) + b'"}}'
        proc.stdin.write(big + b"\n")
        proc.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
        proc.stdin.flush()
        first = json.loads(proc.stdout.readline())
        assert first == {"jsonrpc": "2.0", "error": {
            "code": -32600, "message": "Invalid Request: a message over 1048576 bytes"}}
        assert json.loads(proc.stdout.readline()) == {"jsonrpc": "2.0", "id": 2, "result": {}}
        # Several in a row, then a normal one: the reader never loses its place.
        proc.stdin.write((b"y" * (3 * 1024 * 1024) + b"\n") * 3)
        proc.stdin.write(b'{"jsonrpc":"2.0","id":3,"method":"ping"}\n')
        proc.stdin.close()
        rest = [json.loads(line) for line in proc.stdout.read().splitlines()]
        assert [m.get("id") for m in rest] == [None, None, None, 3]
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
