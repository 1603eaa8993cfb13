"""agenthub-runner end to end: the batch window, SkipBatchWindow, reconnect
after a server restart, process evidence, blob uploads and `make demo`.

Starts agenthubd through tests/e2e/harness.py on deploy/demo-world.json
(runner-1 hosts ctr-1, whose session sess-1 alice owns) and agenthub-runner
from $AGENTHUB_BUILD (default build-asan), and drives the public door with
python3-grpcio.  Every server and Runner is stopped with SIGTERM and must
exit 0.
"""

import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import grpc
import pytest

import harness
from harness import BUILD, ROOT, wait_for

AGENT = ROOT / "tests/agents/scripted-agent"
PY = "/usr/bin/python3"
COMPASS = "/compass.v1.CompassService/"


@pytest.fixture(scope="module")
def pb():
    """(frames_pb2, services_pb2) of harness.protos()."""
    p = harness.protos()
    return p.frames, p.services


class Server(harness.Server):
    """harness.Server on the demo world with every door and a blob directory
    (blobs=False: none); stop() then start() keeps the store and ports.
    call() makes a unary CompassService call on the public door."""

    def __init__(self, tmp, blobs=True):
        super().__init__(world=True, blob_dir=blobs, workdir=tmp, stop_timeout=15.0)

    def start(self):
        super().start()
        self.public_channel = self.channel()
        return self

    def call(self, pb, method, request, response, token="t-alice", timeout=10):
        fn = self.public_channel.unary_unary(COMPASS + method,
                                             request_serializer=request.SerializeToString,
                                             response_deserializer=response.FromString)
        return fn(request, metadata=[("authorization", "Bearer " + token)], timeout=timeout)


class Runner:
    def __init__(self, server, tmp, agent, *extra):
        self.log_path = tmp / ("runner-%d.log" % time.monotonic_ns())
        self.log_file = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [str(BUILD / "agenthub-runner"), "--addr", server.addr["runner"], "--token",
             "t-runner-1", "--session", "sess-1", "--agent", agent, "--verbose", *extra],
            stdout=subprocess.DEVNULL, stderr=self.log_file)

    def log(self):
        return self.log_path.read_text()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=15)
        self.log_file.close()
        assert rc == 0, "agenthub-runner exited %d:\n%s" % (rc, self.log())


class Tail:
    """A SubscribeAgentSession subscriber collecting frames on a thread."""

    def __init__(self, server, pb, session="sess-1", token="t-alice", since_seq=0, tail=0):
        frames, services = pb
        self.frames = queue.Queue()
        fn = server.public_channel.unary_stream(
            COMPASS + "SubscribeAgentSession",
            request_serializer=services.SubscribeAgentSessionRequest.SerializeToString,
            response_deserializer=frames.AgentSessionFrame.FromString)
        self.call = fn(services.SubscribeAgentSessionRequest(session_id=session,
                                                             since_seq=since_seq, tail=tail,
                                                             agenthub_events=True),
                       metadata=[("authorization", "Bearer " + token)])
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        try:
            for frame in self.call:
                self.frames.put(frame)
        except grpc.RpcError:
            pass

    def read_until(self, predicate, timeout=20, what="a frame"):
        """Frames up to and including the first matching PREDICATE."""
        seen = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("timed out waiting for %s; saw %s" % (what, seen))
            try:
                frame = self.frames.get(timeout=left)
            except queue.Empty:
                continue
            seen.append(frame)
            if predicate(frame):
                return seen

    def drain(self):
        """Forgets the frames received so far."""
        while not self.frames.empty():
            self.frames.get_nowait()

    def close(self):
        self.call.cancel()


def kind(frame):
    return frame.event.WhichOneof("event") if frame.HasField("event") else None


def is_state(frames, name):
    value = frames.AgentSessionState.Value("AGENT_SESSION_STATE_" + name)
    return lambda f: not f.HasField("event") and f.state == value


def is_reply(count):
    text = "Got %d message(s)" % count
    return lambda f: kind(f) == "assistant_text" and f.event.assistant_text.text.startswith(text)


def batch_counts(seen):
    return [(f.event.batch_pending.count, f.event.batch_pending.fires_at_unix_ms)
            for f in seen if kind(f) == "batch_pending"]


@pytest.fixture
def world(tmp_path):
    """A server; yields (server, tmp) and stops it, asserting exit 0."""
    server = Server(tmp_path)
    try:
        yield server, tmp_path
    finally:
        if server.proc.poll() is None:
            server.stop()


def idle_agent(speed=1):
    return "%s %s --script idle --speed %s" % (PY, AGENT, speed)


def send(server, pb, text):
    _, services = pb
    server.call(pb, "SendAgentMessage", services.SendAgentMessageRequest(session_id="sess-1",
                                                                         text=text),
                services.SendAgentMessageResponse)


def test_batch_window_counts_1_2_then_0(world, pb):
    server, tmp = world
    frames, _ = pb
    tail = Tail(server, pb)
    runner = Runner(server, tmp, idle_agent(), "--batch-window-ms", "1500")
    try:
        tail.read_until(is_state(frames, "READY"), what="the idle agent")
        before = int(time.time() * 1000)
        send(server, pb, "first")
        send(server, pb, "second")
        seen = tail.read_until(is_reply(2), what="the agent's reply to the burst")
        counts = batch_counts(seen)
        assert [c for c, _ in counts] == [1, 2, 0], counts
        (_, fires1), (_, fires2), (_, fires0) = counts
        assert fires1 >= before + 1400 and fires2 >= fires1, counts
        assert fires0 == 0
        text = [f for f in seen if is_reply(2)(f)][0].event.assistant_text.text
        assert "first; second" in text
    finally:
        tail.close()
        runner.stop()


def test_skip_batch_window_fires_at_once(world, pb):
    server, tmp = world
    frames, services = pb
    tail = Tail(server, pb)
    runner = Runner(server, tmp, idle_agent(), "--batch-window-ms", "60000")
    skip = services.SkipBatchWindowRequest(session_id="sess-1")
    try:
        tail.read_until(is_state(frames, "READY"), what="the idle agent")
        # No window open: a no-op, still acknowledged.
        server.call(pb, "SkipBatchWindow", skip, services.SkipBatchWindowResponse)
        send(server, pb, "hold me")
        seen = tail.read_until(lambda f: kind(f) == "batch_pending", what="the window arming")
        assert batch_counts(seen)[-1][0] == 1
        assert batch_counts(seen)[-1][1] > time.time() * 1000 + 50000
        started = time.monotonic()
        server.call(pb, "SkipBatchWindow", skip, services.SkipBatchWindowResponse)
        seen = tail.read_until(is_reply(1), timeout=10, what="the burst after SkipBatchWindow")
        assert time.monotonic() - started < 10
        assert [c for c, _ in batch_counts(seen)] == [0]
        # Only the owner (or an admin) may skip; bob is a member, not the owner.
        with pytest.raises(grpc.RpcError) as err:
            server.call(pb, "SkipBatchWindow", skip, services.SkipBatchWindowResponse,
                        token="t-bob")
        assert err.value.code() == grpc.StatusCode.NOT_FOUND
    finally:
        tail.close()
        runner.stop()


def test_reconnects_after_restart_and_runner_seq_continues(world, pb):
    server, tmp = world
    frames, _ = pb
    tail = Tail(server, pb)
    runner = Runner(server, tmp, idle_agent(), "--batch-window-ms", "200")
    try:
        tail.read_until(is_state(frames, "READY"), what="the idle agent")
        send(server, pb, "before the restart")
        tail.read_until(is_reply(1), what="the first reply")
        tail.close()
        accepted = server.metrics()["agenthub_frames_accepted_total"]
        assert accepted >= 4
        server.stop()
        server.lines.clear()
        server.start()
        tail = Tail(server, pb)
        wait_for(lambda: "connected its Sessions stream" in server.log(), 30, 0.1,
                 what=lambda: "the runner did not reconnect:\n" + runner.log())
        enrolled = [l for l in server.lines if "runner runner-1 enrolled" in l]
        last = int(enrolled[-1].rsplit("last runner_seq ", 1)[1].rstrip(")\n"))
        assert last >= accepted, enrolled
        send(server, pb, "after the restart")
        tail.read_until(is_reply(1), what="the reply after the restart")
        m = server.metrics()
        assert m["agenthub_relay_retries_total"] == 0, m
        assert m["agenthub_relay_gaps_total"] == 0, m
        assert m["agenthub_frames_accepted_total"] >= 4
        assert "enrolled as runner-1" in runner.log()
        assert runner.log().count("enrolled as runner-1") >= 2
    finally:
        tail.close()
        runner.stop()


def test_process_evidence_in_get_agent_status(world, pb):
    server, tmp = world
    frames, services = pb
    state = frames.AgentSessionState

    def status():
        reply = server.call(pb, "GetAgentStatus", services.GetAgentStatusRequest(session_id="sess-1"),
                            services.GetAgentStatusResponse)
        return state.Name(reply.statuses[0].state)

    # An agent that writes nothing: only process evidence speaks for it.
    runner = Runner(server, tmp, "sleep 3")
    try:
        wait_for(lambda: status() == "AGENT_SESSION_STATE_READY", 10, 0.1,
                 what=lambda: status())
        wait_for(lambda: status() == "AGENT_SESSION_STATE_STOPPED", 15, 0.2,
                 what=lambda: status())
        assert "agent exited with status 0" in runner.log()
    finally:
        runner.stop()


def test_transcript_images_are_uploaded_as_blobs(world, pb):
    server, tmp = world
    runner = Runner(server, tmp, "%s %s --speed 20" % (PY, AGENT))
    try:
        wait_for(lambda: any(p.is_file() for p in server.blob_dir.rglob("*")), 20, 0.2,
                 what=lambda: "no blob was uploaded:\n" + runner.log())
        server.wait_metric("agenthub_relay_transcript_entries_total", lambda v: v >= 1, 10)
    finally:
        runner.stop()


def test_uploader_disables_itself_without_blob_storage(tmp_path, pb):
    server = Server(tmp_path, blobs=False)
    runner = Runner(server, tmp_path, "%s %s --speed 20" % (PY, AGENT))
    try:
        wait_for(lambda: server.metric("agenthub_relay_transcript_entries_total") >= 1, 20, 0.2,
                 what=lambda: runner.log())
        assert "UploadSessionBlob for sess-1: UNIMPLEMENTED" in runner.log()
    finally:
        runner.stop()
        server.stop()


def test_make_demo_shows_the_scripted_agent(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    env["TMPDIR"] = str(tmp_path)
    out = subprocess.run(["make", "-s", "demo"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    # Format-agnostic: the follower is `agenthub log --follow` once the CLI
    # has it, tests/agents/tail_session.py until then.
    assert ("following sess-1 with: agenthub log --follow" in out.stdout or
            "following sess-1 with: tests/agents/tail_session.py" in out.stdout), out.stdout
    for needle in ["thinking", "assistant_text", "tool_call", "tool_call_update", "plan", "ask",
                   "Waiting for permission", "batch_pending", "Got 2 message(s)",
                   "stopped the runner and the server cleanly"]:
        assert needle in out.stdout, needle + " missing:\n" + out.stdout


def test_a_restarted_runner_continues_from_enrolls_last_runner_seq(world, pb):
    server, tmp = world
    frames, services = pb

    def status():
        return server.call(pb, "GetAgentStatus", services.GetAgentStatusRequest(
            session_id="sess-1"), services.GetAgentStatusResponse).statuses[0]

    for round_ in range(2):
        time.sleep(0.3)
        before = status().last_seq
        runner = Runner(server, tmp, idle_agent(), "--batch-window-ms", "100")
        tail = None
        try:
            # The pane of the last run ended with its agent; this run is a
            # new tail, read from where the log stood before it.
            wait_for(lambda: status().state == frames.AGENT_SESSION_STATE_READY, 20, 0.05,
                     what=lambda: status())
            tail = Tail(server, pb, since_seq=before, tail=0 if before else 1 << 31)
            tail.read_until(is_state(frames, "READY"), what="the idle agent")
            send(server, pb, "round %d" % round_)
            tail.read_until(is_reply(1), what="the reply")
        finally:
            if tail:
                tail.close()
            runner.stop()
    m = server.metrics()
    assert m["agenthub_relay_retries_total"] == 0, m
    assert m["agenthub_relay_gaps_total"] == 0, m
    assert "last runner_seq the server accepted: 0" not in runner.log()


# AgentFrame{session{typed_event{assistant_text{text: "hi"}}}}, then
# AgentFrame{session{state: READY}}, each varint-delimited.
PB_AGENT = ("%s -c 'import sys,time; o=sys.stdout.buffer; "
            "o.write(bytes([10,0x1a,8,0x12,6,0x1a,4,0x0a,2,0x68,0x69])); "
            "o.write(bytes([4,0x1a,2,8,2])); o.flush(); time.sleep(30)'" % PY)


def test_pb_agents_write_varint_delimited_agent_frames(world, pb):
    server, tmp = world
    frames, _ = pb
    tail = Tail(server, pb)
    runner = Runner(server, tmp, PB_AGENT, "--agent-format", "pb")
    try:
        seen = tail.read_until(lambda f: kind(f) == "assistant_text", what="the pb frame")
        assert seen[-1].event.assistant_text.text == "hi"
    finally:
        tail.close()
        runner.stop()


RESUME_AGENT = r'''
import json, os, sys
ref = {"type": "image", "source": {"type": "blob", "blob_ref": "deadbeef", "media_type": "image/png"}}
print(json.dumps({"resume_entry": {"id": "r1", "entry": {"role": "user", "content": [ref]}}}), flush=True)
with open(sys.argv[1] + "." + os.environ["AGENTHUB_SESSION_ID"], "w") as out:
    out.write(sys.stdin.readline())
print(json.dumps({"state": "READY"}), flush=True)
sys.stdin.read()
'''


def test_resume_keeps_the_reference_on_failed_precondition(world, pb):
    """sess-2 is runner-2's: FetchSessionBlob answers FAILED_PRECONDITION, and
    the agent gets its entry back with the original reference."""
    server, tmp = world
    script = tmp / "resume_agent.py"
    script.write_text(RESUME_AGENT)
    answer = tmp / "answer.json"
    runner = Runner(server, tmp, "%s %s %s" % (PY, script, answer), "--session", "sess-2")
    try:
        refused = "FetchSessionBlob for sess-2: FAILED_PRECONDITION"
        wait_for(lambda: refused in runner.log(), 20, 0.1, what=lambda: runner.log())
        for sid in ("sess-1", "sess-2"):  # sess-1's fetch: NOT_FOUND, kept too
            path = Path(str(answer) + "." + sid)
            wait_for(lambda: path.exists() and path.read_text().endswith("\n"), 20, 0.1,
                     what=lambda: runner.log())
            got = json.loads(path.read_text())["resume_entry"]
            assert got["id"] == "r1"
            source = got["entry"]["content"][0]["source"]
            assert source == {"type": "blob", "blob_ref": "deadbeef", "media_type": "image/png"}
    finally:
        runner.stop()


CHATTY_AGENT = r'''
import json, sys, time
n = 0
while True:
    n += 1
    sys.stdout.write(json.dumps({"assistant_text": {"text": "frame %d" % n}}) + "\n")
    sys.stdout.flush()
    time.sleep(0.002)
'''


def test_restart_under_load_neither_retries_nor_gaps(world, pb):
    """Frames stream while the server restarts: the Runner resends what the
    server did not accept, with the original runner_seq."""
    server, tmp = world
    script = tmp / "chatty_agent.py"
    script.write_text(CHATTY_AGENT)
    runner = Runner(server, tmp, "%s %s" % (PY, script))
    try:
        wait_for(lambda: server.metrics()["agenthub_frames_accepted_total"] >= 300, 20, 0.1,
                 what=lambda: runner.log())
        server.stop()
        time.sleep(0.5)  # frames pile up in the Runner meanwhile
        server.lines.clear()
        server.start()
        wait_for(lambda: server.metrics()["agenthub_frames_accepted_total"] >= 300, 30, 0.1,
                 what=lambda: runner.log())
        m = server.metrics()
        assert m["agenthub_relay_retries_total"] == 0, m
        assert m["agenthub_relay_gaps_total"] == 0, m
    finally:
        runner.stop()


def test_start_and_stop_agent_session_run_and_stop_the_agent(world, pb):
    server, tmp = world
    frames, services = pb
    runner = Runner(server, tmp, idle_agent())
    try:
        wait_for(lambda: "connected its Sessions stream" in server.log(), 20, 0.1,
                 what=lambda: runner.log())
        started = server.call(pb, "StartAgentSession",
                              services.StartAgentSessionRequest(container_name="ctr-1"),
                              services.StartAgentSessionResponse)
        sid = started.session_id
        assert sid and sid != "sess-1"
        wait_for(lambda: "session %s: agent started" % sid in runner.log(), 20, 0.1,
                 what=lambda: runner.log())
        server.call(pb, "StopAgentSession", services.StopAgentSessionRequest(session_id=sid),
                    services.StopAgentSessionResponse)
        deadline = time.monotonic() + 20
        while "session %s: agent exited" % sid not in runner.log() and \
                "session %s: agent killed" % sid not in runner.log():
            assert time.monotonic() < deadline, runner.log()
            time.sleep(0.1)
        # sess-1's agent is untouched.
        send(server, pb, "still here?")
    finally:
        runner.stop()


DELTA_AGENT = r'''
import json, sys, time
def say(kind, text, mid):
    sys.stdout.write(json.dumps({kind: {"text": text, "message_id": mid}}) + "\n")
for kind, text, mid in [("thinking", "The user wants the ", "m1"), ("thinking", "tests fixed.", "m1"),
                        ("assistant_text", "Running ", "m2"), ("assistant_text", "them now.", "m2")]:
    say(kind, text, mid)
sys.stdout.flush()
time.sleep(600)
'''


def test_log_joins_the_deltas_of_one_message_into_a_paragraph(world, pb):
    """agenthub log's human view reads like a conversation: the streamed
    thinking and assistant_text deltas of one message form one line;
    --json keeps one object per frame; --no-state hides state frames."""
    server, tmp = world
    script = tmp / "delta_agent.py"
    script.write_text(DELTA_AGENT)
    runner = Runner(server, tmp, "%s %s" % (PY, script))
    env = dict(os.environ, AGENTHUB_ADDR=server.addr["public"], AGENTHUB_TOKEN="t-alice")
    try:
        deadline = time.monotonic() + 20
        while True:
            frames = [json.loads(line) for line in subprocess.run(
                [str(BUILD / "agenthub"), "log", "sess-1", "--json"], env=env, check=True,
                capture_output=True, text=True, timeout=30).stdout.splitlines()]
            if sum(f["type"] in ("thinking", "assistant_text") for f in frames) >= 4:
                break
            assert time.monotonic() < deadline, runner.log()
            time.sleep(0.1)
        assert any(f["type"] == "state" for f in frames)
        human = subprocess.run([str(BUILD / "agenthub"), "log", "sess-1"], env=env, check=True,
                               capture_output=True, text=True, timeout=30).stdout
        lines = human.splitlines()
        assert [line for line in lines if "The user wants the tests fixed." in line], human
        assert [line for line in lines if "Running them now." in line], human
        assert not [line for line in lines if line.rstrip().endswith("The user wants the")]
        quiet = subprocess.run([str(BUILD / "agenthub"), "log", "sess-1", "--no-state"],
                               env=env, check=True, capture_output=True, text=True,
                               timeout=30).stdout
        assert "  state  " not in quiet and "The user wants the tests fixed." in quiet, quiet
    finally:
        runner.stop()
