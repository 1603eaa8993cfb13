"""One test per scenario of seed 003 (session relay and observation), named
after it, driven with grpcio against agenthubd and a grpcio Runner double.
Seed 000 (the producer door) has no scenarios; its decisions are pinned in
test_rpc_resource.py."""
import os
import time

import grpc

from rpc_harness import (COMPASS, RUNNER, F, Hub, S, batch_pending, command_session, error_view, fail, hub,  # noqa
                         raw_unary, start_hub, subscribe, subscribe_events, text, wait_for)

NOT_FOUND = grpc.StatusCode.NOT_FOUND
FAILED_PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION


def blob_files(h):
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(h.blob_dir) for f in fs)


def make_live(h, runner_id, session_id):
    """RUNNER_ID connects, reports SESSION_ID and relays one frame into it."""
    r = h.runner(runner_id)
    r.enroll()
    r.open_sessions([session_id])
    r.publish(session_id, text("alive"))
    return r


def relay_calls():
    """Every Runner-originated agent relay, as (method, request builder)."""
    return [
        ("UploadSessionBlob",
         lambda sid: S.UploadSessionBlobRequest(session_id=sid, content_type="image/png",
                                                data=b"\x89PNG...")),
        ("FetchSessionBlob",
         lambda sid: S.FetchSessionBlobRequest(session_id=sid, blob_ref="0" * 64)),
        ("ReportEvidence",
         lambda sid: S.ReportEvidenceRequest(session_id=sid, rank=S.EVIDENCE_RANK_PROCESS,
                                             state=F.AGENT_SESSION_STATE_WORKING,
                                             live_child=True)),
    ]


def test_unknown_and_foreign_sessions_do_not_reveal_liveness(hub):
    # Given an unknown session id and a live session owned by another Runner
    bus = subscribe_events(hub, token="t-admin")
    make_live(hub, "runner-2", "sess-2")
    runner1 = hub.runner("runner-1")
    runner1.enroll()
    # sess-2 is live: its Runner's report (a status) and its frame are in.
    bus.wait(lambda items: {e.WhichOneof("payload") for e in items if e.session_id == "sess-2"}
             >= {"agent_message_chunk", "agent_session_status"}, what="sess-2 alive")
    before = len(bus.items)
    status_before = hub.call("GetAgentStatus", S.GetAgentStatusRequest(session_id="sess-2"),
                             token="t-admin")
    # When the Runner calls an agent relay with each id
    for name, build in relay_calls():
        unknown = fail(runner1.call, name, build("sess-unknown"))
        foreign = fail(runner1.call, name, build("sess-2"))
        # Then both calls return byte-identical FAILED_PRECONDITION errors
        assert unknown.code() == FAILED_PRECONDITION, name
        assert error_view(unknown) == error_view(foreign), name
        path = RUNNER + name
        raw_unknown = raw_unary(hub.runner_addr, path, build("sess-unknown").SerializeToString(),
                                token="t-runner-1")
        raw_foreign = raw_unary(hub.runner_addr, path, build("sess-2").SerializeToString(),
                                token="t-runner-1")
        assert raw_unknown == raw_foreign, name
        assert (b"grpc-status", b"9") in raw_unknown[0] + raw_unknown[2]
    # ... and neither call is delegated to an agent service: nothing stored,
    # no evidence reached the arbiter, the foreign session's state is untouched.
    assert blob_files(hub) == []
    runner1.open_sessions(["sess-1"])
    runner1.publish("sess-1", text("marker"))
    bus.wait(lambda items: any(e.session_id == "sess-1" and e.WhichOneof("payload") ==
                               "agent_message_chunk" for e in items), what="marker")
    assert [e for e in bus.items[before:] if e.session_id == "sess-2"] == []
    status_after = hub.call("GetAgentStatus", S.GetAgentStatusRequest(session_id="sess-2"),
                            token="t-admin")
    assert status_after == status_before
    bus.cancel()


def test_a_binding_read_fault_can_be_retried(start_hub):
    # Given a Runner relay whose session binding cannot be verified
    h = start_hub(blob_dir=True, env={"AGENTHUB_FAILPOINTS": "store.binding=fault"})
    runner1 = h.runner("runner-1")
    runner1.enroll()
    bus = subscribe_events(h, token="t-admin")
    # When the relay handles the call
    for name, build in relay_calls():
        err = fail(runner1.call, name, build("sess-1"))
        # Then it returns UNAVAILABLE (retryable) ...
        assert err.code() == grpc.StatusCode.UNAVAILABLE, name
        assert "SELECT" not in err.details() and "t-runner" not in err.details()
    err = fail(runner1.publish, "sess-1", text("not verified"))
    assert err.code() == grpc.StatusCode.UNAVAILABLE
    # ... and does not delegate the call: nothing stored, nothing relayed.
    assert blob_files(h) == []
    time.sleep(0.3)
    assert [e for e in bus.items if e.session_id == "sess-1"] == []
    bus.cancel()
    # The same calls succeed on a retry once the binding can be read again.
    h.stop()
    h2 = start_hub(db=h.db, blob_dir=h.blob_dir)
    retry = h2.runner("runner-1")
    retry.enroll()
    ref = retry.call("UploadSessionBlob", relay_calls()[0][1]("sess-1")).blob_ref
    assert retry.call("FetchSessionBlob", S.FetchSessionBlobRequest(
        session_id="sess-1", blob_ref=ref)).data == b"\x89PNG..."
    retry.call("ReportEvidence", relay_calls()[2][1]("sess-1"))
    retry.publish("sess-1", text("verified"))


def test_a_non_member_cannot_tell_a_private_session_from_a_missing_one(hub):
    # Given a live agent session whose owning agent's home channel (chan-a)
    # the caller (carol, chan-b only) is not a member of
    make_live(hub, "runner-1", "sess-1")
    # When the caller subscribes with that session id, and separately with a
    # session id that does not exist
    private = fail(hub.call, "SubscribeAgentSession",
                   S.SubscribeAgentSessionRequest(session_id="sess-1"), token="t-carol")
    missing = fail(hub.call, "SubscribeAgentSession",
                   S.SubscribeAgentSessionRequest(session_id="sess-does-not-exist"),
                   token="t-carol")
    # Then the server rejects both with the identical not-found
    assert private.code() == NOT_FOUND
    assert error_view(private) == error_view(missing)
    path = COMPASS + "SubscribeAgentSession"
    raw_private = raw_unary(hub.public, path, S.SubscribeAgentSessionRequest(
        session_id="sess-1").SerializeToString(), token="t-carol")
    raw_missing = raw_unary(hub.public, path, S.SubscribeAgentSessionRequest(
        session_id="sess-does-not-exist").SerializeToString(), token="t-carol")
    assert raw_private == raw_missing
    assert raw_private[1] == b""  # no frame leaked before the refusal
    assert (b"grpc-status", b"5") in raw_private[0] + raw_private[2]


def test_an_authorized_member_tails_a_live_session(hub):
    runner = hub.runner("runner-1")
    runner.enroll()
    runner.open_sessions(["sess-1"])
    runner.publish("sess-1", text("before joining"))
    # Given a caller (bob) that is a member of the session's home channel
    pane = subscribe(hub, "sess-1", token="t-bob")
    assert hub.metric("agenthub_session_subscribers") == 1
    # When it subscribes and the session emits a frame
    runner.publish("sess-1", text("hello bob"))
    # Then the server streams that frame to the caller (live: nothing before)
    frames = pane.wait_count(1)
    assert frames[0].session_id == "sess-1"
    assert frames[0].event.assistant_text.text == "hello bob"
    assert frames[0].seq > 0 and frames[0].at_unix_ms > 0
    # ... and ends the stream cleanly when the client disconnects.
    pane.cancel()
    hub.wait_metric("agenthub_session_subscribers", lambda v: v == 0)
    hub.wait_metric("agenthub_grpc_calls_open", lambda v: v <= 1)  # the Sessions stream
    runner.publish("sess-1", text("after leaving"))  # the relay is unaffected
    assert len(pane.items) == 1


def test_the_owner_skips_the_open_batch_window(hub):
    # Given an authenticated owner (alice) of a live agent session with an
    # open batch window (the window would not fire for a minute by itself)
    runner = hub.runner("runner-1", batch_ms=60000, ack_delay=0.3)
    runner.enroll()
    runner.open_sessions(["sess-1"])
    pane = subscribe(hub, "sess-1", token="t-alice")
    hub.call("SendAgentMessage", S.SendAgentMessageRequest(session_id="sess-1", text="do it"),
             token="t-alice")
    pane.wait(lambda items: [f for f in items if f.event.HasField("batch_pending")],
              what="the window to open")
    # When the owner calls SkipBatchWindow for that session
    started = time.monotonic()
    hub.call("SkipBatchWindow", S.SkipBatchWindowRequest(session_id="sess-1"), token="t-alice")
    took = time.monotonic() - started
    # Then the server relays start_now to the owning Runner (the call returns
    # once the Runner has acknowledged it) ...
    command = runner.wait_command("start_now")
    assert command_session(command) == "sess-1" and command.request_id
    assert took >= 0.25, "SkipBatchWindow returned before the Runner's ack"
    # ... and the pending batch fires immediately.
    assert runner.fired == [("sess-1", 1, "start_now")]
    counts = pane.wait(lambda items: (lambda c: c if c[-1:] == [0] else None)(
        [f.event.batch_pending.count for f in items if f.event.HasField("batch_pending")]),
        what="count 0")
    assert counts == [1, 0]
    pane.cancel()


def test_a_non_owner_member_cannot_distinguish_a_missing_session(hub):
    runner = hub.runner("runner-1", batch_ms=60000)
    runner.enroll()
    runner.open_sessions(["sess-1"])
    # Given a caller (bob) who is a member of the session's home channel but
    # is neither its owner nor an admin
    assert hub.call("GetAgentStatus", S.GetAgentStatusRequest(session_id="sess-1"),
                    token="t-bob").statuses[0].session_id == "sess-1"
    # When the caller calls SkipBatchWindow for that session and for a
    # session id that does not exist
    theirs = fail(hub.call, "SkipBatchWindow", S.SkipBatchWindowRequest(session_id="sess-1"),
                  token="t-bob")
    missing = fail(hub.call, "SkipBatchWindow",
                   S.SkipBatchWindowRequest(session_id="sess-nonexistent"), token="t-bob")
    # Then both calls fail with the identical NotFound
    assert theirs.code() == NOT_FOUND
    assert error_view(theirs) == error_view(missing)
    path = COMPASS + "SkipBatchWindow"
    assert raw_unary(hub.public, path, S.SkipBatchWindowRequest(
        session_id="sess-1").SerializeToString(), token="t-bob") == raw_unary(
        hub.public, path, S.SkipBatchWindowRequest(
            session_id="sess-nonexistent").SerializeToString(), token="t-bob")
    time.sleep(0.2)
    assert [c for c in runner.commands if c.WhichOneof("command") == "start_now"] == []


def test_a_burst_arms_re_arms_then_fires_the_window(hub):
    # Given an idle agent with batching on, and a subscriber tailing its session
    runner = hub.runner("runner-1", batch_ms=800)
    runner.enroll()
    runner.open_sessions(["sess-1"])
    pane = subscribe(hub, "sess-1", token="t-bob")
    # When two items arrive within the window, and the window then fires
    sent_at = int(time.time() * 1000)
    for item in ("first", "second"):
        hub.call("SendAgentMessage", S.SendAgentMessageRequest(session_id="sess-1", text=item),
                 token="t-alice")
    # Then the subscriber receives SessionBatchPending events with counts 1,
    # 2, then 0, and each nonzero event carries the time the window fires.
    pending = pane.wait(lambda items: (lambda b: b if len(b) >= 3 else None)(
        [f.event.batch_pending for f in items if f.event.HasField("batch_pending")]),
        timeout=10, what="three batch events")
    assert [p.count for p in pending] == [1, 2, 0]
    assert pending[0].fires_at_unix_ms >= sent_at + 700
    assert pending[1].fires_at_unix_ms >= pending[0].fires_at_unix_ms
    assert pending[2].fires_at_unix_ms == 0
    assert runner.fired == [("sess-1", 2, "timer")]
    # The window fired by itself: no start_now was involved.
    assert [c for c in runner.commands if c.WhichOneof("command") == "start_now"] == []
    pane.cancel()


def test_a_subscriber_that_joins_mid_window_sees_no_count_until_the_next_arm(hub):
    runner = hub.runner("runner-1", batch_ms=60000)
    runner.enroll()
    runner.open_sessions(["sess-1"])
    hub.call("SendAgentMessage", S.SendAgentMessageRequest(session_id="sess-1", text="one"),
             token="t-alice")
    runner.wait_command("deliver_control")
    late = subscribe(hub, "sess-1", token="t-alice")  # default: live tail, no replay
    hub.call("SendAgentMessage", S.SendAgentMessageRequest(session_id="sess-1", text="two"),
             token="t-alice")
    hub.call("SkipBatchWindow", S.SkipBatchWindowRequest(session_id="sess-1"), token="t-admin")
    counts = late.wait(lambda items: (lambda c: c if c[-1:] == [0] else None)(
        [f.event.batch_pending.count for f in items if f.event.HasField("batch_pending")]),
        what="count 0")
    assert counts == [2, 0]
    late.cancel()


def test_when_the_agent_ends_its_terminal_status_closes_the_window(hub):
    runner = hub.runner("runner-1", batch_ms=60000)
    runner.enroll()
    runner.open_sessions(["sess-1"])
    pane = subscribe(hub, "sess-1", token="t-bob")
    hub.call("SendAgentMessage", S.SendAgentMessageRequest(session_id="sess-1", text="x"),
             token="t-alice")
    hub.call("StopAgentSession", S.StopAgentSessionRequest(session_id="sess-1"), token="t-alice")
    code, _ = pane.finish()
    assert code == grpc.StatusCode.OK
    assert [f.event.batch_pending.count for f in pane.items
            if f.event.HasField("batch_pending")] == [1]
    assert pane.items[-1].state == F.AGENT_SESSION_STATE_STOPPED
    runner.wait_command("stop")
    wait_for(lambda: runner.fired == [("sess-1", 1, "closed")], what="the window to close")
