"""agenthubd as a cluster: three nodes with --cluster on a three-server NATS
JetStream cluster (harness.NatsCluster), all on one store.  Frames published
through one node reach subscribers on every node with one contiguous seq;
the bus has one seq and epoch, so a subscriber resumes on another node;
producers hear UNAVAILABLE while JetStream is unreachable, and health
Watch streams hear at once when a node can take appends again or not."""
import json
import os
import signal
import subprocess
import threading
import time

import grpc
import pytest

import harness
from helpers import Health
from rpc_harness import (F, S, Hub, Reader, RequestQueue, auth, event_frame, fail,  # noqa
                         method, state,
                         subscribe, subscribe_events, text, wait_for)

SUB = "SubscribeAgentSession"


def texts(frames):
    return [f.event.assistant_text.text for f in frames if f.event.HasField("assistant_text")]


def replay(hub, session_id, last, token="t-alice"):
    """Every retained frame of SESSION_ID up to seq LAST on HUB's copy.  A
    node's copy trails JetStream by a delivery: a pane opened while a burst
    is still arriving may fall behind the ring and end, so it opens again."""
    def attempt():
        rd = subscribe(hub, session_id, token=token, tail=100000)
        try:
            return rd.wait(lambda items: items if items and items[-1].seq >= last else None,
                           timeout=10)
        except AssertionError:
            if rd.done.is_set():
                return None
            raise
        finally:
            rd.cancel()
    return wait_for(attempt, 20, what="seq %d on %s" % (last, hub.public))


# Each test of the cluster suites runs twice: with nodes reading every
# session, and with nodes reading sessions on demand (docs/cluster.md);
# AGENTHUB_CLUSTER_READ=all or on-demand runs one of them.
READ_MODES = ([os.environ["AGENTHUB_CLUSTER_READ"]] if os.environ.get("AGENTHUB_CLUSTER_READ")
              else ["all", "on-demand"])


class Nodes:
    """Three agenthubd nodes on NATS cluster NATS sharing one store."""

    def __init__(self, nats, tmp_path, flags=(), count=3, replicas=3, env=None, faults=False,
                 start_faults=None):
        """FAULTS: each node reads its failpoints from a file of its own,
        set while it runs with fault(I, NAME, ...); START_FAULTS maps a
        node's index to the failpoints it starts with."""
        self.hubs = []
        self.nats = nats
        self.fault_files = []
        db = None
        tmp_path.mkdir(parents=True, exist_ok=True)
        for i in range(count):
            node_flags = ["--cluster", nats.url, "--node-id", "node-%d" % (i + 1),
                          "--cluster-replicas", str(replicas)] + list(flags)
            node_env = dict(env or {})
            if faults:
                path = tmp_path / ("node-%d.faults" % (i + 1))
                path.write_text("".join("%s=fault\n" % f for f in (start_faults or {}).get(i, ())))
                self.fault_files.append(path)
                node_env["AGENTHUB_FAILPOINTS"] = "@%s" % path
            try:
                h = Hub(db=db, flags=node_flags, workdir=tmp_path / ("node-%d" % (i + 1)),
                        world=None if db else True, env=node_env or None)
            except BaseException:
                self.kill()
                raise
            db = h.db
            self.hubs.append(h)
        try:
            for h in self.hubs:
                wait_for(lambda h=h: h.metric("agenthub_cluster_caught_up") == 1, 60,
                         what=lambda h=h: "node %s to catch up with JetStream: %s\n%s" % (
                             h.public, h.http_get("/healthz"), h.log(20)))
        except BaseException:
            self.kill()
            raise

    def kill(self):
        """Stops every node started so far without checking how they exit
        (a set that failed to come up: nothing may be left running)."""
        for h in self.hubs:
            h.kill()

    def __getitem__(self, i):
        return self.hubs[i]

    def fault(self, i, *names):
        """Node I's failpoints are NAMES from now on (none: cleared)."""
        self.fault_files[i].write_text(",".join("%s=fault" % n for n in names) + "\n")

    def stop(self):
        errors = []
        for h in self.hubs:
            try:
                h.stop()
            except AssertionError as err:
                errors.append(str(err))
        assert not errors, "\n".join(errors)


def node_sets(nats_cluster, tmp_path, read):
    """A fixture's body: start(**kwargs) makes a set of Nodes reading
    sessions as READ says (--cluster-read); every set is stopped after."""
    made = []

    def start(flags=(), **kwargs):
        n = Nodes(nats_cluster, tmp_path / ("set-%d" % len(made)),
                  flags=["--cluster-read", read] + list(flags), **kwargs)
        made.append(n)
        return n
    yield start
    for n in made:
        n.stop()


@pytest.fixture(params=READ_MODES)
def nodes(nats_cluster, tmp_path, request):
    yield from node_sets(nats_cluster, tmp_path, request.param)


def test_frames_published_through_one_node_reach_panes_on_every_node(nodes):
    n = nodes()
    a, b, c = n[0], n[1], n[2]
    live_a = subscribe(a, "sess-1")
    live_c = subscribe(c, "sess-1", token="t-bob")
    r = b.runner("runner-1")
    r.publish("sess-1", *[text("m%d" % i) for i in range(1, 6)])
    for pane in (live_a, live_c):
        got = pane.wait_count(5)
        assert texts(got) == ["m1", "m2", "m3", "m4", "m5"]
        assert [f.seq for f in got] == [1, 2, 3, 4, 5]
        pane.cancel()
    # Replay on any node: tail and since_seq, then live.
    since = subscribe(a, "sess-1", since_seq=2)
    tail = subscribe(c, "sess-1", tail=2)
    r.publish("sess-1", text("m6"))
    assert texts(since.wait_count(4)) == ["m3", "m4", "m5", "m6"]
    assert [f.seq for f in tail.wait_count(3)] == [4, 5, 6]
    since.cancel()
    tail.cancel()
    # A resume point no node has reached is OUT_OF_RANGE on every node.
    for h in n.hubs:
        err = fail(h.call, SUB, S.SubscribeAgentSessionRequest(session_id="sess-1", since_seq=99),
                   token="t-alice")
        assert err.code() == grpc.StatusCode.OUT_OF_RANGE


def test_a_batch_refused_with_nothing_after_its_predecessor_goes_again(nodes):
    # Every batch's first attempt is refused by JetStream ("wrong last
    # sequence") although no other node wrote: the stream leader had not yet
    # applied the predecessor this node's consumer already delivered.  The
    # writer sends it again, unchanged, instead of waiting for a message
    # after the predecessor that never comes.
    n = nodes(env={"AGENTHUB_FAILPOINTS": "cluster.refuse_first=fault"})
    a, b, c = n[0], n[1], n[2]
    live_a = subscribe(a, "sess-1")
    live_c = subscribe(c, "sess-1", token="t-bob")
    r = b.runner("runner-1")
    for i in range(1, 31):
        r.publish("sess-1", text("m%d" % i))
    for pane in (live_a, live_c):
        got = pane.wait_count(30, timeout=30)
        assert texts(got) == ["m%d" % i for i in range(1, 31)]
        assert [f.seq for f in got] == list(range(1, 31))
        pane.cancel()
    # Sent again after the same predecessor, never renumbered.
    wait_for(lambda: b.metric("agenthub_cluster_frames_waiting") == 0, 10,
             what="node B's outbox to empty")
    assert b.metric("agenthub_cluster_writer_changes_total") == 0


def spawn_agent_session(h):
    terminal = h.call("SpawnResource", S.SpawnResourceRequest(
        kind=S.RESOURCE_KIND_TERMINAL, container_name="ctr-1"), token="t-runner-1",
        door="runner").resource_id
    spawned = h.call("SpawnResource", S.SpawnResourceRequest(
        kind=S.RESOURCE_KIND_AGENT_SESSION, parent=terminal, provider="claude"),
        token="t-agent-1")
    return spawned.resource_id, spawned.session_id


def record_lengths(frames):
    return [json.loads(f.event.record.data_json)["length"] for f in frames
            if f.event.HasField("record")]


def test_every_node_reports_the_state_the_writer_derived(nodes):
    n = nodes()
    r = n[1].runner("runner-1")
    r.publish("sess-1", event_frame(tool_call=F.SessionToolCall(
        tool_call_id="t", status=F.AGENT_TOOL_CALL_STATUS_IN_PROGRESS)))

    def states():
        return [h.call("GetAgentStatus", S.GetAgentStatusRequest(session_id="sess-1"),
                       token="t-alice").statuses[0] for h in n.hubs]
    got = wait_for(lambda: (lambda st: st if all(s.state == state("WORKING") for s in st) else
                            None)(states()), 10, what="WORKING on every node")
    assert len({s.last_seq for s in got}) == 1


def test_two_nodes_writing_one_session_keep_its_seq_contiguous(nodes):
    n = nodes()
    rid, sid = spawn_agent_session(n[0])
    pane = subscribe(n[2], sid, token="t-bob", tail=1000)

    told = {}

    def write(h, base):
        for i in range(40):
            told[base + i] = h.call("AppendResourceOutput", S.AppendResourceOutputRequest(
                resource_id=rid, bytes=b'{"type":"prompt","data":{"length":%d}}\n' % (base + i)),
                token="t-agent-1").first_seq
    threads = [threading.Thread(target=write, args=(h, base))
               for h, base in ((n[0], 1000), (n[1], 2000))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    got = pane.wait(lambda items: items if len(record_lengths(items)) >= 80 else None, 30)
    assert [f.seq for f in got] == list(range(1, len(got) + 1))
    lengths = record_lengths(got)
    assert sorted(lengths) == list(range(1000, 1040)) + list(range(2000, 2040))
    # Each record is where its answer said, renumbered or not.
    assert {record_lengths([f])[0]: f.seq for f in got if f.event.HasField("record")} == told
    # Each writer's own frames keep their order.
    for base in (1000, 2000):
        assert [x for x in lengths if base <= x < base + 1000] == list(range(base, base + 40))
    pane.cancel()
    # Every node's copy holds the same log.
    for h in n.hubs:
        assert [f.seq for f in replay(h, sid, len(got), token="t-bob")] == \
            list(range(1, len(got) + 1))


def test_an_evicted_resume_point_is_out_of_range_on_another_node(nodes):
    n = nodes(flags=["--agent-log-bytes", "4096"])
    r = n[0].runner("runner-1")
    r.publish("sess-1", *[text("x" * 400) for _ in range(40)])
    got = replay(n[1], "sess-1", 40)
    assert got[0].seq > 1 and [f.seq for f in got] == list(range(got[0].seq, 41))
    err = fail(n[2].call, SUB, S.SubscribeAgentSessionRequest(session_id="sess-1", since_seq=1),
               token="t-alice")
    assert err.code() == grpc.StatusCode.OUT_OF_RANGE


def test_the_bus_has_one_seq_and_epoch_and_resumes_on_another_node(nodes):
    n = nodes()
    first = subscribe_events(n[0])
    r = n[1].runner("runner-1")
    r.publish("sess-1", *[text("e%d" % i) for i in range(1, 4)])
    got = first.wait(lambda items: items if len(
        [e for e in items if e.HasField("agent_message_chunk")]) >= 3 else None)
    epoch = got[0].instance_epoch
    assert epoch != 0 and all(e.instance_epoch == epoch for e in got)
    # Bus seqs only grow; a node's events go out in batches, numbered
    # stream seq * 1024 + index, so they need not be consecutive.
    seqs = [e.seq for e in got]
    assert seqs == sorted(set(seqs))
    resume_at = got[1].seq
    first.cancel()
    # Resuming on another node with the same epoch continues without a gap.
    r.publish("sess-1", text("e4"))
    again = subscribe_events(n[2], since_seq=resume_at, epoch=epoch)
    more = again.wait(lambda items: items if any(
        e.HasField("agent_message_chunk") and e.agent_message_chunk.text == "e4"
        for e in items) else None)
    # Exactly what came after resume_at on the first node, then e4.
    assert [e.SerializeToString() for e in more[:len(got) - 2]] == \
        [e.SerializeToString() for e in got[2:]]
    assert [e.seq for e in more] == sorted(set(e.seq for e in more))
    assert more[0].seq > resume_at
    assert all(e.instance_epoch == epoch for e in more)
    again.cancel()
    # A wrong epoch is a resync, as on one node.
    stale = subscribe_events(n[2], since_seq=resume_at, epoch=epoch ^ 1)
    assert stale.wait_count(1)[0].resync_required
    stale.cancel()


def test_a_runner_resumes_on_another_node_after_a_kill_with_nothing_taken_twice(nodes):
    n = nodes()
    a, b, c = n.hubs
    pane = subscribe(c, "sess-1", tail=1000)
    r = a.runner("runner-1")
    assert r.enroll(resume=False).last_runner_seq == 0
    # One PublishEvents stream left open, as a Runner's is: node A never
    # gets to write the Runner's mark to the store.
    q = RequestQueue()
    call = method(r.channel, "PublishEvents").future(q, metadata=auth(r.token), timeout=60)
    for i in range(1, 11):
        q.put(F.PublishEventsRequest(runner_seq=i, session_id="sess-1", frame=text("f%d" % i)))
    pane.wait(lambda items: len(texts(items)) >= 10)
    a.kill()
    q.close()
    call.cancel()
    # Enroll on node B answers from the log: the frames node A stored and
    # said so on the Runner's subject (A may have died between a store and
    # its dealt entry: then a little less, never more).
    r2 = b.runner("runner-1")
    mark = r2.enroll(resume=True).last_runner_seq
    assert mark <= 10
    # The Runner resends from where it was unsure (and some more), and goes
    # on: what the log holds already is dropped as a copy.
    r2.publish_raw([F.PublishEventsRequest(runner_seq=i, session_id="sess-1",
                                           frame=text("f%d" % i))
                    for i in range(min(mark + 1, 8), 14)])
    got = pane.wait(lambda items: items if len(texts(items)) >= 13 else None)
    assert texts(got) == ["f%d" % i for i in range(1, 14)]
    assert [f.seq for f in got] == list(range(1, len(got) + 1))
    # A plain Enroll (a restarted Runner) starts a new run on every node.
    assert c.runner("runner-1").enroll(resume=False).last_runner_seq == 0
    wait_for(lambda: b.runner("runner-1").enroll(resume=True).last_runner_seq == 0, 10,
             what="node B to see the new run")
    pane.cancel()


def test_control_calls_on_one_node_reach_the_runner_on_another(nodes):
    n = nodes()
    a, c = n[0], n[2]
    r = c.runner("runner-1")
    r.open_sessions(["sess-1"])
    a.call("SkipBatchWindow", S.SkipBatchWindowRequest(session_id="sess-1"), token="t-alice")
    assert r.wait_command("start_now").start_now.session_id == "sess-1"
    a.call("SendAgentMessage", S.SendAgentMessageRequest(session_id="sess-1", text="hello"),
           token="t-alice")
    sent = r.wait_command("deliver_control")
    assert sent.deliver_control.session_id == "sess-1"
    a.call("StopAgentSession", S.StopAgentSessionRequest(session_id="sess-1"), token="t-alice")
    assert r.wait_command("stop").stop.session_id == "sess-1"


def reachable_from(node, request, timeout=10):
    """SkipBatchWindow through NODE once the Runner's control subject is
    known there.  NATS tells other servers of a new subscription
    asynchronously, so for a moment after a Runner connects another node
    may still hear "no responders" (UNAVAILABLE, never delivered: safe to
    retry, as a client would).  Returns the first other refusal."""
    deadline = time.monotonic() + 10
    while True:
        err = fail(node.call, "SkipBatchWindow", request, token="t-alice", timeout=timeout)
        if "not connected to any node" not in err.details() or time.monotonic() > deadline:
            return err
        time.sleep(0.05)


def test_control_refusals_across_nodes_keep_their_one_node_statuses(nodes):
    n = nodes(flags=["--command-timeout-ms", "1000"])
    a, c = n[0], n[2]
    skip = S.SkipBatchWindowRequest(session_id="sess-1")
    # No node holds the Runner: not delivered.
    err = fail(a.call, "SkipBatchWindow", skip, token="t-alice")
    assert err.code() == grpc.StatusCode.UNAVAILABLE
    # The Runner refuses: UNAVAILABLE with its words, as on one node.
    r = c.runner("runner-1", ack_ok=False)
    r.open_sessions(["sess-1"])
    err = reachable_from(a, skip)
    assert err.code() == grpc.StatusCode.UNAVAILABLE and "refused by test" in err.details()
    r.close()
    # Written, never answered: DEADLINE_EXCEEDED, "may have been delivered".
    quiet = c.runner("runner-1", auto_ack=False)
    quiet.open_sessions(["sess-1"])
    err = reachable_from(a, skip, timeout=30)
    assert err.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert "may have been delivered" in err.details()


COUNTER_AGENT = r"""
import json, sys, time
for i in range(%d):
    sys.stdout.write(json.dumps({"assistant_text": {"text": "n-%%d" %% i, "message_id": "m"}}) + "\n")
    sys.stdout.flush()
    time.sleep(0.02)
while True:
    time.sleep(1)
"""


def texts_in(value):
    """Every assistant text in a JSON line of `agenthub log --json`."""
    found = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "text" and isinstance(v, str):
                found.append(v)
            else:
                found += texts_in(v)
    elif isinstance(value, list):
        for v in value:
            found += texts_in(v)
    return found


class Proc:
    """A program of the build, its stdout and stderr in files; stopped with
    SIGTERM (killed after 15 s)."""

    def __init__(self, tmp, name, args, env=None):
        self.out_path = tmp / (name + ".out")
        self.err_path = tmp / (name + ".err")
        self.out = open(self.out_path, "w")
        self.err = open(self.err_path, "w")
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self.out,
                                     stderr=self.err, env=full_env)

    def stdout(self):
        return self.out_path.read_text(errors="replace")

    def stderr(self):
        return self.err_path.read_text(errors="replace")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.out.close()
        self.err.close()
        return self.proc.returncode


def test_kill_9_of_the_runners_node_loses_and_repeats_nothing(nodes, tmp_path):
    count = 300
    n = nodes()
    a, b, c = n.hubs
    agent = tmp_path / "counter.py"
    agent.write_text(COUNTER_AGENT % count)
    want = ["n-%d" % i for i in range(count)]
    runner = Proc(tmp_path, "runner", [
        str(harness.BUILD / "agenthub-runner"), "--token", "t-runner-1", "--session", "sess-1",
        "--agent", "/usr/bin/python3 %s" % agent, "--verbose",
        "--addr", ",".join(h.runner_addr for h in (a, b, c))])
    # A pane through the CLI on node A (then C), one on node C.
    follower = Proc(tmp_path, "log", [
        str(harness.BUILD / "agenthub"), "log", "sess-1", "--follow", "--json"],
        env={"AGENTHUB_ADDR": "%s,%s" % (a.public, c.public), "AGENTHUB_TOKEN": "t-alice"})
    pane_c = subscribe(c, "sess-1", tail=100000)
    try:
        def cli_texts():
            got = []
            for line in follower.stdout().splitlines():
                got += texts_in(json.loads(line))
            return got
        wait_for(lambda: len(cli_texts()) >= 60, 30, 0.1, what=lambda: "60 frames on the CLI: " +
                 follower.stderr()[-2000:] + runner.stderr()[-2000:])
        a.kill()
        wait_for(lambda: cli_texts()[-1:] == [want[-1]], 60, 0.2,
                 what=lambda: "the last frame on the CLI (have %d): %s %s" % (
                     len(cli_texts()), follower.stderr()[-2000:], runner.stderr()[-3000:]))
        got = pane_c.wait(lambda items: items if texts(items)[-1:] == [want[-1]] else None, 60)
        assert cli_texts() == want
        assert texts(got) == want
        assert [f.seq for f in got] == list(range(got[0].seq, got[0].seq + len(got)))
        seqs = [json.loads(line).get("seq") for line in follower.stdout().splitlines()]
        assert seqs == sorted(set(seqs))
        assert "following on from seq" in follower.stderr()
    finally:
        pane_c.cancel()
        follower.stop()
        assert runner.stop() == 0, runner.stderr()[-4000:]


def publish_until_taken(hub, runner, first, frames):
    """Publishes FRAMES as runner_seq FIRST.. through HUB, the way a Runner
    does: refused (UNAVAILABLE), it enrolls again and resends from the
    server's last_runner_seq."""
    deadline = time.monotonic() + 30
    while True:
        try:
            # Enroll too answers UNAVAILABLE while the node cannot read the
            # log: the mark it would answer is the log's.
            last = runner.enroll(resume=True).last_runner_seq
            todo = [(first + i, f) for i, f in enumerate(frames) if first + i > last]
            if not todo:
                return
            runner.publish_raw([F.PublishEventsRequest(runner_seq=seq, session_id="sess-1",
                                                       frame=f) for seq, f in todo])
            return
        except grpc.RpcError as err:
            assert err.code() == grpc.StatusCode.UNAVAILABLE, err
            assert time.monotonic() < deadline, "still refused: %s" % err.details()
            time.sleep(0.2)


def test_one_of_three_nats_servers_killed_loses_nothing_acknowledged(nodes):
    n = nodes()
    r = n[0].runner("runner-1")
    r.enroll(resume=False)
    want = ["k%d" % i for i in range(200)]
    for chunk in range(4):
        if chunk == 2:
            n.nats.servers[0].kill()
        publish_until_taken(n[0], r, chunk * 50 + 1, [text(w) for w in want[chunk * 50:][:50]])
    # Every node's copy holds every frame once, in order.
    for h in n.hubs:
        seen = []

        def holds_all(h=h):
            rd = subscribe(h, "sess-1", tail=100000)
            try:
                got = rd.wait(lambda items: items if texts(items)[-1:] == [want[-1]] else None,
                              timeout=10)
                return got
            except AssertionError:
                seen[:] = texts(rd.items)
                return None
            finally:
                rd.cancel()
        got = wait_for(holds_all, 30, what=lambda: "every frame on %s: have %d, last %r; %r" % (
            h.public, len(seen), seen[-3:], {k: v for k, v in h.metrics().items()
                                            if "cluster" in k}))
        assert texts(got) == want
        assert [f.seq for f in got] == list(range(got[0].seq, got[0].seq + len(got)))


def test_jetstream_unreachable_producers_hear_unavailable_and_panes_end(nodes):
    n = nodes(count=2, replicas=1)
    r = n[0].runner("runner-1")
    r.publish("sess-1", text("before"))
    pane = subscribe(n[1], "sess-1", tail=10)
    first = pane.wait_count(1)
    assert texts(first) == ["before"]
    for s in n.nats.servers:
        s.kill()
    for h in n.hubs:
        h.wait_metric("agenthub_cluster_connected", lambda v: v == 0, timeout=15)
    # The pane ends where it is, telling its client where to resume.
    code, trailers = pane.finish()
    assert code == grpc.StatusCode.OK
    assert trailers["agenthub-last-seq"] == str(pane.items[-1].seq)
    err = fail(r.publish, "sess-1", text("during"))
    assert err.code() == grpc.StatusCode.UNAVAILABLE
    err = fail(n[1].call, SUB, S.SubscribeAgentSessionRequest(session_id="sess-1"),
               token="t-alice")
    assert err.code() == grpc.StatusCode.UNAVAILABLE
    status, body = n[0].http_get("/healthz")
    assert status == 503 and "session log" in body, (status, body)


def append_record(h, rid, length, timeout=10):
    return h.call("AppendResourceOutput", S.AppendResourceOutputRequest(
        resource_id=rid, bytes=b'{"type":"prompt","data":{"length":%d}}\n' % length),
        token="t-agent-1", timeout=timeout)


def test_append_resource_output_is_ok_only_once_jetstream_stored_it(nodes):
    n = nodes()
    rid, sid = spawn_agent_session(n[0])
    answers = [append_record(n[0], rid, 100 + i) for i in range(5)]
    # Each OK names the seq its record holds in the log, on every node.
    last = answers[-1].last_seq
    for h in (n[1], n[2]):
        got = {f.seq: f for f in replay(h, sid, last, token="t-bob")}
        for i, a in enumerate(answers):
            assert a.first_seq == a.last_seq
            assert record_lengths([got[a.first_seq]]) == [100 + i]


def test_a_session_whose_messages_the_budget_evicted_is_written_again(nodes):
    # The frames stream is bounded (--session-log-budget-bytes, oldest
    # first): a quiet session's last message can be evicted by the others'
    # traffic.  Its next batch names a predecessor the stream no longer
    # holds; JetStream refuses it ("wrong last sequence: 0") and the writer,
    # refused for a while with nothing newer to follow, writes after what
    # the stream does hold, rather than never again.
    budget = 256 * 1024
    n = nodes(count=2, replicas=1, flags=["--session-log-budget-bytes", str(budget),
                                          "--agent-log-bytes", str(budget)])
    rid, sid = spawn_agent_session(n[0])
    first = append_record(n[0], rid, 1)
    r = n[0].runner("runner-1")
    for i in range(40):  # 40 x 16 KiB through another session: A's message goes
        r.publish("sess-1", text("x%d " % i + "y" * 16384))
    wait_for(lambda: n[0].metric("agenthub_cluster_frames_waiting") == 0, 20,
             what="the other session's frames to be stored")
    again = append_record(n[0], rid, 2, timeout=20)
    assert "is not the subject's last; writing after" in n[0].stderr()
    assert again.first_seq > first.last_seq
    got = {f.seq: f for f in replay(n[1], sid, again.last_seq, token="t-bob")}
    assert record_lengths([got[again.first_seq]]) == [2]


def test_a_node_started_after_the_budget_evicted_a_session_continues_its_seqs(nodes):
    # A quiet session's messages are all evicted by the others' traffic
    # while node B is down; B starts with no copy of it, then writes it
    # first.  B must number after what the session held (the heads stream
    # kept its newest batch), as A does from its copy: numbering from 1
    # would give A and B two meanings for the same seqs.
    budget = 256 * 1024
    n = nodes(count=2, replicas=1, flags=["--session-log-budget-bytes", str(budget),
                                          "--agent-log-bytes", str(budget)])
    a, b = n[0], n[1]
    rid, sid = spawn_agent_session(a)
    before = [append_record(a, rid, i) for i in (1, 2, 3)]
    replay(b, sid, before[-1].last_seq, token="t-bob")
    b.kill()
    r = a.runner("runner-1")
    for i in range(40):  # 40 x 16 KiB through another session: sid's messages go
        r.publish("sess-1", text("x%d " % i + "y" * 16384))
    wait_for(lambda: a.metric("agenthub_cluster_frames_waiting") == 0, 20,
             what="the other session's frames to be stored")
    b.start()
    wait_for(lambda: b.metric("agenthub_cluster_caught_up") == 1, 30,
             what="the restarted node to catch up")
    again = append_record(b, rid, 4, timeout=20)
    assert again.first_seq == before[-1].last_seq + 1, (again, before[-1])
    assert b.metric("agenthub_cluster_heads_applied_total") == 1
    for h in (a, b):
        got = {f.seq: f for f in replay(h, sid, again.last_seq, token="t-bob")}
        assert record_lengths([got[again.first_seq]]) == [4], h.public


def test_append_resource_output_while_jetstream_hangs_answers_unavailable(nodes):
    n = nodes(count=2, replicas=1)
    rid, sid = spawn_agent_session(n[0])
    before = append_record(n[0], rid, 1)
    # Stopped, not killed: the node's connection stays open and it still
    # takes the append; JetStream never acknowledges it.
    for s in n.nats.servers:
        s.proc.send_signal(signal.SIGSTOP)
    try:
        # A caller that goes away first takes its wait back with it (the
        # server under ASan: nothing touches the freed call later).
        gone = fail(append_record, n[0], rid, 3, timeout=0.3)
        assert gone.code() == grpc.StatusCode.DEADLINE_EXCEEDED, gone
        err = fail(append_record, n[0], rid, 2, timeout=20)
        assert err.code() == grpc.StatusCode.UNAVAILABLE, err
        assert err.details() == "the session log cannot store frames now; retry", err
    finally:
        for s in n.nats.servers:
            s.proc.send_signal(signal.SIGCONT)
    # The shim sends the record again until it is told OK; an OK record is
    # on the other node's copy at the seq it was told.

    def again():
        try:
            return append_record(n[0], rid, 2)
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.UNAVAILABLE:
                raise
            return None
    ok = wait_for(again, 30, what="the append to be stored once JetStream is back")
    assert ok.first_seq > before.last_seq
    got = {f.seq: f for f in replay(n[1], sid, ok.last_seq, token="t-bob")}
    assert record_lengths([got[ok.first_seq]]) == [2]
    assert n[0].metric("agenthub_cluster_appends_unstored_total") >= 1


def statuses(watch):
    return [item.status for item in watch.items]


def last_status_is(status):
    return lambda items: bool(items) and items[-1].status == status


def test_health_watch_hears_jetstream_lost_and_back(nodes, pb):
    # One node on SQLite: no store tick, so only the session log's own
    # change of state can reach the Watch stream.
    n = nodes(count=1, replicas=1)
    h = n[0]
    health = Health(h.channel(), pb)
    watch = Reader(health.watch(timeout=120))
    watch.wait(lambda items: len(items) >= 1, what="the first status")
    assert statuses(watch) == [Health.SERVING]
    n.nats.stop_servers()
    # The node may still reach a server for a moment while they stop, so
    # SERVING may come and go before the end: wait for the end, on which
    # Check, Watch and the metric agree.
    harness.wait_for(lambda: (statuses(watch)[-1] == Health.NOT_SERVING
                              and h.metric("agenthub_cluster_connected") == 0
                              and health.status() == Health.NOT_SERVING),
                     timeout=15, what=lambda: "NOT_SERVING everywhere: %s" % statuses(watch))
    for s in n.nats.servers:
        s.start()
    n.nats.wait_healthy()
    watch.wait(last_status_is(Health.SERVING), timeout=30, what="SERVING again")
    assert health.status() == Health.SERVING
    got = statuses(watch)
    # A Watch stream is told changes only, never the same status twice.
    assert all(a != b for a, b in zip(got, got[1:])), got
    assert not watch.done.is_set()
    watch.cancel()


def test_health_watch_is_not_serving_until_the_node_caught_up(nats_cluster, tmp_path, pb):
    for s in nats_cluster.servers:
        s.stop()
    h = Hub(flags=["--cluster", nats_cluster.url, "--node-id", "node-1",
                   "--cluster-replicas", "1"], workdir=tmp_path / "node-1")
    try:
        watch = Reader(Health(h.channel(), pb).watch(timeout=120))
        watch.wait(lambda items: len(items) >= 1, what="the first status")
        assert statuses(watch) == [Health.NOT_SERVING]
        assert h.metric("agenthub_cluster_caught_up") == 0
        for s in nats_cluster.servers:
            s.start()
        nats_cluster.wait_healthy()
        # Connected is not enough: SERVING once the streams are replayed.
        watch.wait(last_status_is(Health.SERVING), timeout=60, what="SERVING")
        assert h.metric("agenthub_cluster_caught_up") == 1
        assert statuses(watch) == [Health.NOT_SERVING, Health.SERVING]
        watch.cancel()
    finally:
        h.stop()
