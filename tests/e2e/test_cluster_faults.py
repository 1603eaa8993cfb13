"""The cluster's write path under the faults that broke it, each made
deterministic with a failpoint set in a running node (tests/e2e/test_cluster.py's
Nodes with faults=True): a consumer held back (a node whose copy lags), a
writer that cannot publish for now (paused or cut off), an acknowledgement
lost after the store.  Whatever the writers do, every node's copy holds each
frame once, with the same contiguous seqs, and Enroll never answers a mark
above what the log holds."""
import json
import threading

import grpc

from rpc_harness import F, S, subscribe_events, text, wait_for
from test_cluster import nodes, replay, spawn_agent_session, texts  # noqa: F401 (fixture)


def requests(first, last, prefix="f"):
    return [F.PublishEventsRequest(runner_seq=i, session_id="sess-1", frame=text("%s%d" % (prefix, i)))
            for i in range(first, last + 1)]


def assert_every_copy_holds(n, want, session_id="sess-1", texts_of=texts):
    """Every node's copy of SESSION_ID holds WANT once each, in order, under
    seqs 1..len(WANT)."""
    copies = []
    for h in n.hubs:
        got = replay(h, session_id, len(want))
        assert texts_of(got) == want, (h.public, texts_of(got))
        assert [f.seq for f in got] == list(range(1, len(want) + 1)), (h.public,
                                                                        [f.seq for f in got])
        copies.append([(f.seq, f.SerializeToString()) for f in got])
    assert all(c == copies[0] for c in copies)


def test_frames_sent_again_through_a_node_that_lags_are_stored_once(nodes):
    # B's copy lags (its consumer held back) when the Runner's frames 1..5,
    # stored through A, reach B again with 6 and 7.  B's batch is refused
    # after A's and made again from what its copy then holds: 1..5 are not
    # written twice, and no frame goes out of runner_seq order.
    n = nodes(faults=True)
    a, b = n[0], n[1]
    ra = a.runner("runner-1")
    ra.enroll(resume=False)
    rb = b.runner("runner-1")
    assert rb.enroll(resume=True).last_runner_seq == 0
    n.fault(1, "cluster.hold_frames")
    ra.publish_raw(requests(1, 5))
    replay(a, "sess-1", 5)
    rb.publish_raw(requests(1, 7))
    n.fault(1)
    assert_every_copy_holds(n, ["f%d" % i for i in range(1, 8)])
    assert a.metric("agenthub_cluster_copies_dropped_total") + \
        b.metric("agenthub_cluster_copies_dropped_total") >= 5


def test_enroll_on_a_node_that_lags_answers_only_after_reading_the_log(nodes):
    # The Runner's first run sent 1..10; it restarts (a plain Enroll on A,
    # a new run counting from 1) and sends 1..3 through A while B's copy
    # lags.  Enroll on B must not answer from B's stale copy (10, the old
    # run's: the Runner would skip 4..10 of the new run, never stored): it
    # answers once B has read the log up to now, 3.
    n = nodes(faults=True)
    a, b = n[0], n[1]
    ra = a.runner("runner-1")
    ra.enroll(resume=False)
    ra.publish_raw(requests(1, 10, prefix="old"))
    # PublishEvents answers once A took the frames, not once they are
    # stored: B's mark may be anything up to 10 until A has stored them and
    # said so on the Runner's subject.
    replay(a, "sess-1", 10)
    rb = b.runner("runner-1")
    wait_for(lambda: rb.enroll(resume=True).last_runner_seq == 10, 10, what="B's mark to be 10")
    n.fault(1, "cluster.hold_frames")
    ra.enroll(resume=False)
    ra.publish_raw(requests(1, 3, prefix="new"))
    replay(a, "sess-1", 13)
    answer = {}
    t = threading.Thread(target=lambda: answer.update(r=rb.enroll(resume=True)))
    t.start()
    t.join(0.5)
    n.fault(1)
    t.join(15)
    # Never the old run's 10; 3 once A's dealt entries for the new run are
    # read (a mark below them only makes the Runner send copies).
    assert answer["r"].last_runner_seq <= 3
    wait_for(lambda: rb.enroll(resume=True).last_runner_seq == 3, 10, what="B's mark to be 3")
    assert_every_copy_holds(n, ["old%d" % i for i in range(1, 11)] +
                            ["new%d" % i for i in range(1, 4)])


def test_a_paused_writer_resuming_after_another_node_wrote_stores_nothing_twice(nodes):
    # A takes frames 1..5 but cannot publish them (paused, cut off); the
    # Runner, told nothing is stored, sends them through B, which stores
    # them.  When A can publish again its batch is refused (B wrote after
    # its predecessor) and made again from A's copy: nothing is left to send.
    n = nodes(faults=True)
    a, b = n[0], n[1]
    ra = a.runner("runner-1")
    ra.enroll(resume=False)
    n.fault(0, "cluster.hold_publish")
    ra.publish_raw(requests(1, 5))
    rb = b.runner("runner-1")
    assert rb.enroll(resume=True).last_runner_seq == 0
    rb.publish_raw(requests(1, 5))
    replay(b, "sess-1", 5)
    n.fault(0)
    wait_for(lambda: a.metric("agenthub_cluster_frames_waiting") == 0, 20,
             what="A's outbox to empty")
    rb.publish_raw(requests(6, 6))
    assert_every_copy_holds(n, ["f%d" % i for i in range(1, 7)])


def test_enroll_while_the_node_cannot_store_never_covers_what_it_took(nodes):
    # B took frames 1..5 and cannot store them: Enroll on B answers a mark
    # only from the log (0 here) or UNAVAILABLE, never 5.  B then dies with
    # its outbox; the Runner, resending from the mark through A, loses nothing.
    n = nodes(faults=True)
    a, b = n[0], n[1]
    rb = b.runner("runner-1")
    rb.enroll(resume=False)
    n.fault(1, "cluster.hold_publish")
    rb.publish_raw(requests(1, 5))
    try:
        mark = rb.enroll(resume=True).last_runner_seq
    except grpc.RpcError as err:
        assert err.code() == grpc.StatusCode.UNAVAILABLE, err
        mark = None
    assert mark in (None, 0)
    b.kill()
    ra = a.runner("runner-1")
    last = ra.enroll(resume=True).last_runner_seq
    assert last == 0
    ra.publish_raw(requests(last + 1, 5))
    n.hubs.remove(b)
    assert_every_copy_holds(n, ["f%d" % i for i in range(1, 6)])


def test_frames_stored_without_their_dealt_entry_are_sent_again_and_stored_once(nodes):
    # A stores the Runner's frames 1..5 but never writes the dealt entry
    # that tells the Runner's subject so (failpoint cluster.dealt_lost: a
    # writer that died between the two).  The mark is read from the
    # Runner's subject alone, so Enroll on B answers 0, not 5; the Runner
    # sends 1..6 again through B, whose copy drops 1..5 as copies and says
    # they are dealt with, so the mark reaches 6 and each frame is there once.
    n = nodes(faults=True)
    a, b = n[0], n[1]
    ra = a.runner("runner-1")
    ra.enroll(resume=False)
    n.fault(0, "cluster.dealt_lost")
    ra.publish_raw(requests(1, 5))
    replay(a, "sess-1", 5)
    rb = b.runner("runner-1")
    assert rb.enroll(resume=True).last_runner_seq == 0
    n.fault(0)
    rb.publish_raw(requests(1, 6))
    wait_for(lambda: rb.enroll(resume=True).last_runner_seq == 6, 10, what="B's mark to be 6")
    assert_every_copy_holds(n, ["f%d" % i for i in range(1, 7)])
    assert b.metric("agenthub_cluster_copies_dropped_total") >= 5


def test_a_keyed_record_whose_ack_was_lost_is_stored_once(nodes):
    # The batch holding a call's record is stored but its acknowledgement
    # lost: the call answers UNAVAILABLE, the producer sends it again with
    # the same idempotency_key, and is answered with the seqs the record
    # already has; every copy holds it once.
    n = nodes(faults=True)
    a = n[0]
    rid, sid = spawn_agent_session(a)
    n.fault(0, "cluster.ack_lost")
    request = S.AppendResourceOutputRequest(
        resource_id=rid, bytes=b'{"type":"prompt","data":{"length":7}}\n',
        idempotency_key="spool-1")
    try:
        first = a.call("AppendResourceOutput", request, token="t-agent-1", timeout=15)
    except grpc.RpcError as err:
        assert err.code() == grpc.StatusCode.UNAVAILABLE, err
        first = None
    n.fault(0)
    again = a.call("AppendResourceOutput", request, token="t-agent-1", timeout=15)
    for h in n.hubs[1:]:
        retried = h.call("AppendResourceOutput", request, token="t-agent-1", timeout=15)
        assert (retried.first_seq, retried.last_seq) == (again.first_seq, again.last_seq)
    if first is not None:
        assert (first.first_seq, first.last_seq) == (again.first_seq, again.last_seq)
    for h in n.hubs:
        got = replay(h, sid, again.last_seq, token="t-admin")
        records = [f for f in got if f.event.HasField("record")]
        assert len(records) == 1, (h.public, records)
        assert records[0].seq == again.first_seq
    # Answered from the copy without storing (a node reading every session),
    # or dropped from the outbox as a copy once the node read the session
    # (--cluster-read on-demand): either way the retries stored nothing.
    assert sum(h.metric("agenthub_records_retried_total") +
               h.metric("agenthub_cluster_copies_dropped_total") for h in n.hubs[1:]) >= 2


def keyed(rid, key, length):
    return S.AppendResourceOutputRequest(
        resource_id=rid, bytes=b'{"type":"prompt","data":{"length":%d}}\n' % length,
        idempotency_key=key)


def test_a_keyed_record_a_cut_off_node_took_is_not_stored_late_a_second_time(nodes):
    # A takes a keyed record it cannot publish (cut off, paused), and its
    # producer is told UNAVAILABLE and stores it through B.  Then 300 other
    # keyed calls, more than a copy remembers keys of.  When A can publish
    # again, the record it took must not follow them as a second copy: a
    # keyed call's entries go when its producer is told UNAVAILABLE.
    n = nodes(faults=True)
    a, b = n[0], n[1]
    rid, sid = spawn_agent_session(a)
    n.fault(0, "cluster.hold_publish")
    try:
        a.call("AppendResourceOutput", keyed(rid, "spool-late", 7777), token="t-agent-1",
               timeout=15)
        raise AssertionError("a node that cannot publish answered OK")
    except grpc.RpcError as err:
        assert err.code() == grpc.StatusCode.UNAVAILABLE, err
    stored = b.call("AppendResourceOutput", keyed(rid, "spool-late", 7777), token="t-agent-1",
                    timeout=15)
    for i in range(300):
        b.call("AppendResourceOutput", keyed(rid, "spool-%d" % i, i), token="t-agent-1",
               timeout=15)
    n.fault(0)
    wait_for(lambda: a.metric("agenthub_cluster_frames_waiting") == 0, 20,
             what="A's outbox to empty")
    last = a.call("AppendResourceOutput", keyed(rid, "spool-after", 8888), token="t-agent-1",
                  timeout=15)
    for h in (a, b):
        got = replay(h, sid, last.last_seq, token="t-admin")
        late = [f.seq for f in got if f.event.HasField("record") and
                json.loads(f.event.record.data_json)["length"] == 7777]
        assert late == [stored.first_seq], (h.public, late)


def test_a_node_restarted_after_the_others_wrote_catches_up_with_the_same_copy(nodes):
    n = nodes()
    a, c = n[0], n[2]
    ra = a.runner("runner-1")
    ra.enroll(resume=False)
    ra.publish_raw(requests(1, 20))
    replay(c, "sess-1", 20)
    c.kill()
    ra.publish_raw(requests(21, 40))
    c.start()
    wait_for(lambda: c.metric("agenthub_cluster_caught_up") == 1, 30,
             what="the restarted node to catch up")
    assert_every_copy_holds(n, ["f%d" % i for i in range(1, 41)])


def test_records_acknowledged_survive_a_kill_of_every_nats_server(nodes):
    # What an acknowledgement survives (docs/cluster.md): every NATS server
    # killed at once right after the last answer, then started again on the
    # same files; every record answered OK is there, once.
    n = nodes()
    a = n[0]
    rid, sid = spawn_agent_session(a)
    answers = []
    for i in range(200):
        answers.append(a.call("AppendResourceOutput", S.AppendResourceOutputRequest(
            resource_id=rid, bytes=b'{"type":"prompt","data":{"length":%d}}\n' % (i + 1),
            idempotency_key="k%d" % i), token="t-agent-1", timeout=15))
    fresh = n[2]
    fresh.kill()
    for s in n.nats.servers:
        s.kill()
    for s in n.nats.servers:
        s.start()
    n.nats.wait_healthy(60)
    # The servers serve again (a node that stayed up is back and caught up)
    # before the stopped node starts and replays the stream from disk.
    wait_for(lambda: a.metric("agenthub_cluster_connected") == 1, 60,
             what="node A to reach NATS again")
    fresh.start()
    wait_for(lambda: fresh.metric("agenthub_cluster_caught_up") == 1, 60,
             what="a node started after the restart to replay the stream")
    got = replay(fresh, sid, answers[-1].last_seq, token="t-admin")
    lengths = [json.loads(f.event.record.data_json)["length"] for f in got
               if f.event.HasField("record")]
    assert lengths == list(range(1, 201))


# --- the bus: a node's events are stored once each, in order, whatever the
# publishes' fate ---------------------------------------------------------------

def chunk_texts(events):
    return [e.agent_message_chunk.text for e in events if e.HasField("agent_message_chunk")]


def bus_epoch(hub):
    """The bus's instance_epoch, from the resync a seq no bus reaches gets."""
    probe = subscribe_events(hub, since_seq=2**64 - 1)
    epoch = probe.wait_count(1)[0].instance_epoch
    probe.cancel()
    return epoch


def bus_of_every_node(n, count):
    """Each node's bus replayed from the start: (seq, bytes) of its events,
    once the first COUNT message chunks are in it."""
    copies = []
    for h in n.hubs:
        reader = subscribe_events(h, since_seq=1, epoch=bus_epoch(h))
        got = reader.wait(lambda items: items if len(chunk_texts(items)) >= count else None,
                          timeout=20)
        reader.cancel()
        copies.append([(e.seq, e.SerializeToString()) for e in got])
    return copies


def run_bus_faults(n, *faults, count=20):
    r = n[0].runner("runner-1")
    r.enroll(resume=False)
    live = subscribe_events(n[2])
    n.fault(0, *faults)
    r.publish_raw(requests(1, count, prefix="e"))
    got = live.wait(lambda items: items if len(chunk_texts(items)) >= count else None,
                    timeout=30)
    n.fault(0)
    live.cancel()
    # Every chunk once, in the order the writer made them, with seqs that
    # only grow; every node's copy of the bus the same.
    assert chunk_texts(got) == ["e%d" % i for i in range(1, count + 1)]
    assert [e.seq for e in got] == sorted(set(e.seq for e in got))
    copies = bus_of_every_node(n, count)
    assert all(c == copies[0] for c in copies)
    return n[0].metric


def test_bus_events_whose_first_publish_is_lost_are_sent_again_in_order(nodes):
    # Every batch's first attempt is lost before JetStream stores it (as in
    # a leader election): sent again, the events still arrive once, in order.
    metric = run_bus_faults(nodes(faults=True), "cluster.bus_publish_lost")
    assert metric("agenthub_cluster_bus_retries_total") >= 1
    assert metric("agenthub_cluster_bus_events_lost_total") == 0


def test_bus_events_whose_ack_is_lost_after_the_store_are_not_stored_twice(nodes):
    # Stored, but the answer lost: the resend carries the same Nats-Msg-Id,
    # and JetStream answers it as a duplicate.
    metric = run_bus_faults(nodes(faults=True), "cluster.bus_ack_lost")
    assert metric("agenthub_cluster_bus_retries_total") >= 1


def test_a_bus_batch_stored_twice_past_the_duplicate_window_is_read_once(nodes):
    # Past the duplicate window (simulated: no Nats-Msg-Id) a resend is
    # stored a second time; readers drop the copy.
    n = nodes(faults=True)
    run_bus_faults(n, "cluster.bus_ack_lost", "cluster.bus_no_msg_id")
    assert all(h.metric("agenthub_cluster_bus_copies_dropped_total") >= 1 for h in n.hubs)

def bus_behind(n):
    """Node C's bus consumer held back while the Runner's events, stored
    through B, reach a subscriber on A.  Returns the Runner, A's
    subscriber and its events so far (three chunks)."""
    from rpc_harness import subscribe_events
    a, b = n[0], n[1]
    first = subscribe_events(a)
    n.fault(2, "cluster.hold_bus")
    r = b.runner("runner-1")
    r.publish("sess-1", *[text("e%d" % i) for i in range(1, 4)])
    return r, first, first.wait(lambda items: items if len(chunk_texts(items)) >= 3 else None)


def test_a_subscriber_resuming_on_a_node_whose_bus_copy_lags_waits_for_it(nodes):
    # A client resuming on C after events C's copy has not read yet has a
    # cursor into history that exists: C delivers what follows once its
    # copy catches up, never resync_required.
    from rpc_harness import subscribe_events
    n = nodes(faults=True)
    r, first, got = bus_behind(n)
    epoch, resume_at = got[-1].instance_epoch, got[-2].seq
    again = subscribe_events(n[2], since_seq=resume_at, epoch=epoch)
    r.publish("sess-1", text("e4"))
    first.wait(lambda items: "e4" in chunk_texts(items))
    assert not again.done.wait(0.5) and again.items == [], (again.error, again.items)
    n.fault(2)
    more = again.wait(lambda items: items if "e4" in chunk_texts(items) else None)
    assert not any(e.HasField("resync_required") for e in more)
    # Bus seqs only grow (a node's batch of events, stream seq * 1024 +
    # index): after resume_at, each once.
    assert [e.seq for e in more] == sorted(set(e.seq for e in more)) and more[0].seq > resume_at
    assert chunk_texts(more) == ["e3", "e4"]
    assert all(e.instance_epoch == epoch for e in more)
    again.cancel()
    first.cancel()


def test_a_node_whose_bus_copy_stays_behind_answers_unavailable_to_retry(nodes):
    # The wait is bounded: a copy that does not reach since_seq in time
    # (its consumer stuck) tells the client to retry, never to resync.
    import grpc
    from rpc_harness import subscribe_events
    n = nodes(faults=True)
    r, first, got = bus_behind(n)
    epoch, resume_at = got[-1].instance_epoch, got[-1].seq
    again = subscribe_events(n[2], since_seq=resume_at, epoch=epoch)
    code, _ = again.finish(timeout=20)
    assert code == grpc.StatusCode.UNAVAILABLE and again.items == []
    assert again.error.details() == "this node has not read the bus up to since_seq yet; retry"
    n.fault(2)
    # The retry, once the copy caught up, goes on after since_seq.
    def resumed():
        rd = subscribe_events(n[2], since_seq=resume_at, epoch=epoch)
        if rd.done.wait(0.3):
            return None
        return rd
    again = wait_for(resumed, 20, what="C to take the resume")
    r.publish("sess-1", text("e4"))
    more = again.wait(lambda items: items if "e4" in chunk_texts(items) else None)
    assert more[0].seq > resume_at and not any(e.HasField("resync_required") for e in more)
    assert chunk_texts(more) == ["e4"]
    again.cancel()
    first.cancel()


# --- the streams a node relies on: the bus epoch ------------------------------


def test_a_bus_stream_replaced_while_a_node_sets_up_still_gives_one_epoch(nodes):
    # Two nodes creating a stream at the same moment can both be told it
    # was made, and JetStream then keeps the later one (nats-server 2.10):
    # a node that took its bus epoch from the stream its own create
    # answered would resume clients under an epoch no other node has, and
    # tell them resync_required for history that exists.  The failpoint
    # replaces the bus stream right after node A's create; A and B must
    # still agree on the epoch, and a subscriber moving from A to B resumes.
    n = nodes(count=2, replicas=1, faults=True,
              start_faults={0: ["cluster.bus_replaced_once"]})
    a, b = n[0], n[1]
    assert bus_epoch(a) == bus_epoch(b) != 0
    first = subscribe_events(a)
    a.runner("runner-1").publish("sess-1", *[text("e%d" % i) for i in range(1, 4)])
    got = first.wait(lambda items: items if len(chunk_texts(items)) >= 3 else None)
    first.cancel()
    again = subscribe_events(b, since_seq=got[0].seq, epoch=got[0].instance_epoch)
    more = again.wait(lambda items: items if len(chunk_texts(items)) >= 2 else None)
    again.cancel()
    assert not any(e.HasField("resync_required") for e in more)
    assert chunk_texts(more)[:2] == chunk_texts(got)[1:3]


def test_the_bus_epoch_is_the_bus_streams_own_whatever_the_bucket_holds(nodes):
    # The epoch is drawn once, when the bus stream is made, and kept in the
    # stream's configuration, which JetStream replicates with the stream:
    # a node that starts later reads it there, not from anything that could
    # differ from one server or one moment to the next.  Here the bucket
    # that older nodes kept the epoch in is emptied; a node restarted after
    # must still answer the epoch the others do.
    n = nodes()
    a, c = n[0], n[2]
    epoch = bus_epoch(a)
    assert epoch != 0 and bus_epoch(c) == epoch
    info = n.nats.servers[0].jetstream_request("$JS.API.STREAM.INFO.AGENTHUB_BUS")
    assert info["config"]["description"].endswith(" epoch %d" % epoch), info["config"]
    purged = n.nats.servers[0].jetstream_request("$JS.API.STREAM.PURGE.KV_AGENTHUB_CLUSTER")
    assert purged.get("success"), purged
    c.kill()
    c.start()
    wait_for(lambda: c.metric("agenthub_cluster_caught_up") == 1, 30,
             what="the restarted node to catch up")

    def epoch_after_restart():
        try:
            return bus_epoch(c)
        except (AssertionError, grpc.RpcError):
            return None  # the first call on a channel to the killed process
    assert wait_for(epoch_after_restart, 10, what="the restarted node's bus epoch") == epoch
