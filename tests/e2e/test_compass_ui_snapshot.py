"""The public door's bus as a compass UI reads it.

The client's messages are NOT generated from proto/: they are written here
by hand from compass.v1's published names and numbers (a
FileDescriptorProto in a private descriptor pool), so what is checked is
what a client built from compass's own schema sees.

compass's contract for SubscribeEvents: since_seq 0 snapshots the current
state as events, then tails live updates; ServerStatus is pushed on
connect; an AgentSessionStatus is pushed on every transition (and only
then).
"""
import struct
import time

import pytest
from google.protobuf import json_format

import compass_schema
from compass_ui_facts import ENUMS, FACTS
from rpc_harness import COMPASS, RawStream, S, start_hub, text  # noqa: F401
from test_cluster import nodes  # noqa: F401 (fixture)

STOPPED, DISCONNECTED = 4, 6


def compass_messages():
    return compass_schema.messages("compass_ui_snapshot_double.proto", FACTS, ENUMS)


C = compass_messages()
PROTOCOLS = ["application/grpc", "application/grpc-web+proto", "application/connect+proto",
             "application/connect+json"]


class Events:
    """A SubscribeEvents stream on a raw HTTP/2 connection in one of the
    protocols, decoded with compass's schema.  Every protocol frames
    messages the same way: a flags byte and a 4-byte length."""

    def __init__(self, hub, token, content_type, since_seq=0, epoch=0):
        request = C.SubscribeEventsRequest(since_seq=since_seq, instance_epoch=epoch)
        self.json = content_type.endswith("json")
        body = (json_format.MessageToJson(request).encode() if self.json else
                request.SerializeToString())
        self.raw = RawStream(hub.public, COMPASS + "SubscribeEvents", body, token=token,
                             content_type=content_type)

    def messages(self):
        out, data, i = [], bytes(self.raw.data), 0
        while i + 5 <= len(data):
            flags, n = struct.unpack(">BI", data[i:i + 5])
            if i + 5 + n > len(data):
                break
            if flags == 0 and self.json:
                # agenthub's own fields and enum values are unknown to compass.
                out.append(json_format.Parse(data[i + 5:i + 5 + n], C.SubscribeEventsResponse(),
                                             ignore_unknown_fields=True))
            elif flags == 0:
                out.append(C.SubscribeEventsResponse.FromString(data[i + 5:i + 5 + n]))
            i += 5 + n
        return out

    def wait(self, predicate, timeout=10.0):
        got = []

        def done():
            got[:] = self.messages()
            return bool(predicate(got)) or self.raw.ended
        self.raw._pump(done, timeout)
        assert predicate(got), got
        return got

    def settle(self, seconds=0.5):
        """Everything the server sends within SECONDS."""
        deadline = time.monotonic() + seconds
        try:
            self.raw._pump(lambda: time.monotonic() > deadline, seconds + 0.2)
        except (AssertionError, OSError):
            pass
        return self.messages()

    def close(self):
        self.raw.close()


def statuses(events, session_id=None):
    return [e.agent_session_status for e in events
            if e.WhichOneof("payload") == "agent_session_status" and
            (session_id is None or e.agent_session_status.session_id == session_id)]


def two_live_sessions(h):
    """sess-1 on runner-1 (alice's; bob may view it), sess-2 on runner-2
    (carol's), both announced on the bus.  Returns the Runners and the
    state each session was announced in."""
    admin = Events(h, "t-admin", "application/grpc")
    r1, r2 = h.runner("runner-1"), h.runner("runner-2")
    r1.open_sessions(["sess-1"])
    r2.open_sessions(["sess-2"])
    got = admin.wait(lambda got: {s.session_id for s in statuses(got)} >= {"sess-1", "sess-2"})
    admin.close()
    return r1, r2, {s.session_id: s.state for s in statuses(got)}


@pytest.mark.parametrize("content_type", PROTOCOLS)
def test_since_zero_sends_server_status_then_each_visible_session_then_live(start_hub,
                                                                            content_type):
    h = start_hub()
    r1, _, announced = two_live_sessions(h)
    bob = Events(h, "t-bob", content_type)
    got = bob.wait(lambda got: len(got) >= 2)
    # ServerStatus first, READY.
    assert got[0].WhichOneof("payload") == "server_status"
    assert got[0].server_status.state == 1
    # One status for the one session bob may view; none for carol's.
    got = bob.settle()
    assert [(s.session_id, s.state) for s in statuses(got)] == [("sess-1", announced["sess-1"])]
    assert statuses(got)[0].agent_account_id == "agent-1"
    epoch = got[0].instance_epoch
    assert epoch != 0 and all(e.instance_epoch == epoch for e in got)
    # Then live, after the snapshot's seqs.
    r1.publish("sess-1", text("hello"))
    got = bob.wait(lambda got: any(e.WhichOneof("payload") == "agent_message_chunk"
                                   for e in got))
    chunk = [e for e in got if e.WhichOneof("payload") == "agent_message_chunk"][0]
    assert chunk.agent_message_chunk.text == "hello"
    seqs = [e.seq for e in got]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), seqs
    bob.close()
    # carol sees hers only; the admin sees both.
    carol = Events(h, "t-carol", content_type)
    assert [s.session_id for s in statuses(carol.settle())] == ["sess-2"]
    carol.close()
    admin = Events(h, "t-admin", content_type)
    assert sorted(s.session_id for s in statuses(admin.settle())) == ["sess-1", "sess-2"]
    admin.close()


def test_resuming_after_any_snapshot_event_misses_nothing_and_repeats_nothing(start_hub):
    h = start_hub()
    r1, r2, announced = two_live_sessions(h)
    whole = Events(h, "t-admin", "application/grpc").settle()
    snapshot = [e for e in whole if e.WhichOneof("payload") != "agent_message_chunk"]
    assert snapshot[0].WhichOneof("payload") == "server_status"
    r1.publish("sess-1", text("after"))
    for i, cut in enumerate(snapshot):
        # A client whose stream broke right after event I resumes from its
        # seq (0, before the first event the bus holds, is a new snapshot).
        resumed = Events(h, "t-admin", "application/grpc", since_seq=cut.seq,
                         epoch=cut.instance_epoch)
        if cut.seq == 0:
            got = resumed.settle()
            told = set()
        else:
            got = resumed.wait(lambda got: any(
                e.WhichOneof("payload") == "agent_message_chunk" for e in got))
            told = {(s.session_id, s.state) for e in snapshot[:i + 1] for s in statuses([e])}
        resumed.close()
        later = {(s.session_id, s.state) for s in statuses(got)}
        assert told | later == set(announced.items()), (i, told, later)
        assert not told & later, (i, told, later)
        assert not [e for e in got if e.WhichOneof("payload") == "resync_required"]


def test_a_status_is_pushed_only_on_a_transition(start_hub):
    # A Runner reports every session it hosts whenever one starts or stops,
    # as the reference Runner does: sess-1's state never changes, so
    # neither its subscribers on the bus nor its pane hear it again.
    h = start_hub()
    bus = Events(h, "t-admin", "application/grpc")
    bus.wait(lambda got: len(got) >= 1)
    pane = h.channel()
    from rpc_harness import subscribe
    frames = subscribe(h, "sess-1", token="t-alice", channel=pane)
    r1 = h.runner("runner-1")
    r1.open_sessions(["sess-1"])
    first = bus.wait(lambda got: statuses(got, "sess-1"))
    announced = statuses(first, "sess-1")[0].state
    others = []
    for _ in range(4):
        sid = h.call("StartAgentSession", S.StartAgentSessionRequest(container_name="ctr-1"),
                     token="t-alice").session_id
        others.append(sid)
        r1.report(["sess-1", sid])
        bus.wait(lambda got: statuses(got, sid))
        h.call("StopAgentSession", S.StopAgentSessionRequest(session_id=sid), token="t-alice")
        r1.report(["sess-1"])
        bus.wait(lambda got: any(s.session_id == sid and s.state == STOPPED
                                 for s in statuses(got)))
    got = bus.settle()
    assert [s.state for s in statuses(got, "sess-1")] == [announced]
    for sid in others:
        assert [s.state for s in statuses(got, sid)] == [announced, STOPPED], (sid, got)
    state_frames = [f for f in frames.items if f.state and not f.HasField("event")]
    assert [f.state for f in state_frames] == [announced], state_frames
    # A real transition is still told: the Runner drops, then comes back.
    r1.drop_sessions()
    bus.wait(lambda got: [s.state for s in statuses(got, "sess-1")] ==
             [announced, DISCONNECTED])
    r1.open_sessions(["sess-1"])
    bus.wait(lambda got: [s.state for s in statuses(got, "sess-1")] ==
             [announced, DISCONNECTED, announced])
    frames.cancel()
    bus.close()


def test_server_status_is_pushed_again_when_the_server_stops_and_starts_serving(nodes):
    # A cluster node whose session log (JetStream) is gone publishes
    # nothing: its open bus streams are told so, and told again when it
    # serves once more.  A change carries seq 0 (no bus position).
    n = nodes(count=1, replicas=1)
    h = n[0]
    bus = Events(h, "t-admin", "application/grpc")
    bus.wait(lambda got: len(got) >= 1)

    def server_states(got):
        return [e.server_status.state for e in got if e.WhichOneof("payload") == "server_status"]
    n.nats.stop_servers()
    bus.wait(lambda got: server_states(got)[-1] == 0, timeout=20)
    for s in n.nats.servers:
        s.start()
    n.nats.wait_healthy()
    got = bus.wait(lambda got: server_states(got)[-1] == 1 and len(server_states(got)) > 2,
                   timeout=40)
    states = server_states(got)
    assert states[0] == 1 and all(a != b for a, b in zip(states, states[1:])), states
    changes = [e for e in got if e.WhichOneof("payload") == "server_status"][1:]
    assert all(e.seq == 0 for e in changes), changes
    bus.close()
