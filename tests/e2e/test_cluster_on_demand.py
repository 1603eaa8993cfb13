"""Cluster nodes with --cluster-read on-demand: a node reads a session's
subject only while it has a reader or a writer for it, and what it serves
is what a node reading everything would serve (docs/cluster.md, "Reading
sessions on demand").  The rest of the cluster suite runs in this mode too
(tests/e2e/test_cluster.py's nodes fixture)."""
import json
import time

import grpc
import pytest

from harness import wait_for
from rpc_harness import F, S, event_frame, fail, state, subscribe, text
from test_cluster import node_sets, publish_until_taken, replay, spawn_agent_session, texts

LINGER_MS = 300
ON_DEMAND = ["--cluster-linger-ms", str(LINGER_MS)]


@pytest.fixture
def nodes(nats_cluster, tmp_path):
    yield from node_sets(nats_cluster, tmp_path, "on-demand")


def session_messages(h):
    """Messages of sessions' subjects H's consumers delivered."""
    return h.metric("agenthub_cluster_session_messages_total")


def record(length):
    return ('{"type":"prompt","data":{"length":%d}}\n' % length).encode()


def test_a_node_reads_a_session_only_while_a_pane_uses_it_and_resumes_after_its_copy(nodes):
    n = nodes(flags=ON_DEMAND)
    a, b, c = n[0], n[1], n[2]
    r = a.runner("runner-1")
    r.publish("sess-1", *[text("m%d" % i) for i in range(1, 6)])
    assert [f.seq for f in replay(a, "sess-1", 5)] == [1, 2, 3, 4, 5]
    # Nothing of the session reached the nodes that have no use for it.
    for h in (b, c):
        assert session_messages(h) == 0, h.public
        assert h.metric("agenthub_cluster_sessions_read") == 0, h.public

    # A pane on B: the whole log from seq 1, then live.
    pane = subscribe(b, "sess-1", tail=100)
    r.publish("sess-1", text("m6"))
    got = pane.wait_count(6)
    assert texts(got) == ["m%d" % i for i in range(1, 7)]
    assert [f.seq for f in got] == [1, 2, 3, 4, 5, 6]
    assert b.metric("agenthub_cluster_sessions_read") == 1
    pane.cancel()

    # Unused for the linger, B lets the session go; what is written then
    # does not reach it.
    wait_for(lambda: b.metric("agenthub_cluster_sessions_read") == 0, 10,
             what="node B to stop reading sess-1")
    before = session_messages(b)
    r.publish("sess-1", *[text("m%d" % i) for i in range(7, 10)])
    replay(a, "sess-1", 9)
    assert session_messages(b) == before
    assert session_messages(c) == 0

    # Resuming on B: its copy carries on from where it stopped, with no
    # gap and nothing twice.
    pane = subscribe(b, "sess-1", since_seq=6)
    got = pane.wait_count(3)
    assert texts(got) == ["m7", "m8", "m9"]
    assert [f.seq for f in got] == [7, 8, 9]
    pane.cancel()
    # C never read it and replays it whole.
    assert [f.seq for f in replay(c, "sess-1", 9)] == list(range(1, 10))


def test_a_node_writing_a_session_it_did_not_read_continues_its_seqs(nodes):
    n = nodes(flags=ON_DEMAND)
    a, b, c = n[0], n[1], n[2]
    rid, sid = spawn_agent_session(a)
    first = a.call("AppendResourceOutput", S.AppendResourceOutputRequest(
        resource_id=rid, bytes=record(1)), token="t-agent-1")
    # B holds nothing of the session: it reads it before its first batch.
    assert session_messages(b) == 0
    second = b.call("AppendResourceOutput", S.AppendResourceOutputRequest(
        resource_id=rid, bytes=record(2)), token="t-agent-1")
    assert second.first_seq > first.last_seq
    for h in n.hubs:
        got = replay(h, sid, second.last_seq, token="t-admin")
        assert [f.seq for f in got] == list(range(1, second.last_seq + 1)), h.public
        lengths = [json.loads(f.event.record.data_json)["length"] for f in got
                   if f.event.HasField("record")]
        assert lengths == [1, 2], h.public


def test_a_node_not_reading_a_session_reports_its_state_from_the_bus(nodes):
    n = nodes(flags=ON_DEMAND)
    a, c = n[0], n[2]
    r = a.runner("runner-1")
    r.publish("sess-1", event_frame(tool_call=F.SessionToolCall(
        tool_call_id="t", status=F.AGENT_TOOL_CALL_STATUS_IN_PROGRESS)))
    replay(a, "sess-1", 2)  # the event and the state frame it made

    def listed(h):
        for st in h.call("GetAgentStatus", S.GetAgentStatusRequest(), token="t-alice").statuses:
            if st.session_id == "sess-1":
                return st
        return None
    # The list does not make C read the session: its state is the bus's.
    want = listed(a)
    assert (want.state, want.last_seq) == (state("WORKING"), 2)
    got = wait_for(lambda: (lambda st: st if st and st.state == want.state else None)(listed(c)),
                   10, what=lambda: "sess-1's state on node C: %s, A: %s" % (listed(c), want))
    assert got.state == want.state
    assert c.metric("agenthub_cluster_sessions_read") == 0
    # Asked for that one session, C reads it and answers its newest seq.
    one = c.call("GetAgentStatus", S.GetAgentStatusRequest(session_id="sess-1"),
                 token="t-alice").statuses[0]
    assert (one.state, one.last_seq) == (want.state, want.last_seq)


def test_a_node_not_reading_a_session_whose_agent_said_no_state_lists_it_starting(nodes):
    n = nodes(flags=ON_DEMAND)
    a, c = n[0], n[2]
    r = a.runner("runner-1")
    r.publish("sess-1", text("hello"), text("again"))  # text says no state
    replay(a, "sess-1", 2)

    def listed(h, sid):
        for st in h.call("GetAgentStatus", S.GetAgentStatusRequest(), token="t-alice").statuses:
            if st.session_id == sid:
                return st.state
        return None
    assert listed(a, "sess-1") == state("STARTING")
    # No status of sess-1 is on the bus; its frames' events are, and they
    # tell C the session is there, as a node reading it would start it.
    wait_for(lambda: listed(c, "sess-1") == state("STARTING"), 10,
             what=lambda: "sess-1 on node C: %s" % listed(c, "sess-1"))
    assert c.metric("agenthub_cluster_sessions_read") == 0


def test_a_pane_on_a_node_that_cannot_read_the_session_in_time_ends_unavailable(nodes):
    # The node's consumers are held back, so its copy never becomes
    # current: the pane is refused with UNAVAILABLE (the client retries,
    # perhaps elsewhere), never started on a copy that may be behind.
    n = nodes(flags=ON_DEMAND, faults=True)
    a, b = n[0], n[1]
    r = a.runner("runner-1")
    r.publish("sess-1", text("m1"))
    replay(a, "sess-1", 1)
    n.fault(1, "cluster.hold_frames")
    err = fail(b.call, "SubscribeAgentSession",
               S.SubscribeAgentSessionRequest(session_id="sess-1", tail=10), token="t-alice",
               timeout=30)
    assert err.code() == grpc.StatusCode.UNAVAILABLE, err
    n.fault(1)
    assert [f.seq for f in replay(b, "sess-1", 1)] == [1]


def test_a_session_read_across_the_loss_of_a_nats_server_is_still_read_after(nodes):
    # B reads sess-1 (a pane) when one of the three NATS servers dies; the
    # session goes on through A.  B's copy follows, and a pane opened on B
    # afterwards has every frame.
    n = nodes(flags=["--cluster-linger-ms", "60000"])
    a, b = n[0], n[1]
    r = a.runner("runner-1")
    r.enroll(resume=False)
    want = ["k%d" % i for i in range(120)]
    publish_until_taken(a, r, 1, [text(w) for w in want[:40]])
    pane = subscribe(b, "sess-1", tail=1000)
    pane.wait_count(40)
    n.nats.servers[0].kill()
    publish_until_taken(a, r, 41, [text(w) for w in want[40:80]])
    time.sleep(3)
    publish_until_taken(a, r, 81, [text(w) for w in want[80:]])
    for h in (a, b, n[2]):
        got = wait_for(lambda h=h: (lambda f: f if texts(f)[-1:] == [want[-1]] else None)(
            replay(h, "sess-1", 120)), 30, what="every frame on %s" % h.public)
        assert texts(got) == want, h.public


def test_a_pane_whose_consumer_went_silent_gets_a_new_one_and_every_frame(nodes):
    # B's consumer of sess-1 stops delivering without a word (failpoint
    # cluster.deaf_consumer) while a pane on B reads it and A writes.  B
    # checks the copy of a session it only reads against the subject's
    # newest message every 5 s: behind twice in a row, the consumer is made
    # anew, and the pane gets what it missed.
    n = nodes(faults=True, flags=["--cluster-linger-ms", "60000"])
    a, b = n[0], n[1]
    r = a.runner("runner-1")
    r.publish("sess-1", text("m1"))
    pane = subscribe(b, "sess-1", tail=10)
    assert texts(pane.wait_count(1)) == ["m1"]
    n.fault(1, "cluster.deaf_consumer")
    r.publish("sess-1", text("m2"))
    replay(a, "sess-1", 2)
    time.sleep(0.5)
    n.fault(1)
    r.publish("sess-1", text("m3"))
    got = pane.wait_count(3, timeout=30)
    assert texts(got) == ["m1", "m2", "m3"]
    assert [f.seq for f in got] == [1, 2, 3]
    assert b.metric("agenthub_cluster_session_reads_started_total") >= 2


def test_a_reader_whose_consumer_went_silent_before_the_copy_was_current_gets_a_new_one(nodes):
    # B's first consumer of sess-1 delivers m1 and m2 to nobody (failpoint
    # cluster.deaf_consumer), then says it has delivered everything.  B's
    # copy then waits for the subject's newest message, which the heads
    # stream names and the frames stream holds; a consumer that does not
    # deliver it within 10 s is made anew, and the copy becomes current.
    # (Asking the heads stream again instead named the same message for
    # ever: the session's readers on B never started.)
    n = nodes(faults=True)
    a, b = n[0], n[1]
    r = a.runner("runner-1")
    r.publish("sess-1", text("m1"), text("m2"))
    replay(a, "sess-1", 2)
    n.fault(1, "cluster.deaf_consumer")
    first = subscribe(b, "sess-1", tail=10)
    wait_for(lambda: b.metric("agenthub_cluster_session_reads_started_total") >= 1, 10,
             what="node B to read sess-1")
    time.sleep(1.0)
    n.fault(1)
    first.cancel()
    assert session_messages(b) == 0  # delivered to nobody

    def attempt():
        rd = subscribe(b, "sess-1", tail=10)
        try:
            return rd.wait(lambda items: items if len(items) >= 2 else None, timeout=8)
        except AssertionError:
            return None
        finally:
            rd.cancel()
    got = wait_for(attempt, 40, what="sess-1 on node B")
    assert texts(got) == ["m1", "m2"]
    assert [f.seq for f in got] == [1, 2]
    assert b.metric("agenthub_cluster_session_reads_started_total") >= 2
