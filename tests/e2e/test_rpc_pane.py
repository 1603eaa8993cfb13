"""SubscribeAgentSession: check order, replay, clean endings (hang-up,
session end, lag), a slow subscriber beside a fast one, and a leak soak."""
import threading
import time

import grpc
import pytest

from rpc_harness import (COMPASS, F, S, RawStream, auth, command_session, error_view, event_frame, fail, hub,  # noqa
                         method, start_hub, subscribe, text, wait_for)

SUB = "SubscribeAgentSession"


def req(sid, since_seq=0, tail=0, agenthub_events=True):
    return S.SubscribeAgentSessionRequest(session_id=sid, since_seq=since_seq, tail=tail,
                                          agenthub_events=agenthub_events)


# --- check order ----------------------------------------------------------

def test_without_a_runner_door_subscribe_is_unavailable_before_anything_else(start_hub):
    h = start_hub(runner=False)
    for token, sid in ((None, "sess-1"), ("t-wrong", "sess-1"), ("t-carol", "sess-1"),
                       ("t-alice", "sess-1"), ("t-alice", "sess-unknown")):
        err = fail(h.call, SUB, req(sid), token=token)
        assert err.code() == grpc.StatusCode.UNAVAILABLE, (token, sid)


@pytest.mark.parametrize("token", [None, "t-wrong", "t-runner-1", ""])
def test_subscribe_without_an_authenticated_caller_is_unauthenticated(hub, token):
    for sid in ("sess-1", "sess-unknown", ""):
        err = fail(hub.call, SUB, req(sid), token=token)
        assert err.code() == grpc.StatusCode.UNAUTHENTICATED, (token, sid)


def test_unknown_and_forbidden_sessions_get_the_identical_not_found(hub):
    r = hub.runner("runner-2")
    r.publish("sess-2", text("live"))
    views = {error_view(fail(hub.call, SUB, req(sid), token="t-alice"))
             for sid in ("sess-2", "sess-unknown", "", "SESS-1")}
    assert len(views) == 1
    assert next(iter(views))[:2] == (grpc.StatusCode.NOT_FOUND, "session not found")
    # An id with a NUL is refused before any lookup, the same for every session.
    views = {error_view(fail(hub.call, SUB, req(sid), token="t-alice"))
             for sid in ("sess-2\x00", "sess-1\x00", "sess-unknown\x00")}
    assert len(views) == 1
    assert next(iter(views))[:2] == (grpc.StatusCode.INVALID_ARGUMENT,
                                     "session_id holds a NUL byte")
    # Admins see every session; the agent account sees its own home channel.
    for token in ("t-admin", "t-agent-1"):
        subscribe(hub, "sess-1", token=token).cancel()
    subscribe(hub, "sess-2", token="t-admin").cancel()


# --- replay -----------------------------------------------------------------

def texts(frames):
    return [f.event.assistant_text.text for f in frames if f.event.HasField("assistant_text")]


def test_since_seq_and_tail_replay_before_the_live_tail(hub):
    r = hub.runner("runner-1")
    r.publish("sess-1", *[text("m%d" % i) for i in range(1, 5)])  # seqs 1..4
    tail = subscribe(hub, "sess-1", tail=2)
    since = subscribe(hub, "sess-1", since_seq=1)
    everything = subscribe(hub, "sess-1", tail=1000)
    caught_up = subscribe(hub, "sess-1", since_seq=4)
    live = subscribe(hub, "sess-1")
    r.publish("sess-1", text("m5"))
    assert texts(tail.wait_count(3)) == ["m3", "m4", "m5"]
    assert texts(since.wait_count(4)) == ["m2", "m3", "m4", "m5"]
    assert texts(everything.wait_count(5)) == ["m1", "m2", "m3", "m4", "m5"]
    assert texts(caught_up.wait_count(1)) == ["m5"]
    assert texts(live.wait_count(1)) == ["m5"]
    assert [f.seq for f in everything.items] == [1, 2, 3, 4, 5]
    for rd in (tail, since, everything, caught_up, live):
        rd.cancel()
    # A resume point the log has not reached is OUT_OF_RANGE.
    assert fail(hub.call, SUB, req("sess-1", since_seq=99), token="t-alice").code() == \
        grpc.StatusCode.OUT_OF_RANGE


def test_an_evicted_since_seq_is_out_of_range(start_hub):
    # Memory alone: what the ring gave up is gone (test_disk_retention.py
    # has the disk's older frames).
    h = start_hub(flags=["--agent-log-bytes", "4096", "--log", "memory"])
    r = h.runner("runner-1")
    r.publish("sess-1", *[text("x" * 400) for _ in range(40)])
    err = fail(h.call, SUB, req("sess-1", since_seq=1), token="t-alice")
    assert err.code() == grpc.StatusCode.OUT_OF_RANGE
    # tail replays only what is retained, oldest first, nothing evicted.
    rd = subscribe(h, "sess-1", tail=1000)
    got = rd.wait(lambda items: items if items and items[-1].seq == 40 else None)
    assert got[0].seq > 1 and [f.seq for f in got] == list(range(got[0].seq, 41))
    rd.cancel()


# --- clean endings ------------------------------------------------------------

def test_a_client_hang_up_ends_the_subscription(hub):
    r = hub.runner("runner-1")
    panes = [subscribe(hub, "sess-1", token=t) for t in ("t-alice", "t-bob", "t-admin")]
    assert hub.metric("agenthub_session_subscribers") == 3
    panes[0].cancel()
    hub.wait_metric("agenthub_session_subscribers", lambda v: v == 2)
    r.publish("sess-1", text("still here"))
    for p in panes[1:]:
        assert texts(p.wait_count(1)) == ["still here"]
        p.cancel()
    hub.wait_metric("agenthub_session_subscribers", lambda v: v == 0)
    hub.wait_metric("agenthub_grpc_calls_open", lambda v: v == 0)


def test_stop_agent_session_ends_the_pane_with_ok_and_the_last_seq(hub):
    r = hub.runner("runner-1")
    r.enroll()
    r.open_sessions(["sess-1"])
    pane = subscribe(hub, "sess-1", token="t-bob")
    # Stream evidence (a tool call in progress) makes it WORKING first.
    r.publish("sess-1", text("working"), event_frame(tool_call=F.SessionToolCall(
        tool_call_id="t", status=F.AGENT_TOOL_CALL_STATUS_IN_PROGRESS)))
    pane.wait(lambda items: any(f.state == F.AGENT_SESSION_STATE_WORKING for f in items))
    hub.call("StopAgentSession", S.StopAgentSessionRequest(session_id="sess-1"), token="t-alice")
    code, trailers = pane.finish()
    assert code == grpc.StatusCode.OK
    # STOPPED is the last word: no fallback state is published after it.
    assert pane.items[-1].state == F.AGENT_SESSION_STATE_STOPPED
    assert trailers["agenthub-last-seq"] == str(pane.items[-1].seq)
    assert command_session(r.wait_command("stop")) == "sess-1"
    # A subscriber to an ended session ends OK at once.
    late = subscribe(hub, "sess-1", token="t-bob")
    assert late.finish()[0] == grpc.StatusCode.OK and late.items == []


def spawn_agent_session(h, native_id=""):
    terminal = h.call("SpawnResource", S.SpawnResourceRequest(
        kind=S.RESOURCE_KIND_TERMINAL, container_name="ctr-1"), token="t-runner-1",
        door="runner").resource_id
    spawned = h.call("SpawnResource", S.SpawnResourceRequest(
        kind=S.RESOURCE_KIND_AGENT_SESSION, parent=terminal, provider="claude",
        native_id=native_id), token="t-agent-1")
    return terminal, spawned.resource_id, spawned.session_id


def test_close_resource_ends_the_pane_with_ok(hub):
    _, rid, sid = spawn_agent_session(hub)
    pane = subscribe(hub, sid, token="t-bob")
    hub.call("AppendResourceOutput", S.AppendResourceOutputRequest(
        resource_id=rid, bytes=b'{"type":"prompt","data":{"length":4}}\n'), token="t-agent-1")
    pane.wait(lambda items: any(f.event.HasField("record") for f in items))
    hub.call("CloseResource", S.CloseResourceRequest(resource_id=rid), token="t-agent-1")
    code, trailers = pane.finish()
    assert code == grpc.StatusCode.OK
    assert trailers["agenthub-last-seq"] == str(pane.items[-1].seq)


def test_a_subscriber_that_falls_behind_the_ring_ends_ok_with_the_last_seq(start_hub):
    # Memory alone: on disk a reader behind the ring is served from disk.
    h = start_hub(flags=["--agent-log-bytes", "262144", "--subscriber-buffer-bytes", "67108864",
                         "--log", "memory"])
    r = h.runner("runner-1")
    r.publish("sess-1", text("start"))
    slow = RawStream(h.public, COMPASS + SUB, req("sess-1").SerializeToString(),
                     token="t-alice")
    for _ in range(8):
        r.publish("sess-1", *[text("y" * 16384) for _ in range(16)])  # 2 MiB in all
    messages, trailers = slow.read_to_end()
    slow.close()
    assert trailers["grpc-status"] == "0"
    assert messages, "the slow subscriber got nothing before the drop"
    last = F.AgentSessionFrame.FromString(messages[-1])
    assert trailers["agenthub-last-seq"] == str(last.seq)
    assert last.seq < 2 + 8 * 16
    assert h.metric("agenthub_subscriber_lag_drops_total") >= 1


def test_a_stalled_subscriber_ends_ok_while_another_receives_all_10_mib(hub):
    r = hub.runner("runner-1")
    r.publish("sess-1", text("start"))
    start_seq = 1
    slow = RawStream(hub.public, COMPASS + SUB, req("sess-1").SerializeToString(),
                     token="t-alice")
    fast = subscribe(hub, "sess-1", token="t-bob")
    frame_bytes = 32 * 1024
    total = 10 * 1024 * 1024
    per_batch = 8
    sent = 0
    started = time.monotonic()
    while sent < total // frame_bytes:
        r.publish("sess-1", *[text("%08d" % (sent + i) + "z" * (frame_bytes - 8))
                              for i in range(per_batch)])
        sent += per_batch
        # Pace on the fast reader only: the stalled one never holds anyone up.
        fast.wait_count(sent, timeout=30)
    took = time.monotonic() - started
    got = fast.items
    assert len(got) == sent == 320
    assert [f.seq for f in got] == list(range(start_seq + 1, start_seq + 1 + sent))
    assert [int(f.event.assistant_text.text[:8]) for f in got] == list(range(sent))
    assert fast.error is None and not fast.done.is_set()
    # The stalled subscriber was dropped cleanly: OK, with where to resume.
    messages, trailers = slow.read_to_end()
    slow.close()
    assert trailers["grpc-status"] == "0", trailers
    frames = [F.AgentSessionFrame.FromString(m) for m in messages]
    assert trailers["agenthub-last-seq"] == str(frames[-1].seq if frames else 0)
    assert len(frames) < sent
    assert [f.seq for f in frames] == list(range(start_seq + 1, start_seq + 1 + len(frames)))
    assert hub.metric("agenthub_subscriber_lag_drops_total") == 1
    assert hub.metric("agenthub_session_subscribers") == 1
    fast.cancel()
    assert took < 60


def test_one_frame_larger_than_the_subscriber_bound_reaches_caught_up_subscribers(hub):
    r = hub.runner("runner-1")
    r.publish("sess-1", text("small"))
    panes = [subscribe(hub, "sess-1", token=t) for t in ("t-alice", "t-bob")]
    big = "b" * (3 * 1024 * 1024)  # over the 1 MiB default bound, under the 4 MiB ring
    r.publish("sess-1", text(big))
    r.publish("sess-1", text("after"))
    for p in panes:
        got = p.wait_count(2, timeout=20)
        assert [len(t) for t in texts(got)] == [len(big), 5]
        assert not p.done.is_set()
        p.cancel()
    assert hub.metric("agenthub_subscriber_lag_drops_total") == 0


# --- leaks ----------------------------------------------------------------------

def test_ten_thousand_subscribe_cancel_cycles_leak_nothing(start_hub):
    h = start_hub()
    r = h.runner("runner-1")
    r.publish("sess-1", text("seed"))
    cycles, workers = 10000, 8
    errors = []
    counter = [0]
    lock = threading.Lock()

    def work(n):
        ch = None
        try:
            for i in range(n):
                # A cancel is a RST_STREAM: the server's rapid-reset guard
                # allows a burst of 1000 per connection, so stay under it.
                if i % 400 == 0:
                    if ch is not None:
                        ch.close()
                    # Its own connection (grpcio shares one per target).
                    ch = grpc.insecure_channel(
                        h.public, options=[("grpc.use_local_subchannel_pool", 1)])
                    call_sub = method(ch, SUB)
                call = call_sub(req("sess-1", tail=1 if i % 2 else 0), metadata=auth("t-bob"))
                call.initial_metadata()
                if i % 2:
                    next(call)  # the replayed frame
                call.cancel()
                with lock:
                    counter[0] += 1
        except Exception as err:  # noqa: BLE001
            errors.append(repr(err))
        finally:
            if ch is not None:
                ch.close()
    threads = [threading.Thread(target=work, args=(cycles // workers,)) for _ in range(workers)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, (errors[:3], h.stderr()[-3000:])
    assert counter[0] == cycles
    assert time.monotonic() - started < 90
    h.wait_metric("agenthub_session_subscribers", lambda v: v == 0)
    h.wait_metric("agenthub_grpc_calls_open", lambda v: v == 0)
    served = sum(v for k, v in h.metrics().items()
                 if k.startswith("agenthub_grpc_calls_total") and SUB in k)
    assert served >= cycles, served
    # start_hub's teardown SIGTERMs the server: LSan must find no leak (exit 0).
