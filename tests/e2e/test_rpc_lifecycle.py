"""Lifecycle across the RPC surface: SIGTERM with streams and a parked
control call open, a replaced control stream failing its pending command."""
import signal
import time

import grpc

from rpc_harness import (S, auth, command_session, fail, hub, method, start_hub, subscribe,  # noqa
                         subscribe_events, text)


def test_sigterm_ends_open_streams_unavailable_and_exits_0(start_hub):
    h = start_hub()
    r = h.runner("runner-1", auto_ack=False)
    r.enroll()
    r.open_sessions(["sess-1"])
    r.publish("sess-1", text("hi"))
    pane = subscribe(h, "sess-1", token="t-bob")
    bus = subscribe_events(h, token="t-admin")
    parked = method(h.channel(), "SkipBatchWindow").future(
        S.SkipBatchWindowRequest(session_id="sess-1"), metadata=auth("t-alice"), timeout=30)
    r.wait_command("start_now")
    started = time.monotonic()
    h.proc.send_signal(signal.SIGTERM)
    for reader in (pane, bus):
        code, _ = reader.finish(timeout=6)
        assert code == grpc.StatusCode.UNAVAILABLE
    # Its command was written and never answered: it may have been carried
    # out, so the caller hears UNKNOWN, not a "retry me" UNAVAILABLE.
    err = parked.exception(timeout=6)
    assert err is not None and err.code() == grpc.StatusCode.UNKNOWN
    r.reader.join(6)
    assert r.stream_error is not None
    assert r.stream_error.code() == grpc.StatusCode.UNAVAILABLE
    assert h.proc.wait(6) == 0
    assert time.monotonic() - started < 5.5
    # start_hub's teardown checks the exit status (0) again


def test_a_replaced_control_stream_fails_its_pending_command(hub):
    # Written to the replaced stream, never answered: UNKNOWN ("may have
    # been delivered"); see test_hostile_hub.py for commands never written.
    first = hub.runner("runner-1", auto_ack=False)
    first.open_sessions(["sess-1"])
    parked = method(hub.channel(), "SkipBatchWindow").future(
        S.SkipBatchWindowRequest(session_id="sess-1"), metadata=auth("t-alice"), timeout=30)
    first.wait_command("start_now")
    second = hub.runner("runner-1")
    second.open_sessions(["sess-1"])
    err = parked.exception(timeout=5)
    assert err is not None and err.code() == grpc.StatusCode.UNKNOWN
    # ... and the new stream carries the next one.
    hub.call("SkipBatchWindow", S.SkipBatchWindowRequest(session_id="sess-1"), token="t-alice")
    assert command_session(second.wait_command("start_now")) == "sess-1"


def test_send_and_stop_without_the_runners_stream(hub):
    err = fail(hub.call, "SendAgentMessage", S.SendAgentMessageRequest(session_id="sess-1",
                                                                       text="x"),
               token="t-alice")
    assert err.code() == grpc.StatusCode.UNAVAILABLE
    # Stop needs no acknowledgement: the session is closed either way.
    hub.call("StopAgentSession", S.StopAgentSessionRequest(session_id="sess-1"), token="t-alice")
    assert hub.call("GetAgentStatus", S.GetAgentStatusRequest(session_id="sess-1"),
                    token="t-alice").statuses[0].state == 4  # STOPPED


def test_sigterm_mid_publish_keeps_the_last_runner_seq(start_hub):
    from rpc_harness import RequestQueue
    h = start_hub()
    r = h.runner("runner-1")
    requests = RequestQueue()
    publish = method(r.channel, "PublishEvents").future(requests, metadata=auth("t-runner-1"),
                                                        timeout=30)
    pane = subscribe(h, "sess-1", tail=10)
    for i in range(5):
        requests.put(r.request("sess-1", text("x%d" % i)))
    pane.wait_count(5)
    h.proc.send_signal(signal.SIGTERM)
    err = publish.exception(timeout=6)
    assert err is not None and err.code() == grpc.StatusCode.UNAVAILABLE
    assert h.proc.wait(6) == 0
    again = start_hub(db=h.db)
    assert again.runner("runner-1").enroll().last_runner_seq == 5
