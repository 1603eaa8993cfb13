"""The Runner door: relay check order, session blobs, PublishEvents runner_seq
accounting in /metrics, and the projection of every frame kind onto
SubscribeEvents."""
import os

import grpc
import pytest

from rpc_harness import (RUNNER, F, S, auth, batch_pending, error_view, event_frame, fail,  # noqa
                         hub, record, start_hub, state_frame, subscribe, subscribe_events, text,
                         thinking, wait_for, world_with)

UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED


def blob_files(h):
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(h.blob_dir) for f in fs)


def upload(sid, data=b"payload", content_type="text/plain"):
    return S.UploadSessionBlobRequest(session_id=sid, content_type=content_type, data=data)


def fetch(sid, ref):
    return S.FetchSessionBlobRequest(session_id=sid, blob_ref=ref)


def evidence(sid):
    return S.ReportEvidenceRequest(session_id=sid, rank=S.EVIDENCE_RANK_SCREEN,
                                   state=F.AGENT_SESSION_STATE_WORKING)


TWO_SESSIONS = world_with(sessions=[{"id": "sess-3", "container": "ctr-1", "owner": "alice"}])


# --- check order ----------------------------------------------------------

@pytest.mark.parametrize("token", [None, "t-wrong", "t-alice", "t-runner-1x"])
def test_a_bad_runner_credential_is_unauthenticated_before_anything_else(start_hub, token):
    h = start_hub()  # no --blob-dir: credentials are still checked first
    r = h.runner("runner-1")
    for name, req in (("UploadSessionBlob", upload("sess-unknown")),
                      ("FetchSessionBlob", fetch("sess-unknown", "x")),
                      ("ReportEvidence", evidence("sess-unknown")),
                      ("Enroll", S.EnrollRequest())):
        err = fail(r.channel.unary_unary(RUNNER + name, request_serializer=lambda m: m.
                                         SerializeToString()), req, metadata=auth(token),
                   timeout=10)
        assert err.code() == UNAUTHENTICATED, (name, token)
        assert "t-" not in err.details()
    err = fail(r.publish_raw, [r.request("sess-1", text("x"))], token=token or "")
    assert err.code() == UNAUTHENTICATED


def test_blob_calls_without_blob_dir_are_unimplemented(start_hub):
    h = start_hub()
    r = h.runner("runner-1")
    for sid in ("sess-1", "sess-2", "sess-unknown"):  # before the binding check
        assert fail(r.call, "UploadSessionBlob", upload(sid)).code() == \
            grpc.StatusCode.UNIMPLEMENTED
        assert fail(r.call, "FetchSessionBlob", fetch(sid, "0" * 64)).code() == \
            grpc.StatusCode.UNIMPLEMENTED
    # ReportEvidence needs no blob storage.
    r.call("ReportEvidence", evidence("sess-1"))


def test_unbound_and_foreign_sessions_get_identical_failed_precondition(hub):
    r = hub.runner("runner-1")
    for name, build in (("UploadSessionBlob", upload), ("FetchSessionBlob",
                                                        lambda s: fetch(s, "0" * 64)),
                        ("ReportEvidence", evidence)):
        views = {error_view(fail(r.call, name, build(sid)))
                 for sid in ("sess-2", "sess-unknown", "", "sess-2 ")}
        assert len(views) == 1, (name, views)
        assert next(iter(views))[0] == grpc.StatusCode.FAILED_PRECONDITION
    assert blob_files(hub) == []


def test_an_unknown_blob_ref_is_not_found(hub):
    r = hub.runner("runner-1")
    for ref in ("0" * 64, "nope", "../../etc/passwd", ""):
        err = fail(r.call, "FetchSessionBlob", fetch("sess-1", ref))
        assert err.code() == grpc.StatusCode.NOT_FOUND, ref


def test_a_blob_ref_from_one_session_is_not_found_from_another(start_hub):
    h = start_hub(world=TWO_SESSIONS, blob_dir=True)
    r = h.runner("runner-1")
    ref = r.call("UploadSessionBlob", upload("sess-1", b"secret")).blob_ref
    assert r.call("FetchSessionBlob", fetch("sess-1", ref)).data == b"secret"
    err = fail(r.call, "FetchSessionBlob", fetch("sess-3", ref))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    # A bound sibling's miss looks like any miss.
    assert error_view(err) == error_view(fail(r.call, "FetchSessionBlob",
                                              fetch("sess-3", "f" * 64)))


def test_a_blob_over_the_size_cap_is_resource_exhausted(start_hub):
    h = start_hub(blob_dir=True, flags=["--max-blob-bytes", "1024"])
    r = h.runner("runner-1")
    err = fail(r.call, "UploadSessionBlob", upload("sess-1", b"x" * 1025))
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert blob_files(h) == []  # nothing half-written, no temp file left
    ref = r.call("UploadSessionBlob", upload("sess-1", b"x" * 1024)).blob_ref
    assert r.call("FetchSessionBlob", fetch("sess-1", ref)).data == b"x" * 1024


def test_upload_fetch_round_trip_is_content_addressed(hub):
    r = hub.runner("runner-1")
    data = bytes(range(256)) * 64
    ref = r.call("UploadSessionBlob", upload("sess-1", data, "image/png")).blob_ref
    assert ref
    got = r.call("FetchSessionBlob", fetch("sess-1", ref))
    assert got.data == data and got.content_type == "image/png"
    # The same content gets the same ref; different content another.
    assert r.call("UploadSessionBlob", upload("sess-1", data, "image/png")).blob_ref == ref
    assert r.call("UploadSessionBlob", upload("sess-1", data + b"!")).blob_ref != ref
    empty = r.call("UploadSessionBlob", upload("sess-1", b"")).blob_ref
    assert r.call("FetchSessionBlob", fetch("sess-1", empty)).data == b""
    assert not [f for f in blob_files(hub) if "tmp" in os.path.basename(f).lower()]
    # Another Runner cannot fetch it through its own session id either.
    r2 = hub.runner("runner-2")
    assert fail(r2.call, "FetchSessionBlob", fetch("sess-1", ref)).code() == \
        grpc.StatusCode.FAILED_PRECONDITION


# --- PublishEvents: runner_seq, unknown and unbound frames ------------------

def raw_publish(runner, payloads):
    """PublishEvents with pre-encoded request bytes (for unknown variants)."""
    m = runner.channel.stream_unary(RUNNER + "PublishEvents",
                                    request_serializer=lambda b: b,
                                    response_deserializer=F.PublishEventsResponse.FromString)
    return m(iter(payloads), metadata=auth(runner.token), timeout=10)


def test_runner_seq_gaps_retries_unknown_and_unbound_frames_are_counted(hub):
    r = hub.runner("runner-1")
    assert r.enroll().last_runner_seq == 0
    r.open_sessions(["sess-1"])
    pane = subscribe(hub, "sess-1")
    m0 = hub.metrics()
    reqs = [r.request("sess-1", text("one"), runner_seq=1),
            r.request("sess-1", text("two"), runner_seq=2),
            r.request("sess-1", text("five"), runner_seq=5),    # gap: 3 and 4 lost
            r.request("sess-1", text("five again"), runner_seq=5),  # retry
            r.request("sess-1", text("three late"), runner_seq=3),  # older: retry
            F.PublishEventsRequest(runner_seq=6, session_id="sess-1"),  # unset frame
            r.request("sess-1", event_frame(event_id="e"), runner_seq=7),  # unset event
            r.request("sess-2", text("not mine"), runner_seq=8),  # unbound
            r.request("sess-nope", text("unknown"), runner_seq=9),  # unbound
            r.request("sess-1", text("ten"), runner_seq=10)]
    r.publish_raw(reqs)
    # An AgentFrame variant this server does not know (field 9).
    unknown = F.PublishEventsRequest(runner_seq=11, session_id="sess-1").SerializeToString()
    unknown += b"\x1a\x04" + b"\x4a\x02hi"  # frame (3) = { field 9: "hi" }
    raw_publish(r, [unknown])
    m = hub.metrics()

    def delta(key):
        return m.get(key, 0) - m0.get(key, 0)
    assert delta("agenthub_relay_gaps_total") == 1
    assert delta("agenthub_relay_retries_total") == 2
    assert delta("agenthub_relay_unknown_frames_total") == 3
    assert delta("agenthub_relay_unbound_frames_total") == 2
    assert delta("agenthub_frames_accepted_total") == 4
    texts = [f.event.assistant_text.text for f in pane.wait_count(4)
             if f.event.HasField("assistant_text")]
    assert texts == ["one", "two", "five", "ten"]
    log = hub.stderr()
    assert "expected 3, got 5" in log  # the gap is logged with both numbers
    assert "unrecognized" in log
    # Enroll tells a reconnecting Runner the last runner_seq accepted.
    assert r.enroll().last_runner_seq == 11
    # After a reconnect, a resend of old frames is a retry, not a new frame.
    r.publish_raw([r.request("sess-1", text("ten"), runner_seq=10)])
    assert hub.metric("agenthub_relay_retries_total") - m0.get(
        "agenthub_relay_retries_total", 0) == 3
    pane.cancel()


def test_the_last_runner_seq_survives_a_restart(start_hub):
    h = start_hub()
    r = h.runner("runner-1")
    r.enroll()
    r.publish("sess-1", text("a"), text("b"), text("c"))
    h.stop()
    h2 = start_hub(db=h.db)
    assert h2.runner("runner-1").enroll().last_runner_seq == 3


def test_an_invalid_relayed_record_is_dropped_and_counted(hub):
    r = hub.runner("runner-1")
    bus = subscribe_events(hub)
    r.publish("sess-1", record("no_such_type"),
              event_frame(record=F.AgentRecord(type="prompt", data_json="{not json")),
              record("prompt", {"length": 3}))
    hub.wait_metric("agenthub_relay_invalid_records_total", lambda v: v == 2)
    got = bus.wait(lambda items: [e for e in items if e.HasField("agent_record")],
                   what="the valid record")
    assert [e.agent_record.type for e in got] == ["prompt"]
    bus.cancel()


# --- projection onto SubscribeEvents --------------------------------------

def test_every_frame_kind_projects_onto_subscribe_events(hub):
    bus = subscribe_events(hub, token="t-admin")
    pane = subscribe(hub, "sess-1")
    r = hub.runner("runner-1")
    r.enroll()
    plan = F.SessionPlan(entries=[F.AgentPlanEntry(content="read", status=1),
                                  F.AgentPlanEntry(content="write", status=2)])
    r.publish("sess-1",
              text("hello"),
              thinking("hmm"),
              event_frame(tool_call=F.SessionToolCall(tool_call_id="tc1", title="ls",
                                                      status=F.AGENT_TOOL_CALL_STATUS_PENDING)),
              event_frame(tool_call_update=F.SessionToolCallUpdate(
                  tool_call_id="tc1", status=F.AGENT_TOOL_CALL_STATUS_COMPLETED, output="ok")),
              event_frame(plan=plan),
              event_frame(notice=F.SessionNotice(text="fyi")),
              batch_pending(1, 1234),
              record("prompt", {"length": 5}),
              state_frame("BLOCKED"),
              F.AgentFrame(transcript_entry=F.TranscriptEntry(entry_json="{}", entry_seq=1)))
    want = ["agent_message_chunk", "agent_message_chunk", "agent_tool_call", "agent_tool_call",
            "agent_plan", "session_batch_pending", "agent_record", "agent_session_status"]

    def kinds(items):
        return [e.WhichOneof("payload") for e in items]
    events = bus.wait(lambda items: items if "agent_session_status" in kinds(items) and
                      kinds(items).count("agent_session_status") >= 1 and
                      [k for k in kinds(items) if k != "agent_session_status"] == want[:-1]
                      else None, what="every projection")
    got = [e for e in events]
    # The tool call (PENDING) and record (prompt) are Stream evidence: the
    # arbiter may publish statuses in between; project the rest in order.
    non_status = [e for e in got if e.WhichOneof("payload") != "agent_session_status"]
    assert [e.WhichOneof("payload") for e in non_status] == want[:-1]
    chunk, thought, tool, update, plan_ev, batch, rec = non_status
    assert (chunk.agent_message_chunk.text, chunk.agent_message_chunk.is_thought) == \
        ("hello", False)
    assert (thought.agent_message_chunk.text, thought.agent_message_chunk.is_thought) == \
        ("hmm", True)
    assert (tool.agent_tool_call.tool_call_id, tool.agent_tool_call.title,
            tool.agent_tool_call.status) == ("tc1", "ls", F.AGENT_TOOL_CALL_STATUS_PENDING)
    assert (update.agent_tool_call.tool_call_id, update.agent_tool_call.status) == \
        ("tc1", F.AGENT_TOOL_CALL_STATUS_COMPLETED)
    assert [(p.content, p.status) for p in plan_ev.agent_plan.entries] == [("read", 1),
                                                                          ("write", 2)]
    assert (batch.session_batch_pending.count, batch.session_batch_pending.fires_at_unix_ms) == \
        (1, 1234)
    assert rec.agent_record.type == "prompt"
    statuses = [e.agent_session_status for e in got if e.HasField("agent_session_status")]
    blocked = wait_for(lambda: [s for s in [e.agent_session_status for e in bus.items
                                            if e.HasField("agent_session_status")]
                                if s.state == F.AGENT_SESSION_STATE_BLOCKED], what="BLOCKED")
    assert blocked[0].agent_account_id == "agent-1" and blocked[0].session_id == "sess-1"
    assert statuses
    # Every event carries the session id; inner ids agree.
    for e in bus.items:
        assert e.session_id == "sess-1", e
        inner = getattr(e, e.WhichOneof("payload"))
        if hasattr(inner, "session_id"):
            assert inner.session_id == "sess-1", e
    seqs = [e.seq for e in bus.items]
    assert seqs == sorted(set(seqs)) and seqs[0] > 0
    assert len({e.instance_epoch for e in bus.items}) == 1 and bus.items[0].instance_epoch != 0
    assert all(e.at_unix_ms > 0 for e in bus.items)
    # The pane got the session frames too (the notice included, the
    # transcript entry not).
    frames = pane.wait(lambda items: items if any(f.state == F.AGENT_SESSION_STATE_BLOCKED
                                                  for f in items) else None, what="pane")
    assert any(f.event.HasField("notice") for f in frames)
    assert [f.seq for f in frames] == sorted(set(f.seq for f in frames))
    bus.cancel()
    pane.cancel()


def test_subscribe_events_resumes_with_since_seq_or_asks_for_a_resync(hub):
    bus = subscribe_events(hub)
    r = hub.runner("runner-1")
    r.publish("sess-1", *[text("m%d" % i) for i in range(6)])
    first = bus.wait_count(6)
    bus.cancel()
    epoch = first[0].instance_epoch
    # Resume after the third: gap-free from the fourth on.
    resumed = subscribe_events(hub, since_seq=first[2].seq, epoch=epoch)
    got = resumed.wait_count(3)
    assert [e.seq for e in got[:3]] == [e.seq for e in first[3:6]]
    assert [e.agent_message_chunk.text for e in got[:3]] == ["m3", "m4", "m5"]
    resumed.cancel()
    # A bad epoch (another boot) gets resync_required with seq 0, then OK.
    for since, ep in ((first[2].seq, epoch + 1), (first[5].seq + 100, epoch)):
        stale = subscribe_events(hub, since_seq=since, epoch=ep)
        code, _ = stale.finish()
        assert code == grpc.StatusCode.OK
        assert len(stale.items) == 1
        assert stale.items[0].HasField("resync_required") and stale.items[0].seq == 0
        assert stale.items[0].instance_epoch == epoch


def test_subscribe_events_shows_only_sessions_of_the_callers_channels(hub):
    readers = {t: subscribe_events(hub, token=t) for t in ("t-admin", "t-bob", "t-carol")}
    hub.runner("runner-1").publish("sess-1", text("for chan-a"))
    r2 = hub.runner("runner-2")
    r2.publish("sess-2", text("for chan-b"))
    r2.publish("sess-2", text("end"))
    for t, reader in readers.items():
        reader.wait(lambda items: any(e.agent_message_chunk.text == "end" for e in items)
                    if t != "t-bob" else True, what="end")
    readers["t-bob"].wait(lambda items: any(e.session_id == "sess-1" for e in items))
    seen = {t: {e.session_id for e in rd.items} for t, rd in readers.items()}
    assert seen["t-admin"] == {"sess-1", "sess-2"}
    assert seen["t-carol"] == {"sess-2"}
    assert "sess-2" not in seen["t-bob"]
    for rd in readers.values():
        rd.cancel()


def test_a_stalled_event_subscriber_gets_resync_required_and_ends_ok(start_hub):
    from rpc_harness import COMPASS, RawStream
    h = start_hub(flags=["--bus-bytes", "65536"])
    r = h.runner("runner-1")
    stalled = RawStream(h.public, COMPASS + "SubscribeEvents",
                        S.SubscribeEventsRequest().SerializeToString(), token="t-admin")
    fast = subscribe_events(h)
    for i in range(20):  # 400 KB through a 64 KiB bus
        r.publish("sess-1", *[text("%04d" % (i * 10 + j) + "q" * 2000) for j in range(10)])
        fast.wait_count((i + 1) * 10)  # the fast one keeps up, unhindered
    assert [int(e.agent_message_chunk.text[:4]) for e in fast.items] == list(range(200))
    messages, trailers = stalled.read_to_end()
    stalled.close()
    events = [S.SubscribeEventsResponse.FromString(m) for m in messages]
    # The snapshot of a bus with no status yet: ServerStatus alone.
    assert events[0].HasField("server_status") and events[0].seq == 0
    events = events[1:]
    assert trailers["grpc-status"] == "0"
    assert events[-1].HasField("resync_required") and events[-1].seq == 0
    assert [e.seq for e in events[:-1]] == list(range(1, len(events)))
    fast.cancel()


def test_late_frames_never_resurrect_a_stopped_session(hub):
    r = hub.runner("runner-1")
    r.open_sessions(["sess-1"])
    r.publish("sess-1", text("before"))
    bus = subscribe_events(hub)
    hub.call("StopAgentSession", S.StopAgentSessionRequest(session_id="sess-1"), token="t-alice")
    # The stop's own status event (on a log that commits first, it reaches
    # the bus a moment after the answer); nothing may follow it.
    stopped = bus.wait(lambda items: [i for i, e in enumerate(items) if e.HasField(
        "agent_session_status") and e.agent_session_status.state == F.AGENT_SESSION_STATE_STOPPED])
    seen = stopped[-1] + 1
    m0 = hub.metrics()
    r.publish("sess-1", text("late"), event_frame(tool_call=F.SessionToolCall(
        tool_call_id="x", status=F.AGENT_TOOL_CALL_STATUS_IN_PROGRESS)))
    r.call("ReportEvidence", S.ReportEvidenceRequest(
        session_id="sess-1", rank=S.EVIDENCE_RANK_PROCESS, state=F.AGENT_SESSION_STATE_WORKING))
    r.report(["sess-1"])
    assert hub.metric("agenthub_relay_ended_frames_total") - m0.get(
        "agenthub_relay_ended_frames_total", 0) == 2
    st = hub.call("GetAgentStatus", S.GetAgentStatusRequest(session_id="sess-1"),
                  token="t-alice").statuses[0]
    assert st.state == F.AGENT_SESSION_STATE_STOPPED
    # A subscriber to the stopped session replays its log up to the stop,
    # none of the late frames, and ends OK.
    from rpc_harness import method
    frames = list(method(hub.channel(), "SubscribeAgentSession")(
        S.SubscribeAgentSessionRequest(session_id="sess-1", tail=100),
        metadata=auth("t-alice"), timeout=5))
    assert [f.event.assistant_text.text for f in frames if f.HasField("event")] == ["before"]
    assert frames[-1].state == F.AGENT_SESSION_STATE_STOPPED
    assert frames[-1].seq == st.last_seq
    import time
    time.sleep(0.2)  # the publishes above returned after the server took them
    assert bus.items[seen:] == []
    bus.cancel()


def test_each_door_serves_its_own_services_and_credentials(hub):
    from rpc_harness import method
    pub, run = hub.channel("public"), hub.channel("runner")
    # RunnerService is not on the public door, CompassService not on the Runner door.
    err = fail(method(pub, "Enroll"), S.EnrollRequest(), metadata=auth("t-runner-1"), timeout=5)
    assert err.code() == grpc.StatusCode.UNIMPLEMENTED
    err = fail(method(run, "WhoAmI"), S.WhoAmIRequest(), metadata=auth("t-alice"), timeout=5)
    assert err.code() == grpc.StatusCode.UNIMPLEMENTED
    # ResourceService is on both, each with its own kind of credential.
    req = S.SpawnResourceRequest(kind=S.RESOURCE_KIND_TERMINAL, container_name="ctr-1")
    for ch, token in ((pub, "t-runner-1"), (run, "t-alice"), (run, "t-agent-1")):
        err = fail(method(ch, "SpawnResource"), req, metadata=auth(token), timeout=5)
        assert err.code() == UNAUTHENTICATED, token
    assert method(run, "SpawnResource")(req, metadata=auth("t-runner-1"), timeout=5).resource_id
    # SubscribeEvents wants an account too.
    for token in (None, "t-runner-1"):
        err = fail(method(pub, "SubscribeEvents"), S.SubscribeEventsRequest(),
                   metadata=auth(token), timeout=5)
        assert err.code() == UNAUTHENTICATED


def test_report_evidence_feeds_the_arbiter_below_the_stream(hub):
    r = hub.runner("runner-1")

    def report(rank, st, live_child=False):
        r.call("ReportEvidence", S.ReportEvidenceRequest(
            session_id="sess-1", rank=rank, state=st, live_child=live_child))
        return hub.call("GetAgentStatus", S.GetAgentStatusRequest(session_id="sess-1"),
                        token="t-alice").statuses[0].state
    assert report(S.EVIDENCE_RANK_SCREEN, F.AGENT_SESSION_STATE_WORKING) == \
        F.AGENT_SESSION_STATE_WORKING
    assert report(S.EVIDENCE_RANK_PROCESS, F.AGENT_SESSION_STATE_READY) == \
        F.AGENT_SESSION_STATE_READY  # Process over Screen
    r.publish("sess-1", state_frame("BLOCKED"))  # Stream over both
    assert report(S.EVIDENCE_RANK_PROCESS, F.AGENT_SESSION_STATE_WORKING) == \
        F.AGENT_SESSION_STATE_BLOCKED
    # Newer screen evidence of idle corrects stale higher-rank evidence.
    assert report(S.EVIDENCE_RANK_SCREEN, F.AGENT_SESSION_STATE_IDLE) == \
        F.AGENT_SESSION_STATE_IDLE
    err = fail(r.call, "ReportEvidence", S.ReportEvidenceRequest(session_id="sess-1", rank=0,
                                                                 state=3))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    err = fail(r.call, "ReportEvidence", S.ReportEvidenceRequest(session_id="sess-1", rank=1,
                                                                 state=42))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
