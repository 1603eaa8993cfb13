"""The public door as a compass UI reads it: every field agenthub adds to a
message compass defines sits at 100 and up, no SubscribeEvents event is
empty to a compass reader, GetServerInfo's version is a version string,
and StopAgentSession is idempotent without telling a forbidden session
from an unknown one.

The reader's messages are NOT generated from proto/: they are written here
by hand from compass.v1's published names and numbers (a
FileDescriptorProto in a private descriptor pool), as test_compass_runner.py
does for the Runner door.  A response's raw bytes are walked against them:
every field number present is compass's, or agenthub's at 100 and up.
Native gRPC carries every check; Connect (binary and JSON) and gRPC-Web
over HTTP/1.1 carry the unary ones and a resumed SubscribeEvents.
"""
import json
import shutil
import struct
import subprocess
import time

import grpc
from google.protobuf import json_format

import compass_schema
from compass_ui_facts import ENUMS, FACTS, OWN
from rpc_harness import (COMPASS, F, S, Reader, auth, batch_pending, event_frame,  # noqa: F401
                         hub, record, state_frame, subscribe_events, text, thinking, wait_for)


def compass_messages():
    """compass's public-door message classes, in a pool of their own."""
    return compass_schema.messages("compass_ui_double.proto", FACTS, ENUMS)


C = compass_messages()


# --- the raw walk -------------------------------------------------------------

def varint(data, at):
    value = shift = 0
    while True:
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, at


def fields_of(data):
    """[(number, wire type, bytes of a length-delimited field or None)]."""
    out, at = [], 0
    while at < len(data):
        key, at = varint(data, at)
        number, wire = key >> 3, key & 7
        body = None
        if wire == 0:
            _, at = varint(data, at)
        elif wire == 1:
            at += 8
        elif wire == 5:
            at += 4
        elif wire == 2:
            n, at = varint(data, at)
            body = data[at:at + n]
            at += n
        else:
            raise AssertionError("wire type %d in %r" % (wire, data))
        assert at <= len(data), "truncated message"
        out.append((number, wire, body))
    return out


def below_own(data, message, path=None):
    """The fields of DATA (a compass MESSAGE on the wire) that compass does not
    define and that sit below 100, as 'Message.number' paths; nested compass
    messages are walked too."""
    desc = message.DESCRIPTOR if hasattr(message, "DESCRIPTOR") else message
    path = path or desc.name
    bad = []
    for number, wire, body in fields_of(data):
        field = desc.fields_by_number.get(number)
        if field is None:
            if number < OWN:
                bad.append("%s.%d" % (path, number))
        elif field.message_type is not None and wire == 2:
            bad += below_own(body, field.message_type, path + "." + field.name)
    return bad


def field_numbers(data):
    return {number for number, _, _ in fields_of(data)}


def field_bytes(data, number):
    """The bytes of length-delimited field NUMBER of DATA (b"" when absent)."""
    return next((body for n, wire, body in fields_of(data) if n == number and wire == 2), b"")


# --- the doors ------------------------------------------------------------------

def raw_unary(hub, name, request, token):
    """The response bytes of a native gRPC unary call."""
    call = hub.channel().unary_unary(COMPASS + name)
    return call(request.SerializeToString(), metadata=auth(token), timeout=10)


def curl(hub, name, body, content_type, http2, seconds=10, token="t-alice"):
    """(HTTP status, body) of one POST to the public door."""
    assert shutil.which("curl"), "curl is missing: run make deps"
    args = ["curl", "-s", "-i", "--max-time", str(seconds), "--data-binary", "@-",
            "-H", "Content-Type: " + content_type, "-H", "Authorization: Bearer " + token]
    args.append("--http2-prior-knowledge" if http2 else "--http1.1")
    args.append("http://%s%s%s" % (hub.public, COMPASS, name))
    out = subprocess.run(args, input=body, capture_output=True, timeout=seconds + 20).stdout
    head, _, rest = out.partition(b"\r\n\r\n")
    return int(head.split(b"\r\n")[0].split()[1]), rest


def frames(body):
    """[(flags, payload)] of an enveloped body (Connect streams, gRPC-Web)."""
    out = []
    while len(body) >= 5:
        flags, n = struct.unpack(">BI", body[:5])
        out.append((flags, body[5:5 + n]))
        body = body[5 + n:]
    return out


def unary_everywhere(hub, name, request, token="t-alice"):
    """NAME's response bytes over native gRPC, Connect binary (HTTP/2 and
    HTTP/1.1) and gRPC-Web (HTTP/1.1): {protocol: bytes}."""
    raw = request.SerializeToString()
    out = {"grpc": raw_unary(hub, name, request, token)}
    for http2 in (True, False):
        status, body = curl(hub, name, raw, "application/proto", http2, token=token)
        assert status == 200, (name, http2, body)
        out["connect" + ("" if http2 else "-http1")] = body
    status, body = curl(hub, name, struct.pack(">BI", 0, len(raw)) + raw,
                        "application/grpc-web+proto", False, token=token)
    assert status == 200, (name, body)
    messages = [p for f, p in frames(body) if not f & 0x80]
    trailer = [p for f, p in frames(body) if f & 0x80]
    assert b"grpc-status:0" in trailer[0].replace(b" ", b""), trailer
    out["grpc-web"] = messages[0]
    return out


def connect_json(hub, name, doc, token="t-alice"):
    status, body = curl(hub, name, json.dumps(doc).encode(), "application/json", True,
                        token=token)
    return status, json.loads(body)


# --- frames of every kind ----------------------------------------------------------

def every_kind_of_frame():
    return [
        text("hello"), thinking("hmm"),
        event_frame(tool_call=F.SessionToolCall(tool_call_id="t1", title="ls",
                                                status=F.AGENT_TOOL_CALL_STATUS_IN_PROGRESS)),
        event_frame(tool_call_update=F.SessionToolCallUpdate(
            tool_call_id="t1", status=F.AGENT_TOOL_CALL_STATUS_COMPLETED, output="a b")),
        event_frame(plan=F.SessionPlan(entries=[F.AgentPlanEntry(
            content="step", status=F.AGENT_PLAN_ENTRY_STATUS_PENDING)])),
        event_frame(notice=F.SessionNotice(text="note")),
        batch_pending(2, 1700000000000),
        record("prompt", {"length": 3}),
        state_frame("READY"),
    ]


def payload(message):
    return message.WhichOneof("payload")


class RawStream:
    """A native server stream of raw bytes (SubscribeEvents by default),
    open when made and read on a thread: .items."""

    def __init__(self, hub, request, token, name="SubscribeEvents"):
        call = hub.channel().unary_stream(COMPASS + name)(
            request.SerializeToString(), metadata=auth(token), timeout=60)
        call.initial_metadata()
        self.reader = Reader(call)

    @property
    def items(self):
        return list(self.reader.items)

    def wait(self, predicate, what="items"):
        return self.reader.wait(predicate, what=what)

    def cancel(self):
        self.reader.cancel()


# --- the tests -----------------------------------------------------------------------

def test_server_info_is_a_version_string_with_the_product_in_an_agenthub_field(hub):
    for protocol, data in unary_everywhere(hub, "GetServerInfo", C.GetServerInfoRequest()).items():
        assert below_own(data, C.GetServerInfoResponse) == [], protocol
        info = C.GetServerInfoResponse.FromString(data)
        assert (info.version, info.api_version) == ("0.1.0", "compass.v1"), protocol
    ours = hub.call("GetServerInfo", S.GetServerInfoRequest(), token="t-alice")
    assert ours.product == "agenthubd" and ours.features & 0x4000
    status, doc = connect_json(hub, "GetServerInfo", {})
    assert status == 200 and (doc["version"], doc["apiVersion"]) == ("0.1.0", "compass.v1")
    assert doc["product"] == "agenthubd"


def test_no_agenthub_field_below_100_and_no_empty_frame_on_the_public_doors_messages(hub):
    r = hub.runner("runner-1")
    r.open_sessions(["sess-1"])
    bus = RawStream(hub, C.SubscribeEventsRequest(), "t-alice")
    compass = RawStream(hub, C.SubscribeAgentSessionRequest(session_id="sess-1"), "t-alice",
                        name="SubscribeAgentSession")
    ours = RawStream(hub, S.SubscribeAgentSessionRequest(session_id="sess-1",
                                                         agenthub_events=True), "t-alice",
                     name="SubscribeAgentSession")
    r.publish("sess-1", *every_kind_of_frame())
    r.publish("sess-1", text("last"))

    def upto_last(reader, what):
        return list(reader.wait(lambda items: any(
            C.AgentSessionFrame.FromString(d).event.assistant_text.text == "last"
            for d in items) and items, what=what))
    # agenthub's reader has every frame; agenthub's own events (the batch
    # window, the record) sit at 100 and up in the event, the frame's seq and
    # time at 100 and 101, and nothing else is agenthub's.
    pane = upto_last(ours, "every frame in agenthub's pane")
    own = [d for d in pane if field_numbers(field_bytes(d, 2)) & {100, 101}]
    assert len(own) == 2
    for data in pane:
        assert field_numbers(data) <= {1, 2, 3, 100, 101}
        assert below_own(data, C.AgentSessionFrame) == [], C.AgentSessionFrame.FromString(data)
    # The compass reader has the rest, each one a state or one of compass's
    # events, never an empty frame.
    seen = upto_last(compass, "compass's frames in the pane")
    assert [F.AgentSessionFrame.FromString(d).seq for d in seen] == [
        F.AgentSessionFrame.FromString(d).seq for d in pane if d not in own]
    for data in seen:
        assert below_own(data, C.AgentSessionFrame) == [], C.AgentSessionFrame.FromString(data)
        frame = C.AgentSessionFrame.FromString(data)
        assert frame.state or frame.event.WhichOneof("event"), frame
    kinds = {C.AgentSessionFrame.FromString(d).event.WhichOneof("event") for d in seen}
    assert {"assistant_text", "thinking", "tool_call", "tool_call_update", "plan",
            "notice"} <= kinds
    compass.cancel()
    ours.cancel()

    events = bus.wait(lambda items: [e for e in items if payload(C.SubscribeEventsResponse
                                                                 .FromString(e)) ==
                                     "agent_plan"], what="the plan on the bus")
    for data in bus.items:
        assert below_own(data, C.SubscribeEventsResponse) == [], \
            C.SubscribeEventsResponse.FromString(data)
    assert events
    for protocol, data in unary_everywhere(hub, "GetAgentStatus", C.GetAgentStatusRequest(
            session_id="sess-1")).items():
        assert below_own(data, C.GetAgentStatusResponse) == [], protocol
        (st,) = C.GetAgentStatusResponse.FromString(data).statuses
        assert st.session_id == "sess-1"
        # agenthub's own status fields are there, at 100 and up.
        extra = field_numbers(field_bytes(data, 1)) - {1, 2, 3}
        assert extra and min(extra) >= OWN, extra
    bus.cancel()


def test_a_compass_reader_never_sees_an_event_without_a_payload(hub):
    r = hub.runner("runner-1")
    r.open_sessions(["sess-1"])
    r.publish("sess-1", text("before"))
    compass = RawStream(hub, C.SubscribeEventsRequest(), "t-alice")
    ours = subscribe_events(hub, token="t-alice")
    r.publish("sess-1", *every_kind_of_frame())
    r.publish("sess-1", text("last"))
    compass.wait(lambda items: [e for e in items if C.SubscribeEventsResponse.FromString(e)
                                .agent_message_chunk.text == "last"], what="the last text")
    got = [C.SubscribeEventsResponse.FromString(e) for e in compass.items]
    assert got and all(payload(e) for e in got), [e for e in got if not payload(e)]
    # What a record says that compass can read arrives as compass's own
    # payload: the state it implies (a prompt: WORKING) as a status.
    working = ENUMS["AgentSessionState"].index("WORKING")
    assert working in [e.agent_session_status.state for e in got
                       if payload(e) == "agent_session_status"]
    # agenthub's own reader asked for agenthub's payloads: it has them, with
    # their session; the compass reader's seqs skip exactly those.
    ours.wait(lambda items: [e for e in items if e.agent_message_chunk.text == "last"])
    own = [e for e in ours.items if e.WhichOneof("payload") in ("agent_record",
                                                                "session_batch_pending")]
    assert sorted(e.WhichOneof("payload") for e in own) == ["agent_record",
                                                            "session_batch_pending"]
    assert all(e.session_id == "sess-1" for e in own)
    # (ServerStatus, which opens the compass reader's stream, is no bus
    # event: the harness leaves it out of ours.)
    assert {e.seq for e in got if payload(e) != "server_status"} == \
        {e.seq for e in ours.items} - {e.seq for e in own}

    # A compass reader resuming over every other protocol: the same events.
    # (The text published before the readers came keeps "hello" past seq 1.)
    first = next(e.seq for e in got if e.agent_message_chunk.text == "hello")
    assert first > 1
    resume = C.SubscribeEventsRequest(since_seq=first - 1, instance_epoch=got[0].instance_epoch)
    raw = resume.SerializeToString()
    want = [(e.seq, payload(e)) for e in got if e.seq >= first]
    for name, body, content_type, http2 in (
            ("connect", struct.pack(">BI", 0, len(raw)) + raw, "application/connect+proto",
             True),
            ("connect-http1", struct.pack(">BI", 0, len(raw)) + raw,
             "application/connect+proto", False),
            ("grpc-web", struct.pack(">BI", 0, len(raw)) + raw, "application/grpc-web+proto",
             False)):
        _, out = curl(hub, "SubscribeEvents", body, content_type, http2, seconds=3)
        messages = [p for f, p in frames(out) if f == 0]
        for data in messages:
            assert below_own(data, C.SubscribeEventsResponse) == [], name
        seen = [(m.seq, payload(m)) for m in map(C.SubscribeEventsResponse.FromString,
                                                  messages)]
        assert seen[:len(want)] == want, name
    doc = json_format.MessageToJson(resume)
    _, out = curl(hub, "SubscribeEvents", struct.pack(">BI", 0, len(doc)) + doc.encode(),
                  "application/connect+json", True, seconds=3)
    seen = []
    for f, p in frames(out):
        if f == 0:
            m = json_format.Parse(p, C.SubscribeEventsResponse(), ignore_unknown_fields=True)
            seen.append((m.seq, payload(m)))
    assert seen[:len(want)] == want
    compass.cancel()
    ours.cancel()


def test_stop_is_idempotent_and_a_forbidden_session_answers_as_an_unknown_one(hub):
    r = hub.runner("runner-1")
    r.open_sessions(["sess-1"])
    stop = C.StopAgentSessionRequest
    # carol may not see sess-1, bob may see it but not control it: both get
    # exactly what an unknown id gets, an empty success, on every protocol.
    for token in ("t-carol", "t-bob"):
        forbidden = unary_everywhere(hub, "StopAgentSession", stop(session_id="sess-1"), token)
        unknown = unary_everywhere(hub, "StopAgentSession", stop(session_id="sess-nope"), token)
        assert forbidden == unknown
        assert set(forbidden.values()) == {b""}
        status, doc = connect_json(hub, "StopAgentSession", {"sessionId": "sess-1"}, token)
        assert (status, doc) == (200, {})
    time.sleep(0.3)
    assert not [c for c in r.commands if c.WhichOneof("command") == "stop"]
    assert hub.call("GetAgentStatus", S.GetAgentStatusRequest(session_id="sess-1"),
                    token="t-alice").statuses[0].state != F.AGENT_SESSION_STATE_STOPPED
    # The owner's stop stops it; stopping it again succeeds and changes nothing.
    assert raw_unary(hub, "StopAgentSession", stop(session_id="sess-1"), "t-alice") == b""
    wait_for(lambda: [c for c in r.commands if c.WhichOneof("command") == "stop"],
             what="the stop command")
    assert raw_unary(hub, "StopAgentSession", stop(session_id="sess-1"), "t-alice") == b""
    assert hub.call("GetAgentStatus", S.GetAgentStatusRequest(session_id="sess-1"),
                    token="t-alice").statuses[0].state == F.AGENT_SESSION_STATE_STOPPED
    # An empty id is still a malformed request.
    try:
        raw_unary(hub, "StopAgentSession", stop(), "t-alice")
        raise AssertionError("an empty session_id was accepted")
    except grpc.RpcError as err:
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT

