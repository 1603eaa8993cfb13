#!/usr/bin/python3
"""Writes the committed starting corpus of every fuzz target into
tests/fuzz/corpus/<target>/ (run from anywhere; needs protoc and
python3-protobuf).  Rerun it when a target's input format or the method
table changes; the fuzzers grow their own corpora from these in scratch
directories.

fuzz_requests scripts follow tests/fuzz/fuzz_requests.c: an action byte A
(A % 5: 0 open, 1 message, 2 raw bytes, 3 half-close, 4 cancel; A // 5 picks
the call), then the action's bytes."""

import hashlib
import importlib
import importlib.util
import json
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fuzz" / "corpus"

# The order fuzz_requests.c lists services in, and its token table.
SERVICES = [("compass.v1.services_pb2", "CompassService"),
            ("compass.v1.services_pb2", "RunnerService"),
            ("compass.v1.services_pb2", "ResourceService"),
            ("grpc.health.v1.health_pb2", "Health"),
            ("grpc.reflection.v1.reflection_pb2", "ServerReflection"),
            ("grpc.reflection.v1alpha.reflection_pb2", "ServerReflection")]
TOKENS = [None, "t-admin", "t-alice", "t-bob", "t-carol", "t-agent-1", "t-agent-2",
          "t-runner-1", "t-runner-2", "t-unknown", "t-alice\x01", ""]


def modules():
    out = Path(tempfile.mkdtemp(prefix="agenthub-corpus-"))
    protos = [str(p.relative_to(ROOT / "proto")) for p in (ROOT / "proto").rglob("*.proto")]
    subprocess.run(["protoc", "-I", str(ROOT / "proto"), "--python_out", str(out), *protos],
                   check=True)
    sys.path.insert(0, str(out))
    return out


def load(tmp, module):
    """MODULE (dotted) from TMP by path: the grpc.* ones would otherwise
    resolve inside an installed grpcio."""
    if not module.startswith("grpc."):
        return importlib.import_module(module)
    if module not in LOADED:
        path = tmp / (module.replace(".", "/") + ".py")
        spec = importlib.util.spec_from_file_location("corpus_" + module.replace(".", "_"), path)
        LOADED[module] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(LOADED[module])
    return LOADED[module]


LOADED = {}


class Script:
    """A fuzz_requests input under construction."""

    def __init__(self, methods):
        self.methods = methods
        self.data = bytearray()
        self.calls = 0

    def open(self, path, token=None, runner=False, timeout=False, variant=0):
        b2 = TOKENS.index(token) | (0x10 if runner else 0) | (0x20 if timeout else 0) | \
            (variant << 6)
        self.data += bytes([0, self.methods.index(path), b2])
        self.calls += 1
        return self.calls - 1

    def send(self, call, message, split=0):
        body = message.SerializeToString()
        assert len(body) < 65536
        self.data += bytes([1 + 5 * call]) + struct.pack("<H", len(body)) + body + bytes([split])

    def raw(self, call, data):
        self.data += bytes([2 + 5 * call, len(data)]) + data

    def end(self, call):
        self.data += bytes([3 + 5 * call])

    def cancel(self, call):
        self.data += bytes([4 + 5 * call])

    def unary(self, path, message, token=None, runner=False):
        call = self.open(path, token, runner)
        self.send(call, message)
        self.end(call)
        return call


def write(target, name, data):
    d = OUT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def requests_corpus(tmp, svc, fr, health, refl):
    methods = []
    for module, name in SERVICES:
        desc = load(tmp, module).DESCRIPTOR.services_by_name[name]
        methods += [f"/{desc.full_name}/{m.name}" for m in desc.methods]
    C = "/compass.v1.CompassService/"
    R = "/compass.v1.RunnerService/"
    P = "/compass.v1.ResourceService/"

    def frame(**kw):
        return fr.AgentFrame(session=fr.SessionFrame(**kw))

    # A Runner hosting sess-1 with a subscriber and a message on its way.
    s = Script(methods)
    sub = s.open(C + "SubscribeAgentSession", "t-alice")
    s.send(sub, svc.SubscribeAgentSessionRequest(session_id="sess-1", tail=10))
    s.end(sub)
    s.unary(R + "Enroll", svc.EnrollRequest(runner_version="1.0", resume=True), "t-runner-1",
            True)
    ctl = s.open(R + "Sessions", "t-runner-1", True)
    s.send(ctl, svc.SessionsRequest(live_sessions=["sess-1"]))
    pub = s.open(R + "PublishEvents", "t-runner-1", True)
    events = [
        fr.SessionEvent(event_id="e1", assistant_text=fr.SessionAssistantText(text="hi")),
        fr.SessionEvent(event_id="e2", tool_call=fr.SessionToolCall(
            tool_call_id="t1", title="Read a.c", status=1)),
        fr.SessionEvent(event_id="e3", record=fr.AgentRecord(
            type="ask", data_json='{"tool_name":"Bash"}')),
        fr.SessionEvent(event_id="e4", plan=fr.SessionPlan(
            entries=[fr.AgentPlanEntry(content="x", status=1)])),
    ]
    for i, ev in enumerate(events):
        s.send(pub, fr.PublishEventsRequest(runner_seq=i + 1, session_id="sess-1",
                                            frame=frame(state=2, typed_event=ev)), split=40)
    s.send(pub, fr.PublishEventsRequest(runner_seq=5, session_id="sess-1", frame=fr.AgentFrame(
        transcript_entry=fr.TranscriptEntry(entry_json='{"role":"user"}', entry_seq=1))))
    # The agent's acks, and a keyed frame sent twice (the second is dropped).
    for seq, ack in [(6, fr.AgentFrame(control_ack=fr.ControlAck(acked_seq=1))),
                     (7, fr.AgentFrame(delivery_ack=fr.DeliveryAck(message_id="m1"))),
                     (8, fr.AgentFrame(replay_complete_ack=fr.ReplayCompleteAck()))]:
        s.send(pub, fr.PublishEventsRequest(runner_seq=seq, session_id="sess-1", frame=ack))
    for seq in (9, 10):
        s.send(pub, fr.PublishEventsRequest(runner_seq=seq, session_id="sess-1",
                                            idempotency_key="k1", frame=frame(state=3)))
    s.unary(C + "SendAgentMessage", svc.SendAgentMessageRequest(session_id="sess-1", text="go"),
            "t-alice")
    s.send(ctl, svc.SessionsRequest(request_id="1"))
    s.unary(C + "SkipBatchWindow", svc.SkipBatchWindowRequest(session_id="sess-1"), "t-alice")
    s.send(ctl, svc.SessionsRequest(request_id="2", error=svc.RunnerError(
        code=svc.RUNNER_ERROR_CODE_NOT_FOUND, message="not running")))
    s.end(pub)
    s.end(ctl)
    write("fuzz_requests", "runner_relay", bytes(s.data))

    # A Runner that opens Sessions with an empty message and answers the
    # status command it is sent, then enrolls anew (a new run from 1).
    s = Script(methods)
    s.unary(R + "Enroll", svc.EnrollRequest(runner_id="runner-1"), "t-runner-1", True)
    ctl = s.open(R + "Sessions", "t-runner-1", True)
    s.send(ctl, svc.SessionsRequest())
    s.send(ctl, svc.SessionsRequest(request_id="1", status=svc.GetAgentStatusResponse(
        statuses=[svc.AgentSessionStatus(session_id="sess-1", state=2)])))
    pub = s.open(R + "PublishEvents", "t-runner-1", True)
    s.send(pub, fr.PublishEventsRequest(runner_seq=1, session_id="sess-1", frame=frame(state=2)))
    s.unary(R + "Enroll", svc.EnrollRequest(runner_id="runner-1"), "t-runner-1", True)
    s.send(pub, fr.PublishEventsRequest(runner_seq=2, session_id="sess-1", frame=frame(state=3)))
    pub = s.open(R + "PublishEvents", "t-runner-1", True)
    s.send(pub, fr.PublishEventsRequest(runner_seq=1, session_id="sess-1", frame=frame(state=3)))
    s.unary(C + "StartAgentSession", svc.StartAgentSessionRequest(container_name="ctr-1"),
            "t-alice")
    s.send(ctl, svc.SessionsRequest(request_id="2", start=svc.StartAgentSessionResponse(
        session_id="x")))
    s.end(pub)
    s.end(ctl)
    write("fuzz_requests", "runner_restart", bytes(s.data))

    # The hook shim's path: a terminal, a session under it, records, close.
    s = Script(methods)
    s.unary(P + "SpawnResource", svc.SpawnResourceRequest(kind=0, container_name="ctr-1"),
            "t-admin")
    s.unary(P + "SpawnResource", svc.SpawnResourceRequest(
        kind=1, parent=1, provider="claude", native_id="abc-1"), "t-agent-1")
    s.unary(P + "AppendResourceOutput", svc.AppendResourceOutputRequest(
        provider="claude", native_id="abc-1",
        bytes=b'{"type":"prompt","data":{"length":3}}\n{"type":"stop","data":{}}\n'),
        "t-agent-1")
    # No bytes at all (protobuf-c hands the handler a NULL pointer).
    s.unary(P + "AppendResourceOutput", svc.AppendResourceOutputRequest(
        provider="claude", native_id="abc-1"), "t-agent-1")
    s.unary(P + "ReportAgentState", svc.ReportAgentStateRequest(
        resource_id=1, state="working", session_id="abc-1"), "t-agent-1")
    s.unary(P + "CloseResource", svc.CloseResourceRequest(provider="claude", native_id="abc-1"),
            "t-agent-1")
    write("fuzz_requests", "producer", bytes(s.data))

    # Account calls, the bus, lifecycle.
    s = Script(methods)
    ev = s.open(C + "SubscribeEvents", "t-bob")
    s.send(ev, svc.SubscribeEventsRequest())
    s.end(ev)
    for name, msg, tok in [("WhoAmI", svc.WhoAmIRequest(), "t-bob"),
                           ("GetServerInfo", svc.GetServerInfoRequest(), "t-carol"),
                           ("GetAgentStatus", svc.GetAgentStatusRequest(), "t-alice"),
                           ("StartAgentSession",
                            svc.StartAgentSessionRequest(container_name="ctr-1"), "t-alice"),
                           ("StopAgentSession",
                            svc.StopAgentSessionRequest(session_id="sess-1"), "t-alice")]:
        s.unary(C + name, msg, tok)
    write("fuzz_requests", "accounts", bytes(s.data))

    # Runner-door extras.
    s = Script(methods)
    s.unary(R + "UploadSessionBlob", svc.UploadSessionBlobRequest(
        session_id="sess-1", content_type="image/png", data=b"\x89PNG"), "t-runner-1", True)
    s.unary(R + "FetchSessionBlob", svc.FetchSessionBlobRequest(
        session_id="sess-1", blob_ref="sha256:" + hashlib.sha256(b"\x89PNG").hexdigest()),
        "t-runner-1", True)
    s.unary(R + "ReportEvidence", svc.ReportEvidenceRequest(
        session_id="sess-1", rank=1, state=3, live_child=True), "t-runner-1", True)
    write("fuzz_requests", "runner_misc", bytes(s.data))

    # Health, reflection, and requests the layer refuses.
    s = Script(methods)
    s.unary("/grpc.health.v1.Health/Check", health.HealthCheckRequest())
    w = s.open("/grpc.health.v1.Health/Watch")
    s.send(w, health.HealthCheckRequest(service="compass.v1.CompassService"))
    s.end(w)
    r = s.open("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo")
    s.send(r, refl.ServerReflectionRequest(list_services=""))
    s.send(r, refl.ServerReflectionRequest(
        file_containing_symbol="compass.v1.CompassService"))
    s.end(r)
    bad = s.open(C + "WhoAmI", "t-alice", variant=3)
    s.end(bad)
    bad = s.open(C + "WhoAmI", "t-unknown", timeout=True)
    s.raw(bad, b"\x00\x00\x00\x00\x05ab")
    s.end(bad)
    bad = s.open(C + "GetAgentStatus", "t-alice\x01")
    s.cancel(bad)
    write("fuzz_requests", "layer", bytes(s.data))


def hook_corpus():
    sid = "0b6a3c1e-5d0e-4c55-9d8e-2f1a6b7c8d9e"
    base = {"session_id": sid, "transcript_path": f"/tmp/{sid}.jsonl", "cwd": "/w",
            "permission_mode": "default"}
    shapes = {
        "SessionStart": {"source": "startup"},
        "UserPromptSubmit": {"prompt": "héllo ✓"},
        "PreToolUse": {"tool_name": "Bash", "tool_input": {"command": "ls"},
                       "tool_use_id": "toolu_01"},
        "PostToolUse": {"tool_name": "Bash", "tool_response": {"stdout": "x"}},
        "PermissionRequest": {"tool_name": "Write", "tool_input": {"file_path": "/x"}},
        "Notification": {"message": "Claude needs your permission to use Bash",
                         "notification_type": "permission_prompt"},
        "Stop": {"stop_hook_active": False},
        "SessionEnd": {"reason": "prompt_input_exit"},
    }
    for i, (event, extra) in enumerate(shapes.items()):
        hook = dict(base, hook_event_name=event, **extra)
        write("fuzz_hook_map", event, bytes([i & 1]) + json.dumps(hook).encode())
    # Every event Claude Code's hook types define, as tests/hooks/claude
    # holds it (type-checked against the SDK's declarations by the e2e
    # suite test_cli_hook_states.py).
    for i, path in enumerate(sorted((ROOT / "tests/hooks/claude").glob("*.json"))):
        write("fuzz_hook_map", "claude-" + path.stem, bytes([(i * 0x21) & 0x61]) +
              path.read_bytes())
    # The first byte's high bits pick the chunking: byte by byte, small
    # chunks, or whole.
    escaped = dict(base, hook_event_name="UserPromptSubmit", prompt="h\u00e9 \U0001F600 \\ \"q\"\n")
    write("fuzz_hook_map", "escapes", b"\x02" + json.dumps(escaped, ensure_ascii=True).encode())
    tool_input = {"n": [0, -0.5, 1e300, 12345678901234567890, True, None],
                  "nested": [[[{"k": "v\u0000"}]]], "text": "x" * 300}
    big = dict(base, hook_event_name="PreToolUse", tool_name="mcp__srv__do", tool_input=tool_input)
    write("fuzz_hook_map", "tool_input", b"\x41" + json.dumps(big).encode())
    write("fuzz_hook_map", "duplicates",
          b"\x80" + b'{"session_id":"a","tool_name":"x","hook_event_name":"PostToolUse",'
          b'"tool_name":"y","session_id":"b","prompt":1}')
    write("fuzz_hook_map", "truncated", b"\x03" + json.dumps(escaped).encode()[:-7])
    write("fuzz_hook_map", "deep", b"\x00" + b'{"session_id":"a","hook_event_name":"Stop","x":' +
          b"[" * 200 + b"]" * 200 + b"}")


def mcp_corpus():
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                    "clientInfo": {"name": "c", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": "a", "method": "tools/call",
         "params": {"name": "agenthub_agent_log", "arguments": {"session": "sess-1", "tail": 5}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "agenthub_agent_emit",
                    "arguments": {"session": "sess-1", "type": "stop", "data": {}}}},
        {"jsonrpc": "2.0", "id": 4, "method": "ping"},
    ]
    write("fuzz_mcp", "session", "\n".join(json.dumps(x) for x in lines) + "\n")
    write("fuzz_mcp", "batch", json.dumps(lines[2:5]) + "\nnot json\n[]\n")


def import_corpus():
    write("fuzz_import", "demo_world", (ROOT / "deploy" / "demo-world.json").read_bytes())
    write("fuzz_import", "small", json.dumps({
        "accounts": [{"id": "dave", "kind": "human", "tokens": ["t-dave-secret"]},
                     {"id": "agent-9", "kind": "agent", "home_channel": "chan-z",
                      "tokens": ["t-agent-9"]}],
        "channels": [{"id": "chan-z", "members": ["dave", "agent-9"]}],
        "runners": [{"id": "runner-9", "tokens": ["t-runner-9"]}],
        "containers": [{"name": "ctr-9", "agent_account": "agent-9", "runner": "runner-9"}],
        "sessions": [{"id": "sess-9", "container": "ctr-9", "owner": "dave"}]}))
    write("fuzz_import", "unfinished_token",
          '{"accounts": [{"id": "eve", "tokens": ["t-eve-secret-token')
    write("fuzz_import", "broken_near_token",
          '{"accounts": [{"id": "eve", "kind": "human", "tokens": ["t-eve-secret" "x"]}]}')


def frames_corpus(fr):
    lines = [
        {"assistant_text": {"text": "hi", "message_id": "m1"}},
        {"thinking": {"text": "..."}},
        {"tool_call": {"tool_call_id": "t1", "title": "Read a.c", "status": "IN_PROGRESS"}},
        {"tool_call_update": {"tool_call_id": "t1", "status": "COMPLETED", "output": ".."}},
        {"plan": {"entries": [{"content": "write tests", "status": "PENDING"}]}},
        {"notice": {"text": "note"}, "state": "WORKING"},
        {"record": {"type": "ask", "data": {"tool_name": "Bash"}}},
        {"state": "AGENT_SESSION_STATE_BLOCKED"},
        {"transcript_entry": {"entry": {"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "iVBORw0KGgo="}}]},
            "checkpoint": False, "entry_seq": 1}},
        {"transcript_entry": {"entry_json": "{\"a\":1}", "entry_seq": 2}},
        {"resume_entry": {"id": "r1", "entry": {"type": "blob", "blob_ref": "sha256:00"}}},
        {"event_id": "e9", "at_unix_ms": 1700000000000, "notice": {"text": "x"}},
    ]
    write("fuzz_agent_frames", "json", b"\x00" + "\r\n".join(
        json.dumps(x) for x in lines).encode() + b"\n")
    stream = b""
    for f in [fr.AgentFrame(session=fr.SessionFrame(state=2, typed_event=fr.SessionEvent(
                  assistant_text=fr.SessionAssistantText(text="hi")))),
              fr.AgentFrame(transcript_entry=fr.TranscriptEntry(entry_json='{"x":1}',
                                                                entry_seq=3))]:
        body = f.SerializeToString()
        stream += bytes([len(body)]) + body
    write("fuzz_agent_frames", "pb", b"\x01" + stream)


def small_corpora():
    write("fuzz_jsonl", "records",
          '{"type":"prompt","data":{"length":3}}\n{"seq":1,"ts_ms":2,"type":"notification",'
          '"data":{"kind":"permission"}}\n')
    write("fuzz_grpc_wire", "frames", b"\x07" + b"\x00\x00\x00\x00\x03abc" + b"\x00" * 5 +
          b"1S")
    data = (ROOT / "gen" / "descriptor_set.c").read_text()
    hexes = [int(x, 16) for x in data.split("{", 1)[1].split("}", 1)[0].replace(",", " ").split()]
    write("fuzz_descriptor_index", "descriptor_set", bytes(hexes))


def json_codec_corpus(svc, fr):
    """fuzz_json_codec: a type byte (index into its table; top bit: binary
    input), then JSON text or protobuf binary."""
    docs = [
        (0, '{"requestId":"r1","start":{"sessionId":"s"},"liveSessions":["a","b"]}'),
        (0, '{"request_id":"r1","error":{"code":"RUNNER_ERROR_CODE_NOT_FOUND","message":"x"}}'),
        (1, '{"requestId":"r","deliverControl":{"sessionId":"s","op":{"controlSeq":"7",'
            '"prompt":{"input":"hi \\u00e9\\n"}}},"sessionId":"s"}'),
        (2, '{"runnerSeq":"18446744073709551615","frame":{"session":{"state":3,'
            '"typedEvent":{"eventId":"e","atUnixMs":"-5","plan":{"entries":[{"content":"c",'
            '"status":"AGENT_PLAN_ENTRY_STATUS_COMPLETED"}]}}}}}'),
        (3, '{"seq":1,"payload":null,"agentSessionStatus":{"lastSeq":9}}'),
        (4, '{"statuses":[{"state":"AGENT_SESSION_STATE_READY"},{"state":77},null]}'),
        (6, '{"data":"-_8","contentType":"x"}'),
        (6, '{"data":"AAEC/w==","data":"x"}'),
        (8, '{"payload":"","statusCode":-2147483648,"responseCount":4294967295,"holdOpen":true}'),
        (7, '{"validHost":"h","originalRequest":{"listServices":""},'
            '"listServicesResponse":{"service":[{"name":"a"}]}}'),
    ]
    for i, (t, doc) in enumerate(docs):
        write("fuzz_json_codec", f"json{i}", bytes([t]) + doc.encode())
    msg = svc.SessionsRequest(request_id="r", live_sessions=["x", "y"])
    msg.status.statuses.add(session_id="s", state=2, last_seq=2**63)
    write("fuzz_json_codec", "binary", bytes([0x80]) + msg.SerializeToString())


def cluster_corpus():
    """fuzz_cluster_wire: batch bodies (hub/cluster_wire.h) and subjects."""
    def entry(kind, frame=b"", origin=b"", at=1700000000000, rseq=0):
        return (bytes([kind]) + struct.pack("<I", len(frame)) + struct.pack("<q", at) +
                bytes([len(origin)]) + struct.pack("<Q", rseq) + origin + frame)
    write("fuzz_cluster_wire", "one_frame", entry(0xff, b"\x1a\x05sess1"))
    write("fuzz_cluster_wire", "frame_with_origin",
          entry(0xff, b"\x22\x02hi", b"runner-1", rseq=7) + entry(0, b""))
    write("fuzz_cluster_wire", "marks", entry(1) + entry(0) + entry(2))
    write("fuzz_cluster_wire", "reset", entry(0xfe, b"", b"runner-1", rseq=12345))
    write("fuzz_cluster_wire", "truncated", entry(0xff, b"abcdef")[:-2])
    write("fuzz_cluster_wire", "subject_raw", b"sess-1")
    write("fuzz_cluster_wire", "subject_hex", b"~73657373")


def main():
    tmp = modules()
    try:
        svc = importlib.import_module("compass.v1.services_pb2")
        fr = importlib.import_module("compass.v1.frames_pb2")
        health = load(tmp, "grpc.health.v1.health_pb2")
        refl = load(tmp, "grpc.reflection.v1.reflection_pb2")
        if OUT.exists():
            shutil.rmtree(OUT)
        requests_corpus(tmp, svc, fr, health, refl)
        hook_corpus()
        mcp_corpus()
        import_corpus()
        frames_corpus(fr)
        small_corpora()
        json_codec_corpus(svc, fr)
        cluster_corpus()
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
