"""A Runner built the way compass.v1's own Runner is, against agenthubd.

The double's messages are NOT generated from proto/: its schema is written
here by hand, field by field, from compass.v1's published numbering (a
FileDescriptorProto in a private descriptor pool).  Only the subscriber side
(the public door) uses agenthub's generated messages.

The double enrolls with a plain Enroll (a compass Runner never asks to
resume), opens Sessions with an empty first message, answers start, stop,
status and deliver_control with compass-shaped results and a RunnerError,
and publishes frames numbered from 1.  Then its process "restarts": a new
connection, a new plain Enroll, runner_seq from 1 again.  Its new frames
still reach the subscriber, and a resend carrying an idempotency_key the
server already saw is dropped.
"""
import threading

import grpc
import pytest
from google.protobuf import descriptor_pb2

import compass_schema
from rpc_harness import (RequestQueue, S, auth, fail, hub, start_hub,  # noqa: F401
                         subscribe, subscribe_events, wait_for)
from rpc_harness import text as agenthub_text

RUNNER = "/compass.v1.RunnerService/"
FD = descriptor_pb2.FieldDescriptorProto
STRING, BOOL, UINT64, INT64 = FD.TYPE_STRING, FD.TYPE_BOOL, FD.TYPE_UINT64, FD.TYPE_INT64
MESSAGE, ENUM = FD.TYPE_MESSAGE, FD.TYPE_ENUM

# compass.v1's numbering, from its published schema: (name, number, type,
# type name or None, oneof or None, repeated).
FACTS = {
    "EnrollRequest": [("runner_id", 1, STRING)],
    "EnrollResponse": [("reattached", 1, BOOL)],
    "StartAgentSessionRequest": [("container_name", 1, STRING),
                                 ("resume_session_id", 3, STRING)],
    "StartAgentSessionResponse": [("session_id", 1, STRING)],
    "StopAgentSessionRequest": [("session_id", 1, STRING)],
    "StopAgentSessionResponse": [],
    "GetAgentStatusRequest": [("session_id", 1, STRING)],
    "AgentSessionStatus": [("session_id", 1, STRING), ("state", 2, ENUM, "AgentSessionState"),
                           ("agent_account_id", 3, STRING)],
    "GetAgentStatusResponse": [("statuses", 1, MESSAGE, "AgentSessionStatus", None, True)],
    "PromptControl": [("input", 1, STRING)],
    "AgentControl": [("prompt", 1, MESSAGE, "PromptControl", "control"),
                     ("control_seq", 8, UINT64)],
    "DispatchControl": [("session_id", 1, STRING), ("op", 2, MESSAGE, "AgentControl")],
    "RunnerError": [("code", 1, ENUM, "RunnerErrorCode"), ("message", 2, STRING)],
    "SessionsResponse": [
        ("request_id", 1, STRING),
        ("start", 2, MESSAGE, "StartAgentSessionRequest", "command"),
        ("stop", 3, MESSAGE, "StopAgentSessionRequest", "command"),
        ("status", 5, MESSAGE, "GetAgentStatusRequest", "command"),
        ("deliver_control", 11, MESSAGE, "DispatchControl", "command"),
        # agenthub's documented addition: the session a start is for (its
        # server, not the Runner, names sessions).
        ("session_id", 101, STRING)],
    "SessionsRequest": [
        ("request_id", 1, STRING),
        ("start", 2, MESSAGE, "StartAgentSessionResponse", "result"),
        ("stop", 3, MESSAGE, "StopAgentSessionResponse", "result"),
        ("status", 5, MESSAGE, "GetAgentStatusResponse", "result"),
        ("error", 7, MESSAGE, "RunnerError", "result")],
    "SessionAssistantText": [("text", 1, STRING), ("message_id", 2, STRING)],
    "SessionEvent": [("event_id", 1, STRING), ("at_unix_ms", 2, INT64),
                     ("assistant_text", 3, MESSAGE, "SessionAssistantText", "event")],
    "SessionFrame": [("state", 1, ENUM, "AgentSessionState"),
                     ("typed_event", 2, MESSAGE, "SessionEvent")],
    "ReplayCompleteAck": [],
    "ControlAck": [("acked_seq", 1, UINT64)],
    "DeliveryAck": [("message_id", 1, STRING)],
    "AgentFrame": [("session", 3, MESSAGE, "SessionFrame", "frame"),
                   ("replay_complete_ack", 4, MESSAGE, "ReplayCompleteAck", "frame"),
                   ("control_ack", 5, MESSAGE, "ControlAck", "frame"),
                   ("delivery_ack", 6, MESSAGE, "DeliveryAck", "frame")],
    "PublishEventsRequest": [("runner_seq", 1, UINT64), ("session_id", 2, STRING),
                             ("frame", 3, MESSAGE, "AgentFrame"),
                             ("idempotency_key", 4, STRING)],
    "PublishEventsResponse": [],
}
ENUMS = {
    "AgentSessionState": ["UNSPECIFIED", "STARTING", "READY", "WORKING", "STOPPED", "ERRORED",
                          "DISCONNECTED"],
    "RunnerErrorCode": ["UNSPECIFIED", "ALREADY_RUNNING", "NOT_FOUND", "INTERNAL",
                        "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION"],
}


def compass_messages():
    """The double's message classes, in a pool of their own."""
    return compass_schema.messages("compass_runner_double.proto", FACTS, ENUMS)


C = compass_messages()
CODE = {v: i for i, v in enumerate(ENUMS["RunnerErrorCode"])}


def text_frame(t):
    return C.AgentFrame(session=C.SessionFrame(typed_event=C.SessionEvent(
        assistant_text=C.SessionAssistantText(text=t))))


class CompassRunner:
    """One process of the double: its own connection and its own runner_seq
    from 1.  ANSWER(command) returns the SessionsRequest to send, or None."""

    def __init__(self, hub, answer, token="t-runner-1"):
        self.hub = hub
        self.token = token
        self.answer = answer
        self.channel = grpc.insecure_channel(hub.runner_addr)
        self.seq = 0
        self.commands = []
        self.cond = threading.Condition()
        self.requests = None
        self.call = None

    def _method(self, kind, name, req, resp):
        maker = {"uu": self.channel.unary_unary, "ss": self.channel.stream_stream,
                 "su": self.channel.stream_unary}[kind]
        return maker(RUNNER + name, request_serializer=req.SerializeToString,
                     response_deserializer=resp.FromString)

    def enroll(self, runner_id="runner-1"):
        return self._method("uu", "Enroll", C.EnrollRequest, C.EnrollResponse)(
            C.EnrollRequest(runner_id=runner_id), metadata=auth(self.token), timeout=10)

    def open_sessions(self):
        self.requests = RequestQueue()
        # A compass Runner opens with an empty message.
        self.requests.put(C.SessionsRequest())
        self.call = self._method("ss", "Sessions", C.SessionsRequest, C.SessionsResponse)(
            self.requests, metadata=auth(self.token))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for command in self.call:
                with self.cond:
                    self.commands.append(command)
                    self.cond.notify_all()
                reply = self.answer(command)
                if reply is not None:
                    self.requests.put(reply)
        except grpc.RpcError:
            pass

    def wait_command(self, kind, count=1):
        with self.cond:
            self.cond.wait_for(lambda: len([c for c in self.commands
                                             if c.WhichOneof("command") == kind]) >= count, 10)
            found = [c for c in self.commands if c.WhichOneof("command") == kind]
            assert len(found) >= count, "no %s command (have %r)" % (kind, self.commands)
            return found[count - 1]

    def frame(self, session_id, frame, key="", seq=None):
        if seq is None:
            self.seq += 1
            seq = self.seq
        return C.PublishEventsRequest(runner_seq=seq, session_id=session_id, frame=frame,
                                      idempotency_key=key)

    def publish(self, *requests):
        return self._method("su", "PublishEvents", C.PublishEventsRequest,
                            C.PublishEventsResponse)(iter(requests), metadata=auth(self.token),
                                                     timeout=30)

    def close(self):
        if self.call is not None:
            self.call.cancel()
            self.requests.close()
        self.channel.close()


def compass_answer(command):
    """What compass's Runner sends for each command: the result of its kind,
    a RunnerError when it cannot, nothing for a delivered control op."""
    rid = command.request_id
    kind = command.WhichOneof("command")
    if kind == "start":
        return C.SessionsRequest(request_id=rid, start=C.StartAgentSessionResponse(
            session_id=command.session_id))
    if kind == "stop":
        return C.SessionsRequest(request_id=rid, stop=C.StopAgentSessionResponse())
    if kind == "status":
        return C.SessionsRequest(request_id=rid, status=C.GetAgentStatusResponse(statuses=[
            C.AgentSessionStatus(session_id="sess-1", state=2)]))
    if kind == "deliver_control":
        if command.deliver_control.op.prompt.input == "full":
            return C.SessionsRequest(request_id=rid, error=C.RunnerError(
                code=CODE["RESOURCE_EXHAUSTED"], message="the retention buffer is full"))
        return C.SessionsRequest(request_id=rid)  # taken: a bare answer
    return C.SessionsRequest(request_id=rid, error=C.RunnerError(
        code=CODE["INTERNAL"], message="unrecognized session command"))


def pane_texts(pane):
    return [i.event.assistant_text.text for i in pane.items if i.event.HasField("assistant_text")]


def test_a_compass_runner_is_served_and_survives_its_own_restart(start_hub):
    h = start_hub()
    pane = subscribe(h, "sess-1", token="t-bob")
    bus = subscribe_events(h)
    first = CompassRunner(h, compass_answer)
    try:
        # Its own id is accepted; another Runner's id is someone else's token.
        assert first.enroll().reattached is False
        err = fail(first.enroll, runner_id="runner-2")
        assert err.code() == grpc.StatusCode.UNAUTHENTICATED
        first.open_sessions()

        # Its empty opening message is answered with a status command for
        # every session; its status result is its report.
        status = first.wait_command("status")
        assert status.status.session_id == ""
        bus.wait(lambda items: [e for e in items if e.session_id == "sess-1" and
                                e.WhichOneof("payload") == "agent_session_status"],
                 what="sess-1 announced")

        # start: compass's StartAgentSessionRequest, answered with its result.
        sid = h.call("StartAgentSession", S.StartAgentSessionRequest(container_name="ctr-1"),
                     token="t-alice").session_id
        start = first.wait_command("start")
        assert start.start.container_name == "ctr-1" and start.session_id == sid
        assert start.start.resume_session_id == ""

        # deliver_control: the text rides as a prompt op; a RunnerError
        # becomes the caller's status.
        err = fail(h.call, "SendAgentMessage",
                   S.SendAgentMessageRequest(session_id="sess-1", text="full"), token="t-alice")
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert err.details() == "control dispatch failed: the retention buffer is full"
        h.call("SendAgentMessage", S.SendAgentMessageRequest(session_id="sess-1", text="hello"),
               token="t-alice")
        deliver = first.wait_command("deliver_control", 2)
        assert deliver.deliver_control.session_id == "sess-1"
        assert deliver.deliver_control.op.WhichOneof("control") == "prompt"
        assert deliver.deliver_control.op.prompt.input == "hello"
        assert deliver.deliver_control.op.control_seq > 0

        # stop: compass's StopAgentSessionRequest, answered with its result.
        h.call("StopAgentSession", S.StopAgentSessionRequest(session_id=sid), token="t-alice")
        assert first.wait_command("stop").stop.session_id == sid

        # Frames numbered from 1 reach the subscriber; the agent's acks are
        # counted as acks, not as unknown frames.
        control_seq = deliver.deliver_control.op.control_seq
        first.publish(first.frame("sess-1", text_frame("one"), key="k1"),
                      first.frame("sess-1", text_frame("two"), key="k2"),
                      first.frame("sess-1", C.AgentFrame(control_ack=C.ControlAck(
                          acked_seq=control_seq))),
                      first.frame("sess-1", C.AgentFrame(delivery_ack=C.DeliveryAck(
                          message_id="m1"))),
                      first.frame("sess-1", C.AgentFrame(
                          replay_complete_ack=C.ReplayCompleteAck())),
                      first.frame("sess-1", text_frame("three"), key="k3"))
        pane.wait(lambda items: pane_texts(pane) == ["one", "two", "three"], what="three frames")
    finally:
        first.close()

    # The process restarts: a new connection, a plain Enroll, runner_seq
    # from 1 again.  None of its frames is taken for a retry.
    again = CompassRunner(h, compass_answer)
    try:
        assert again.enroll().reattached is False
        again.open_sessions()
        again.wait_command("status")
        again.publish(again.frame("sess-1", text_frame("four"), key="k4"),
                      # A resend of "two" from before the restart: same key.
                      again.frame("sess-1", text_frame("two"), key="k2"),
                      again.frame("sess-1", text_frame("five")))
        pane.wait(lambda items: "five" in pane_texts(pane), what="the frames after the restart")
        assert pane_texts(pane) == ["one", "two", "three", "four", "five"]
        m = h.metrics()
        assert m["agenthub_relay_duplicates_total"] == 1, m
        assert m["agenthub_relay_retries_total"] == 0, m
        assert m["agenthub_relay_gaps_total"] == 0, m
        assert m["agenthub_relay_unknown_frames_total"] == 0, m
        assert m['agenthub_relay_acks_total{kind="control"}'] == 1, m
        assert m['agenthub_relay_acks_total{kind="delivery"}'] == 1, m
        assert m['agenthub_relay_acks_total{kind="replay_complete"}'] == 1, m
        assert m['agenthub_runner_enrollments_total{kind="new"}'] == 2, m
    finally:
        again.close()
        pane.cancel()
        bus.cancel()


def test_a_stream_of_a_runners_previous_run_is_ended(start_hub):
    """A PublishEvents stream belongs to the run it was opened in: once the
    Runner enrolls again without resuming, a frame on it is refused, and
    nothing it carries reaches the pane."""
    h = start_hub()
    pane = subscribe(h, "sess-1", token="t-bob")
    old = CompassRunner(h, compass_answer)
    new = CompassRunner(h, compass_answer)
    try:
        old.enroll()
        queue = RequestQueue()
        stale = old._method("su", "PublishEvents", C.PublishEventsRequest,
                            C.PublishEventsResponse).future(queue, metadata=auth(old.token),
                                                            timeout=30)
        queue.put(old.frame("sess-1", text_frame("old run")))
        pane.wait(lambda items: pane_texts(pane) == ["old run"], what="the old run's frame")
        new.enroll()
        queue.put(old.frame("sess-1", text_frame("late")))
        err = stale.exception(timeout=10)
        assert err is not None and err.code() == grpc.StatusCode.ABORTED
        assert err.details() == ("the runner enrolled again without resuming: this "
                                 "PublishEvents stream belongs to its previous run")
        new.publish(new.frame("sess-1", text_frame("new run")))
        pane.wait(lambda items: "new run" in pane_texts(pane), what="the new run's frame")
        assert pane_texts(pane) == ["old run", "new run"]
        assert h.metric("agenthub_relay_stale_streams_total") == 1
    finally:
        queue.close()
        old.close()
        new.close()
        pane.cancel()


def test_a_runner_that_resumes_keeps_its_run(start_hub):
    """agenthub's resume (101) continues the mark: a resend of a frame of the
    run is a retry, and reattached says the run went on.  A plain Enroll
    after it starts over at 1."""
    h = start_hub()
    r = h.runner("runner-1")
    assert r.enroll(resume=False).reattached is False
    r.publish("sess-1", *[agenthub_text("t%d" % i) for i in range(3)])
    again = r.enroll(resume=True)
    assert again.reattached is True and again.last_runner_seq == 3
    r.publish_raw([r.request("sess-1", agenthub_text("t2"), runner_seq=3)])
    assert h.metric("agenthub_relay_retries_total") == 1
    fresh = r.enroll(resume=False)
    assert fresh.reattached is False and fresh.last_runner_seq == 0
    r.publish_raw([r.request("sess-1", agenthub_text("t0 of a new run"), runner_seq=1)])
    m = h.metrics()
    assert m["agenthub_relay_retries_total"] == 1, m
    assert m["agenthub_relay_gaps_total"] == 0, m
    assert m["agenthub_frames_accepted_total"] == 4, m
    assert m['agenthub_runner_enrollments_total{kind="resumed"}'] == 1, m
