"""The Sessions control stream and the public door's unary calls:
SkipBatchWindow's check order and acknowledgement, StartAgentSession,
StopAgentSession, SendAgentMessage, GetAgentStatus, GetServerInfo, WhoAmI."""
import time

import grpc
import pytest

from rpc_harness import (COMPASS, F, S, command_session, command_text, error_view, fail, hub, raw_unary, start_hub,  # noqa
                         subscribe, subscribe_events, text, wait_for)

NOT_FOUND = grpc.StatusCode.NOT_FOUND
UNAVAILABLE = grpc.StatusCode.UNAVAILABLE


def skip(sid):
    return S.SkipBatchWindowRequest(session_id=sid)


# --- Sessions stream ---------------------------------------------------------

def test_a_second_sessions_stream_replaces_the_first(hub):
    first = hub.runner("runner-1")
    first.open_sessions(["sess-1"])
    wait_for(lambda: hub.metric("agenthub_grpc_calls_open") == 1, what="first stream")
    second = hub.runner("runner-1")
    second.open_sessions(["sess-1"])
    first.reader.join(10)
    assert first.stream_error is not None
    assert first.stream_error.code() == grpc.StatusCode.ABORTED
    hub.call("SkipBatchWindow", skip("sess-1"), token="t-alice")
    assert command_session(second.wait_command("start_now")) == "sess-1"
    assert [c for c in first.commands if c.WhichOneof("command") == "start_now"] == []


def test_a_dropped_runner_stream_publishes_disconnected_for_its_sessions(hub):
    r = hub.runner("runner-1")
    r.enroll()
    r.open_sessions(["sess-1"])
    r.publish("sess-1", text("hi"))
    other = hub.runner("runner-2")
    other.open_sessions(["sess-2"])
    other.publish("sess-2", text("unaffected"))
    # Both Runners' reports have been announced (one status each).
    hub.wait_metric("agenthub_status_changes_total", lambda v: v >= 2)
    pane = subscribe(hub, "sess-1", token="t-bob")
    bus = subscribe_events(hub, token="t-admin")
    # The snapshot: each session's latest status, then what happens next.
    told = len(bus.wait_count(2))
    r.drop_sessions()
    pane.wait(lambda items: any(f.state == F.AGENT_SESSION_STATE_DISCONNECTED for f in items),
              what="DISCONNECTED on the pane")
    status = bus.wait(lambda items: [e for e in items if e.HasField("agent_session_status") and
                                     e.agent_session_status.state ==
                                     F.AGENT_SESSION_STATE_DISCONNECTED],
                      what="DISCONNECTED on the bus")
    assert status[0].session_id == "sess-1"
    assert status[0].agent_session_status.agent_account_id == "agent-1"
    # The bus names the session's container and owner (agenthub's 101, 102).
    assert status[0].agent_session_status.container == "ctr-1"
    assert status[0].agent_session_status.owner == "alice"
    st = hub.call("GetAgentStatus", S.GetAgentStatusRequest(session_id="sess-1"),
                  token="t-alice").statuses[0]
    assert st.state == F.AGENT_SESSION_STATE_DISCONNECTED
    time.sleep(0.2)
    assert not [e for e in bus.items[told:] if e.session_id == "sess-2"]
    assert not pane.done.is_set()  # a disconnect is not the end of the session
    # The Runner comes back and re-reports: the session is live again.
    back = hub.runner("runner-1")
    back.open_sessions(["sess-1"])
    pane.wait(lambda items: items[-1].state not in (0, F.AGENT_SESSION_STATE_DISCONNECTED),
              what="a state after the reconnect")
    pane.cancel()
    bus.cancel()


def test_a_runner_report_never_adopts_another_runners_session(hub):
    bus = subscribe_events(hub, token="t-admin")
    r = hub.runner("runner-1")
    r.open_sessions(["sess-2", "sess-unknown", "sess-1"])
    bus.wait(lambda items: any(e.session_id == "sess-1" for e in items))
    time.sleep(0.2)
    assert {e.session_id for e in bus.items} == {"sess-1"}
    bus.cancel()


# --- SkipBatchWindow ---------------------------------------------------------

def test_skip_batch_window_without_a_runner_door_is_unavailable_first(start_hub):
    h = start_hub(runner=False)
    for token, sid in ((None, ""), ("t-wrong", "sess-1"), ("t-bob", ""), ("t-alice", "sess-1")):
        assert fail(h.call, "SkipBatchWindow", skip(sid), token=token).code() == UNAVAILABLE


def test_skip_batch_window_check_order(hub):
    r = hub.runner("runner-1")
    r.open_sessions(["sess-1"])
    # no caller: UNAUTHENTICATED, even with an empty id
    for token in (None, "t-wrong", "t-runner-1"):
        for sid in ("", "sess-1"):
            assert fail(hub.call, "SkipBatchWindow", skip(sid), token=token).code() == \
                grpc.StatusCode.UNAUTHENTICATED
    # empty id: INVALID_ARGUMENT, whoever asks
    for token in ("t-alice", "t-bob", "t-carol", "t-admin"):
        assert fail(hub.call, "SkipBatchWindow", skip(""), token=token).code() == \
            grpc.StatusCode.INVALID_ARGUMENT
    # neither owner nor admin, or unknown: one NotFound, byte for byte
    views = {error_view(fail(hub.call, "SkipBatchWindow", skip(sid), token=token))
             for token, sid in (("t-bob", "sess-1"), ("t-bob", "sess-unknown"),
                                ("t-carol", "sess-1"), ("t-agent-1", "sess-1"),
                                ("t-alice", "sess-unknown"), ("t-admin", "sess-unknown"))}
    assert len(views) == 1 and next(iter(views))[0] == NOT_FOUND
    raws = {repr(raw_unary(hub.public, COMPASS + "SkipBatchWindow", skip(sid).SerializeToString(),
                           token=token))
            for token, sid in (("t-bob", "sess-1"), ("t-bob", "sess-unknown"))}
    assert len(raws) == 1
    assert [c for c in r.commands if c.WhichOneof("command") == "start_now"] == []
    # the owner and an admin are admitted
    hub.call("SkipBatchWindow", skip("sess-1"), token="t-alice")
    hub.call("SkipBatchWindow", skip("sess-1"), token="t-admin")
    assert len([c for c in r.commands if c.WhichOneof("command") == "start_now"]) == 2


def test_skip_batch_window_is_unavailable_without_the_runners_stream(hub):
    err = fail(hub.call, "SkipBatchWindow", skip("sess-1"), token="t-alice")
    assert err.code() == UNAVAILABLE


def test_skip_batch_window_is_unavailable_when_the_runner_refuses(hub):
    r = hub.runner("runner-1", ack_ok=False)
    r.open_sessions(["sess-1"])
    err = fail(hub.call, "SkipBatchWindow", skip("sess-1"), token="t-alice")
    assert err.code() == UNAVAILABLE
    assert "refused by test" in err.details()


def test_skip_batch_window_is_unknown_when_the_runner_goes_away_after_it_was_sent(hub):
    # Written to the Runner, never answered: it may have been carried out,
    # so the caller is not told UNAVAILABLE ("not delivered, retry").
    r = hub.runner("runner-1", auto_ack=False)
    r.open_sessions(["sess-1"])
    ch = hub.channel()
    from rpc_harness import auth, method
    call = method(ch, "SkipBatchWindow").future(skip("sess-1"), metadata=auth("t-alice"),
                                                timeout=20)
    r.wait_command("start_now")
    started = time.monotonic()
    r.drop_sessions()
    err = call.exception(timeout=10)
    assert err is not None and err.code() == grpc.StatusCode.UNKNOWN
    assert "may have been delivered" in err.details()
    # At once, not by the 5 s acknowledgement deadline.
    assert time.monotonic() - started < 4


def test_skip_batch_window_gives_up_after_the_5_second_deadline(hub):
    r = hub.runner("runner-1", auto_ack=False)
    r.open_sessions(["sess-1"])
    started = time.monotonic()
    err = fail(hub.call, "SkipBatchWindow", skip("sess-1"), token="t-alice", timeout=30)
    took = time.monotonic() - started
    # Sent but unanswered: DEADLINE_EXCEEDED, "may have been delivered".
    assert err.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert "may have been delivered" in err.details()
    assert 4.5 <= took <= 7.0, "the default acknowledgement deadline is 5 s, took %.1f s" % took
    # A late ack for the answered command is counted, never passed on.
    r.ack(r.wait_command("start_now").request_id)
    hub.wait_metric("agenthub_runner_late_answers_total", lambda v: v == 1)
    hub.call("WhoAmI", S.WhoAmIRequest(), token="t-alice")


def test_a_caller_that_hangs_up_while_waiting_leaves_nothing_behind(hub):
    r = hub.runner("runner-1", auto_ack=False)
    r.open_sessions(["sess-1"])
    from rpc_harness import auth, method
    ch = hub.channel()
    call = method(ch, "SkipBatchWindow").future(skip("sess-1"), metadata=auth("t-alice"),
                                                timeout=20)
    command = r.wait_command("start_now")
    call.cancel()
    wait_for(lambda: hub.metric("agenthub_grpc_calls_open") == 1, what="the call to close")
    r.ack(command.request_id)  # too late: nobody is waiting
    r.auto_ack = True
    hub.call("SkipBatchWindow", skip("sess-1"), token="t-alice")


# --- the other unary calls ------------------------------------------------------

def test_start_agent_session_makes_the_caller_owner_and_tells_the_runner(hub):
    r = hub.runner("runner-1")
    r.open_sessions([])
    wait_for(lambda: hub.metric("agenthub_grpc_calls_open") == 1, what="Sessions stream")
    sid = hub.call("StartAgentSession", S.StartAgentSessionRequest(container_name="ctr-1"),
                   token="t-bob").session_id
    assert sid
    start = r.wait_command("start")
    assert start.session_id == sid and start.request_id
    # bob owns it: he may skip its window, alice (a member) may not.
    hub.call("SkipBatchWindow", skip(sid), token="t-bob")
    assert fail(hub.call, "SkipBatchWindow", skip(sid), token="t-alice").code() == NOT_FOUND
    st = hub.call("GetAgentStatus", S.GetAgentStatusRequest(session_id=sid), token="t-alice")
    assert st.statuses[0].agent_account_id == "agent-1"
    assert (st.statuses[0].container, st.statuses[0].owner) == ("ctr-1", "bob")
    # A non-member cannot start on the container: the same not-found as none.
    a = fail(hub.call, "StartAgentSession", S.StartAgentSessionRequest(container_name="ctr-1"),
             token="t-carol")
    b = fail(hub.call, "StartAgentSession", S.StartAgentSessionRequest(container_name="ctr-9"),
             token="t-carol")
    assert a.code() == NOT_FOUND and error_view(a) == error_view(b)
    assert fail(hub.call, "StartAgentSession", S.StartAgentSessionRequest(),
                token="t-bob").code() == grpc.StatusCode.INVALID_ARGUMENT


def test_send_agent_message_delivers_to_the_runner_for_owner_or_admin(hub):
    r = hub.runner("runner-1")
    r.open_sessions(["sess-1"])
    hub.call("SendAgentMessage", S.SendAgentMessageRequest(session_id="sess-1", text="hello"),
             token="t-alice")
    hub.call("SendAgentMessage", S.SendAgentMessageRequest(session_id="sess-1", text="sudo"),
             token="t-admin")
    assert [command_text(r.wait_command("deliver_control", n)) for n in (1, 2)] == ["hello", "sudo"]
    a = fail(hub.call, "SendAgentMessage", S.SendAgentMessageRequest(session_id="sess-1",
                                                                     text="x"), token="t-bob")
    b = fail(hub.call, "SendAgentMessage", S.SendAgentMessageRequest(session_id="nope",
                                                                     text="x"), token="t-bob")
    assert a.code() == NOT_FOUND and error_view(a) == error_view(b)
    assert len([c for c in r.commands if c.WhichOneof("command") == "deliver_control"]) == 2


def test_stop_agent_session_is_for_owner_or_admin_and_tells_the_runner(hub):
    r = hub.runner("runner-1")
    r.open_sessions(["sess-1"])
    hub.call("StopAgentSession", S.StopAgentSessionRequest(session_id="sess-1"), token="t-alice")
    assert command_session(r.wait_command("stop")) == "sess-1"
    st = hub.call("GetAgentStatus", S.GetAgentStatusRequest(session_id="sess-1"),
                  token="t-alice").statuses[0]
    assert st.state == F.AGENT_SESSION_STATE_STOPPED


def test_stop_of_a_session_the_caller_may_not_control_is_an_unknown_ones_no_op(hub):
    r = hub.runner("runner-1")
    r.open_sessions(["sess-1"])
    # bob may view sess-1 but not control it: answered as an unknown id is,
    # OK and nothing done (compass's Stop is idempotent).
    a = hub.call("StopAgentSession", S.StopAgentSessionRequest(session_id="sess-1"),
                 token="t-bob")
    b = hub.call("StopAgentSession", S.StopAgentSessionRequest(session_id="nope"),
                 token="t-bob")
    assert a == b == S.StopAgentSessionResponse()
    time.sleep(0.3)
    assert not [c for c in r.commands if c.WhichOneof("command") == "stop"]
    st = hub.call("GetAgentStatus", S.GetAgentStatusRequest(session_id="sess-1"),
                  token="t-alice").statuses[0]
    assert st.state != F.AGENT_SESSION_STATE_STOPPED
    # Stopping again what is stopped succeeds too.
    for _ in range(2):
        hub.call("StopAgentSession", S.StopAgentSessionRequest(session_id="sess-1"),
                 token="t-alice")


def test_get_agent_status_lists_what_the_caller_may_see(hub):
    hub.runner("runner-1").publish("sess-1", text("x"))

    def listed(token):
        return sorted(s.session_id for s in hub.call(
            "GetAgentStatus", S.GetAgentStatusRequest(), token=token).statuses)
    assert listed("t-admin") == ["sess-1", "sess-2"]
    assert listed("t-alice") == ["sess-1"]
    assert listed("t-bob") == ["sess-1"]
    assert listed("t-carol") == ["sess-2"]
    one = hub.call("GetAgentStatus", S.GetAgentStatusRequest(session_id="sess-1"),
                   token="t-bob").statuses
    assert len(one) == 1 and one[0].agent_account_id == "agent-1" and one[0].last_seq >= 1
    assert (one[0].container, one[0].owner) == ("ctr-1", "alice")

    def where(token):
        return sorted((s.session_id, s.container, s.owner) for s in hub.call(
            "GetAgentStatus", S.GetAgentStatusRequest(), token=token).statuses)
    # Each caller learns the container and owner of the sessions it may view
    # and of no other: carol's list names nothing of chan-a's.
    assert where("t-admin") == [("sess-1", "ctr-1", "alice"), ("sess-2", "ctr-2", "carol")]
    assert where("t-carol") == [("sess-2", "ctr-2", "carol")]
    a = fail(hub.call, "GetAgentStatus", S.GetAgentStatusRequest(session_id="sess-1"),
             token="t-carol")
    b = fail(hub.call, "GetAgentStatus", S.GetAgentStatusRequest(session_id="nope"),
             token="t-carol")
    assert a.code() == NOT_FOUND and error_view(a) == error_view(b)
    assert fail(hub.call, "GetAgentStatus", S.GetAgentStatusRequest()).code() == \
        grpc.StatusCode.UNAUTHENTICATED


def test_get_agent_status_tells_the_caller_whether_it_may_control(hub):
    # sess-1 is alice's; bob is a member of its home channel, not its owner.
    def may(token, sid="sess-1"):
        st = hub.call("GetAgentStatus", S.GetAgentStatusRequest(session_id=sid),
                      token=token).statuses
        assert len(st) == 1 and st[0].session_id == sid
        return st[0].caller_may_control
    assert may("t-alice") is True
    assert may("t-admin") is True
    assert may("t-bob") is False
    assert may("t-carol", "sess-2") is True and may("t-admin", "sess-2") is True
    # The listing answers the same, session by session.
    listed = {s.session_id: s.caller_may_control for s in hub.call(
        "GetAgentStatus", S.GetAgentStatusRequest(), token="t-bob").statuses}
    assert listed == {"sess-1": False}
    listed = {s.session_id: s.caller_may_control for s in hub.call(
        "GetAgentStatus", S.GetAgentStatusRequest(), token="t-admin").statuses}
    assert listed == {"sess-1": True, "sess-2": True}
    # Its answer agrees with the gate: bob's SkipBatchWindow is refused.
    assert fail(hub.call, "SkipBatchWindow", S.SkipBatchWindowRequest(session_id="sess-1"),
                token="t-bob").code() == NOT_FOUND


def test_get_server_info_and_who_am_i(hub):
    info = hub.call("GetServerInfo", S.GetServerInfoRequest(), token="t-bob")
    assert info.features & 0x4000
    assert info.api_version == "compass.v1" and info.version
    for token, who in (("t-alice", "alice"), ("t-admin", "admin"), ("t-agent-1", "agent-1")):
        assert hub.call("WhoAmI", S.WhoAmIRequest(), token=token).account_id == who
    err = fail(hub.call, "WhoAmI", S.WhoAmIRequest(), token="t-runner-1")
    assert err.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "t-runner-1" not in err.details()


def test_an_ack_from_another_runner_does_not_complete_a_command(hub):
    r1 = hub.runner("runner-1", auto_ack=False)
    r1.open_sessions(["sess-1"])
    r2 = hub.runner("runner-2", auto_ack=False)
    r2.open_sessions(["sess-2"])
    from rpc_harness import auth, method
    parked = method(hub.channel(), "SkipBatchWindow").future(
        skip("sess-1"), metadata=auth("t-alice"), timeout=30)
    command = r1.wait_command("start_now")
    r2.ack(command.request_id)  # forged: another Runner's request id
    time.sleep(0.5)
    assert not parked.done()
    r1.ack(command.request_id)
    assert parked.result(timeout=5) == S.SkipBatchWindowResponse()


def test_disconnected_reaches_sessions_known_only_by_a_subscriber_or_a_start(hub):
    r = hub.runner("runner-1")
    r.open_sessions()  # connected, reports nothing
    sid = hub.call("StartAgentSession", S.StartAgentSessionRequest(container_name="ctr-1"),
                   token="t-bob").session_id
    panes = [subscribe(hub, s, token="t-bob") for s in ("sess-1", sid)]
    r.drop_sessions()
    for s, pane in zip(("sess-1", sid), panes):
        pane.wait(lambda items: any(f.state == F.AGENT_SESSION_STATE_DISCONNECTED
                                    for f in items), what="DISCONNECTED for " + s)
        assert hub.call("GetAgentStatus", S.GetAgentStatusRequest(session_id=s),
                        token="t-bob").statuses[0].state == F.AGENT_SESSION_STATE_DISCONNECTED
        pane.cancel()


def test_a_forbidden_and_an_unknown_session_answer_byte_identically_on_every_call(hub):
    hub.runner("runner-1").publish("sess-1", text("live"))
    cases = [
        ("SubscribeAgentSession", "t-carol", lambda s: S.SubscribeAgentSessionRequest(
            session_id=s)),
        ("SubscribeAgentSession", "t-carol", lambda s: S.SubscribeAgentSessionRequest(
            session_id=s, since_seq=1, tail=5)),
        ("GetAgentStatus", "t-carol", lambda s: S.GetAgentStatusRequest(session_id=s)),
        ("SkipBatchWindow", "t-bob", skip),
        # StopAgentSession succeeds for both (idempotent): the same OK.
        ("StopAgentSession", "t-bob", lambda s: S.StopAgentSessionRequest(session_id=s)),
        ("SendAgentMessage", "t-bob", lambda s: S.SendAgentMessageRequest(session_id=s,
                                                                          text="hi")),
    ]
    for name, token, build in cases:
        seen = raw_unary(hub.public, COMPASS + name, build("sess-1").SerializeToString(),
                         token=token)
        unknown = raw_unary(hub.public, COMPASS + name, build("sess-x").SerializeToString(),
                            token=token)
        assert seen == unknown, name
        status = b"0" if name == "StopAgentSession" else b"5"
        assert (b"grpc-status", status) in seen[0] + seen[2], (name, seen)
        assert not any(k == b"agenthub-session" for k, _ in seen[0] + seen[2])


def test_a_stopped_agent_is_not_reported_disconnected_when_its_runner_leaves(hub):
    r = hub.runner("runner-1")
    r.open_sessions(["sess-1"])
    r.call("ReportEvidence", S.ReportEvidenceRequest(
        session_id="sess-1", rank=S.EVIDENCE_RANK_PROCESS,
        state=F.AGENT_SESSION_STATE_STOPPED, live_child=False))
    assert hub.call("GetAgentStatus", S.GetAgentStatusRequest(session_id="sess-1"),
                    token="t-alice").statuses[0].state == F.AGENT_SESSION_STATE_STOPPED
    pane = subscribe(hub, "sess-1", token="t-bob")
    r.drop_sessions()
    time.sleep(0.5)
    assert not [f for f in pane.items if f.state == F.AGENT_SESSION_STATE_DISCONNECTED]
    assert hub.call("GetAgentStatus", S.GetAgentStatusRequest(session_id="sess-1"),
                    token="t-alice").statuses[0].state == F.AGENT_SESSION_STATE_STOPPED
    pane.cancel()
