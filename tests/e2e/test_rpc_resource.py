"""ResourceService, the producer door (seed 000, ADR 0103): SpawnResource,
AppendResourceOutput, ReportAgentState, CloseResource, on both doors."""
import json

import grpc
import pytest

from rpc_harness import F, S, fail, hub, subscribe, subscribe_events, wait_for  # noqa

INVALID = grpc.StatusCode.INVALID_ARGUMENT
AGENT = S.RESOURCE_KIND_AGENT_SESSION
TERMINAL = S.RESOURCE_KIND_TERMINAL


def terminal(h, container="ctr-1", token="t-runner-1"):
    return h.call("SpawnResource", S.SpawnResourceRequest(kind=TERMINAL, container_name=container),
                  token=token, door="runner").resource_id


def agent_session(h, parent, provider="claude", native_id="", token="t-agent-1", **extra):
    return h.call("SpawnResource", S.SpawnResourceRequest(
        kind=AGENT, parent=parent, provider=provider, native_id=native_id, **extra), token=token)


def lines(*records):
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def append(h, rid=0, data=b"", token="t-agent-1", door=None, **target):
    return h.call("AppendResourceOutput", S.AppendResourceOutputRequest(
        resource_id=rid, bytes=data, **target), token=token, door=door)


def status(h, sid, token="t-admin"):
    return h.call("GetAgentStatus", S.GetAgentStatusRequest(session_id=sid),
                  token=token).statuses[0]


# --- SpawnResource ---------------------------------------------------------

def test_a_terminal_is_registered_by_the_runner_hosting_its_container(hub):
    tid = terminal(hub)
    assert tid >= 1
    assert terminal(hub) != tid
    for token, door, container in (("t-runner-2", "runner", "ctr-1"),
                                   ("t-runner-1", "runner", "ctr-2"),
                                   ("t-runner-1", "runner", "ctr-nope"),
                                   ("t-alice", "public", "ctr-1"),
                                   ("t-agent-1", "public", "ctr-1")):
        err = fail(terminal, hub, container, token) if door == "runner" else fail(
            hub.call, "SpawnResource", S.SpawnResourceRequest(kind=TERMINAL,
                                                              container_name=container),
            token=token)
        assert err.code() == grpc.StatusCode.PERMISSION_DENIED, (token, container)
        assert err.details().startswith("NOT_PRODUCER")
    err = fail(hub.call, "SpawnResource", S.SpawnResourceRequest(kind=TERMINAL),
               token="t-runner-1", door="runner")
    assert err.code() == INVALID and "field 10" in err.details()


@pytest.mark.parametrize("field,value,number", [
    ("command", "bash", 3), ("cwd", "/tmp", 4), ("cols", 80, 5), ("rows", 24, 6),
    ("container_name", "ctr-1", 10)])
def test_an_agent_session_forbids_the_terminal_only_fields(hub, field, value, number):
    tid = terminal(hub)
    err = fail(agent_session, hub, tid, **{field: value})
    assert err.code() == INVALID
    assert err.details().startswith("INVALID_ARGUMENT")
    assert "field %d (%s)" % (number, field) in err.details()


def test_an_agent_session_requires_parent_and_provider(hub):
    tid = terminal(hub)
    err = fail(agent_session, hub, 0)
    assert err.code() == INVALID and "field 12 (parent)" in err.details()
    err = fail(agent_session, hub, tid, provider="")
    assert err.code() == INVALID and "field 13 (provider)" in err.details()


def test_an_unknown_kind_is_unsupported_kind(hub):
    err = fail(hub.call, "SpawnResource", S.SpawnResourceRequest(kind=7, parent=1,
                                                                 provider="claude"),
               token="t-agent-1")
    assert err.code() == INVALID and err.details().startswith("UNSUPPORTED_KIND")


def test_a_missing_parent_is_parent_not_found(hub):
    err = fail(agent_session, hub, 999999)
    assert err.code() == grpc.StatusCode.NOT_FOUND
    assert err.details().startswith("PARENT_NOT_FOUND")


def test_a_parent_that_is_not_a_terminal_is_parent_kind_mismatch(hub):
    child = agent_session(hub, terminal(hub)).resource_id
    err = fail(agent_session, hub, child)
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert err.details().startswith("PARENT_KIND_MISMATCH")


@pytest.mark.parametrize("native_id,ok", [
    ("A" * 128, True), ("a-Z.0_9:x", True), ("A" * 129, False), ("has space", False),
    ("slash/y", False), ("caf\u00e9", False), ("semi;colon", False), ("nul\x01", False)])
def test_native_id_is_at_most_128_bytes_of_the_allowed_charset(hub, native_id, ok):
    tid = terminal(hub)
    if ok:
        assert agent_session(hub, tid, native_id=native_id).session_id
    else:
        err = fail(agent_session, hub, tid, native_id=native_id)
        # A control character is refused for every id field before the handler.
        want = ("native_id holds a control character" if "\x01" in native_id
                else "field 14 (native_id)")
        assert err.code() == INVALID and want in err.details()


def test_provider_and_native_id_are_unique_and_addressable(hub):
    tid = terminal(hub)
    first = agent_session(hub, tid, native_id="abc-123")
    again = agent_session(hub, tid, native_id="abc-123")
    assert (again.resource_id, again.session_id) == (first.resource_id, first.session_id)
    other = agent_session(hub, tid, provider="codex", native_id="abc-123")
    assert other.session_id != first.session_id
    # Addressable by (provider, native_id) and by session id.
    by_native = append(hub, data=lines({"type": "prompt", "data": {"length": 1}}),
                       provider="claude", native_id="abc-123")
    by_session = append(hub, data=lines({"type": "stop", "data": {}}),
                        session_id=first.session_id)
    assert by_session.first_seq > by_native.last_seq
    assert status(hub, first.session_id).native_id == "abc-123"
    assert status(hub, first.session_id).provider == "claude"
    # Closed (by its native id), then resumed: the same pair reopens the same
    # session, as a `claude --resume` SessionStart must.
    hub.call("CloseResource", S.CloseResourceRequest(provider="claude", native_id="abc-123"),
             token="t-agent-1")
    assert fail(append, hub, data=lines({"type": "prompt", "data": {}}),
                session_id=first.session_id).code() == grpc.StatusCode.FAILED_PRECONDITION
    resumed = agent_session(hub, tid, native_id="abc-123")
    assert (resumed.resource_id, resumed.session_id) == (first.resource_id, first.session_id)
    append(hub, data=lines({"type": "prompt", "data": {"length": 2}}), session_id=first.session_id)
    err = fail(append, hub, data=lines({"type": "prompt", "data": {}}), provider="nobody",
               native_id="abc-123")
    assert err.code() == grpc.StatusCode.NOT_FOUND


# --- AppendResourceOutput ---------------------------------------------------

def test_append_resource_output_codec_rules(hub):
    tid = terminal(hub)
    spawned = agent_session(hub, tid)
    rid = spawned.resource_id
    # On a terminal: WRONG_RESOURCE_KIND.
    err = fail(append, hub, tid, lines({"type": "prompt", "data": {}}))
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert err.details().startswith("WRONG_RESOURCE_KIND")
    # Without the Input verb: NOT_PRODUCER (a member, another agent, another Runner).
    for token, door in (("t-alice", "public"), ("t-agent-2", "public"),
                        ("t-runner-2", "runner")):
        err = fail(append, hub, rid, lines({"type": "prompt", "data": {}}), token=token,
                   door=door)
        assert err.code() == grpc.StatusCode.PERMISSION_DENIED, token
        assert err.details().startswith("NOT_PRODUCER")
    # A bad record: RECORD_INVALID, naming the line.
    for data, where in ((lines({"type": "prompt", "data": {}}) + b"{not json\n", "line 2"),
                        (lines({"type": "no_such_type", "data": {}}), "line 1"),
                        (lines({"type": "prompt", "data": {}}, {"type": "prompt",
                                                                 "data": {}},
                               {"data": {}}), "line 3")):
        err = fail(append, hub, rid, data)
        assert err.code() == INVALID, data
        assert err.details().startswith("RECORD_INVALID") and where in err.details(), \
            err.details()
    # Over 64 KiB in one call: OVERFLOW.
    big = lines(*[{"type": "provider_raw", "data": {"x": "y" * 8000}}] * 9)
    assert len(big) > 65536
    err = fail(append, hub, rid, big)
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert err.details().startswith("OVERFLOW")
    # Nothing of a refused call was appended: the next seqs follow on.
    ok = append(hub, rid, lines({"type": "session_start", "data": {}},
                                {"type": "tool_end", "data": {"tool_name": "ls"}}))
    assert ok.first_seq >= 1 and ok.last_seq == ok.first_seq + 1
    ok2 = append(hub, rid, lines({"type": "notification", "data": {"kind": "info"}}))
    assert ok2.first_seq == ok2.last_seq == ok.last_seq + 1
    # The Runner hosting the container may produce on the Runner door too.
    via_runner = append(hub, rid, lines({"type": "tool_end", "data": {}}), token="t-runner-1",
                        door="runner")
    assert via_runner.first_seq == ok2.last_seq + 1
    err = fail(append, hub, 999999, lines({"type": "prompt", "data": {}}))
    assert err.code() == grpc.StatusCode.NOT_FOUND


def test_server_assigns_seq_and_ts_of_appended_records(hub):
    spawned = agent_session(hub, terminal(hub))
    pane = subscribe(hub, spawned.session_id, token="t-bob")
    got = append(hub, spawned.resource_id, lines(
        {"seq": 999, "ts_ms": 5, "type": "session_start", "data": {"cwd_len": 3}}))
    assert got.first_seq != 999
    frame = pane.wait_count(1)[0]
    assert frame.seq == got.first_seq and frame.at_unix_ms > 1_000_000_000_000
    assert frame.event.record.type == "session_start"
    assert json.loads(frame.event.record.data_json) == {"cwd_len": 3}
    pane.cancel()


def test_the_stream_derives_state(hub):
    spawned = agent_session(hub, terminal(hub))
    sid, rid = spawned.session_id, spawned.resource_id
    bus = subscribe_events(hub, token="t-bob")
    expect = [("prompt", {"length": 3}, "WORKING"),
              ("ask", {}, "BLOCKED"),
              ("tool_start", {"tool_name": "ls"}, "WORKING"),
              ("notification", {"kind": "permission"}, "BLOCKED"),
              ("stop", {}, "DONE")]
    for type_, data, want in expect:
        append(hub, rid, lines({"type": type_, "data": data}))
        st = status(hub, sid, token="t-alice")
        assert st.state == F.AgentSessionState.Value("AGENT_SESSION_STATE_" + want), type_
        assert st.agent_account_id == "agent-1"
    states = bus.wait(lambda items: (lambda s: s if len(s) >= 5 else None)(
        [e.agent_session_status.state for e in items if e.HasField("agent_session_status")]),
        what="five status changes")
    assert [F.AgentSessionState.Name(s)[20:] for s in states] == [w for _, _, w in expect]
    records = [e.agent_record.type for e in bus.items if e.HasField("agent_record")]
    assert records == [t for t, _, _ in expect]
    # session_end retracts the Stream evidence.
    append(hub, rid, lines({"type": "session_end", "data": {}}))
    assert status(hub, sid).state != F.AGENT_SESSION_STATE_DONE
    bus.cancel()


def test_report_agent_state_is_the_fallback(hub):
    spawned = agent_session(hub, terminal(hub))
    sid, rid = spawned.session_id, spawned.resource_id
    pane = subscribe(hub, sid, token="t-bob")
    # Without a live child it sets Hook-rank evidence: a state, no record.
    hub.call("ReportAgentState", S.ReportAgentStateRequest(resource_id=rid, state="blocked"),
             token="t-agent-1")
    assert status(hub, sid).state == F.AGENT_SESSION_STATE_BLOCKED
    # Stream outranks Hook.
    append(hub, rid, lines({"type": "prompt", "data": {}}))
    hub.call("ReportAgentState", S.ReportAgentStateRequest(session_id=sid, state="ready"),
             token="t-agent-1")
    assert status(hub, sid).state == F.AGENT_SESSION_STATE_WORKING
    assert not [f for f in pane.items if f.event.record.type == "state"]
    # With a live child (the Runner's process evidence) it appends a
    # synthesized state record, which is Stream evidence.
    hub.call("ReportEvidence", S.ReportEvidenceRequest(
        session_id=sid, rank=S.EVIDENCE_RANK_PROCESS, state=F.AGENT_SESSION_STATE_WORKING,
        live_child=True), token="t-runner-1", door="runner")
    hub.call("ReportAgentState", S.ReportAgentStateRequest(resource_id=rid, state="blocked"),
             token="t-agent-1")
    rec = pane.wait(lambda items: [f for f in items if f.event.record.type == "state"],
                    what="the synthesized state record")[0]
    assert json.loads(rec.event.record.data_json) == {"state": "blocked"}
    assert status(hub, sid).state == F.AGENT_SESSION_STATE_BLOCKED
    err = fail(hub.call, "ReportAgentState", S.ReportAgentStateRequest(resource_id=rid,
                                                                       state="sleepy"),
               token="t-agent-1")
    assert err.code() == INVALID
    err = fail(hub.call, "ReportAgentState", S.ReportAgentStateRequest(resource_id=rid,
                                                                       state="idle"),
               token="t-alice")
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED
    pane.cancel()


def test_close_resource_ends_the_session(hub):
    spawned = agent_session(hub, terminal(hub), native_id="to-close")
    sid, rid = spawned.session_id, spawned.resource_id
    append(hub, rid, lines({"type": "prompt", "data": {}}))
    pane = subscribe(hub, sid, token="t-alice")
    err = fail(hub.call, "CloseResource", S.CloseResourceRequest(resource_id=rid),
               token="t-alice")
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED
    hub.call("CloseResource", S.CloseResourceRequest(resource_id=rid), token="t-agent-1")
    code, trailers = pane.finish()
    assert code == grpc.StatusCode.OK and "agenthub-last-seq" in trailers
    # session_end retracted the Stream evidence: no longer WORKING.
    assert status(hub, sid).state != F.AGENT_SESSION_STATE_WORKING
    err = fail(append, hub, rid, lines({"type": "prompt", "data": {}}))
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert err.details().startswith("WRONG_RESOURCE_KIND")


def test_a_stopped_agent_session_takes_no_more_records(hub):
    spawned = agent_session(hub, terminal(hub))
    append(hub, spawned.resource_id, lines({"type": "prompt", "data": {}}))
    hub.call("StopAgentSession", S.StopAgentSessionRequest(session_id=spawned.session_id),
             token="t-agent-1")
    for call in (lambda: append(hub, spawned.resource_id, lines({"type": "stop", "data": {}})),
                 lambda: hub.call("ReportAgentState", S.ReportAgentStateRequest(
                     resource_id=spawned.resource_id, state="working"), token="t-agent-1")):
        err = fail(call)
        assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert err.details().startswith("WRONG_RESOURCE_KIND")
    assert status(hub, spawned.session_id).state == F.AGENT_SESSION_STATE_STOPPED
