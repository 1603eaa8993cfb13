"""The clients of a nemesis run, each recording everything it sent and
every acknowledgement it was given, as plain data for the checker.

- RunnerClient: one Runner publishing frames for three sessions, the way
  docs/protocol.md tells a Runner to: runner_seq contiguous from 1 in one
  run; after every error it moves to another node, Enrolls with resume and
  resends every frame after the mark that Enroll answers, keeping each
  frame until a mark is past it.  It also moves now and then on its own.
  Acknowledgements: every Enroll mark (every runner_seq at or below it),
  and every PublishEvents stream that ended OK (every frame sent on it).
- HookClient: a hook shim appending records, each carrying a unique id in
  its bytes, with AppendResourceOutput; a record is sent again (to another
  node) until it is answered OK, and every attempt carries the record's id
  as its idempotency key.  Acknowledgement: the OK, with its seqs.
- read_session(): a session read whole from one node, as the raw bytes of
  each AgentSessionFrame the server sent.

Each frame's identity is in its bytes: "NMS|<runner>|<session>|<runner_seq>|"
as an assistant text, "NMH|<shim>|<n>|" in a record's data.
"""
import random
import sys
import threading
import time
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
import harness  # noqa: E402  (the generated protos the e2e suites use)

PB = harness.protos()
F, S = PB.frames, PB.services
RUNNER = "/compass.v1.RunnerService/"
COMPASS = "/compass.v1.CompassService/"
RESOURCE = "/compass.v1.ResourceService/"
CHANNEL_OPTIONS = [("grpc.initial_reconnect_backoff_ms", 100),
                   ("grpc.min_reconnect_backoff_ms", 100),
                   ("grpc.max_reconnect_backoff_ms", 1000),
                   ("grpc.enable_retries", 0)]
CALL_TIMEOUT = 5.0
IDEMPOTENCY_FIELD = 100  # AppendResourceOutputRequest.idempotency_key


def auth(token):
    return (("authorization", "Bearer " + token),)


def now():
    return round(time.monotonic(), 3)


def error_text(err):
    try:
        return "%s: %s" % (err.code().name, err.details())
    except Exception:
        return repr(err)


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def append_request_bytes(resource_id, data, key):
    """An AppendResourceOutputRequest carrying idempotency_key KEY: set
    through the generated class when it has the field, else as the raw
    field (a server that does not know it ignores it)."""
    req = S.AppendResourceOutputRequest(resource_id=resource_id, bytes=data)
    fields = S.AppendResourceOutputRequest.DESCRIPTOR.fields_by_name
    if "idempotency_key" in fields:
        req.idempotency_key = key
        return req.SerializeToString()
    raw = key.encode()
    return (req.SerializeToString() + _varint(IDEMPOTENCY_FIELD << 3 | 2) +
            _varint(len(raw)) + raw)


class Channels:
    """One channel per node address, remade on demand."""

    def __init__(self, addrs):
        self.addrs = list(addrs)
        self.chans = {}

    def get(self, i):
        if i not in self.chans:
            self.chans[i] = grpc.insecure_channel(self.addrs[i], options=CHANNEL_OPTIONS)
        return self.chans[i]

    def close(self):
        for ch in self.chans.values():
            ch.close()
        self.chans = {}


class Client(threading.Thread):
    """A client thread: work() until stop is set, then drain() until
    everything it sent is acknowledged or the drain deadline passes."""

    def __init__(self, name, seed, addrs):
        super().__init__(name=name, daemon=True)
        self.rng = random.Random("%s/%s" % (seed, name))
        self.channels = Channels(addrs)
        self.node = self.rng.randrange(len(addrs))
        self.stopping = threading.Event()
        self.drain_deadline = None
        self.ops = 0
        self.errors = []
        self.crash = None

    def move(self):
        """To another node, at random."""
        self.node = self.rng.choice([i for i in range(len(self.channels.addrs))
                                     if i != self.node])

    def stop(self, drain_seconds):
        self.drain_deadline = time.monotonic() + drain_seconds
        self.stopping.set()

    def draining_over(self):
        return self.drain_deadline is not None and time.monotonic() > self.drain_deadline

    def error(self, what, err):
        self.errors.append({"t": now(), "node": self.node, "what": what,
                            "error": error_text(err)})

    def run(self):
        try:
            self.body()
        except Exception as e:  # a bug of the client: reported, not hidden
            import traceback
            self.crash = traceback.format_exc()
            print("nemesis: client %s crashed: %s" % (self.name, e), flush=True)
        finally:
            self.channels.close()


class RunnerClient(Client):
    RATE = 40.0  # frames a second

    def __init__(self, seed, addrs, runner_id, token, sessions):
        super().__init__(runner_id, seed, addrs)
        self.runner_id = runner_id
        self.token = token
        self.sessions = list(sessions)
        self.lock = threading.Lock()
        self.sent = {}         # runner_seq -> {"session", "marker"}
        self.max_sent = 0
        self.marks = []        # every Enroll answer
        self.stream_oks = []   # every PublishEvents stream that ended OK
        self.buffer = []       # runner_seq not yet past a mark, in order
        self.unacked_at_end = []

    def call(self, name, kind, req, resp, request, timeout):
        ch = self.channels.get(self.node)
        maker = ch.unary_unary if kind == "uu" else ch.stream_unary
        return maker(RUNNER + name, request_serializer=req.SerializeToString,
                     response_deserializer=resp.FromString)(
            request, metadata=auth(self.token), timeout=timeout)

    def frame(self, seq):
        info = self.sent[seq]
        return F.PublishEventsRequest(
            runner_seq=seq, session_id=info["session"],
            frame=F.AgentFrame(session=F.SessionFrame(typed_event=F.SessionEvent(
                assistant_text=F.SessionAssistantText(text=info["marker"],
                                                      message_id="nemesis")))))

    def new_frame(self):
        with self.lock:
            seq = self.max_sent + 1
            session = self.rng.choice(self.sessions)
            self.sent[seq] = {"session": session,
                              "marker": "NMS|%s|%s|%d|" % (self.runner_id, session, seq)}
            self.max_sent = seq
            self.buffer.append(seq)
        return seq

    def enroll(self, resume):
        self.ops += 1
        with self.lock:
            sent_before = self.max_sent
        resp = self.call("Enroll", "uu", S.EnrollRequest, S.EnrollResponse,
                         S.EnrollRequest(runner_version="nemesis", resume=resume), CALL_TIMEOUT)
        mark = resp.last_runner_seq
        with self.lock:
            self.marks.append({"t": now(), "node": self.node, "mark": mark, "resume": resume,
                               "max_sent": sent_before})
            self.buffer = [s for s in self.buffer if s > mark]
        return mark

    def stream(self, new_frames):
        """One PublishEvents stream: every frame not yet past a mark, then
        NEW_FRAMES new ones at RATE."""
        with self.lock:
            resend = list(self.buffer)
        taken = []

        def requests():
            for seq in resend:
                taken.append(seq)
                yield self.frame(seq)
            for _ in range(new_frames):
                if self.stopping.is_set():
                    return
                time.sleep(self.rng.uniform(0.5, 1.5) / self.RATE)
                seq = self.new_frame()
                taken.append(seq)
                yield self.frame(seq)
        self.ops += 1
        timeout = 4.0 + 2 * new_frames / self.RATE
        self.call("PublishEvents", "su", F.PublishEventsRequest, F.PublishEventsResponse,
                  requests(), timeout)
        self.stream_oks.append({"t": now(), "node": self.node, "first": taken[0] if taken
                                else None, "seqs": list(taken)})

    def body(self):
        first = True
        while True:
            if self.stopping.is_set():
                with self.lock:
                    done = not self.buffer
                if done or self.draining_over():
                    break
            try:
                self.enroll(resume=not first)
                first = False
                with self.lock:
                    pending = bool(self.buffer)
                if self.stopping.is_set():
                    if not pending:
                        break
                    self.stream(0)
                else:
                    self.stream(self.rng.randint(5, 40))
                if self.rng.random() < 0.15:
                    self.move()
            except grpc.RpcError as err:
                self.error("enroll" if first else "publish", err)
                self.move()
                time.sleep(self.rng.uniform(0.05, 0.3))
        with self.lock:
            self.unacked_at_end = list(self.buffer)

    def history(self):
        with self.lock:
            return {"runner": self.runner_id, "sessions": self.sessions,
                    "sent": {str(k): v for k, v in self.sent.items()},
                    "max_sent": self.max_sent, "marks": list(self.marks),
                    "stream_oks": list(self.stream_oks), "errors": list(self.errors),
                    "unacked_at_end": list(self.unacked_at_end), "ops": self.ops,
                    "crash": self.crash}


class HookClient(Client):
    def __init__(self, seed, addrs, shim_id, token, resource_id, session_id):
        super().__init__(shim_id, seed, addrs)
        self.shim_id = shim_id
        self.token = token
        self.resource_id = resource_id
        self.session_id = session_id
        self.records = []

    def append(self, raw):
        self.ops += 1
        ch = self.channels.get(self.node)
        return ch.unary_unary(RESOURCE + "AppendResourceOutput", request_serializer=None,
                              response_deserializer=S.AppendResourceOutputResponse.FromString)(
            raw, metadata=auth(self.token), timeout=CALL_TIMEOUT)

    def body(self):
        n = 0
        while not self.stopping.is_set():
            n += 1
            marker = "NMH|%s|%d|" % (self.shim_id, n)
            data = b'{"type":"prompt","data":{"id":"%s"}}\n' % marker.encode()
            rec = {"marker": marker, "n": n, "sent_t": now(), "attempts": 0, "ok": None,
                   "nodes": []}
            self.records.append(rec)
            raw = append_request_bytes(self.resource_id, data, marker)
            while rec["ok"] is None and not self.draining_over():
                rec["attempts"] += 1
                rec["nodes"].append(self.node)
                try:
                    resp = self.append(raw)
                    rec["ok"] = {"t": now(), "node": self.node, "first_seq": resp.first_seq,
                                 "last_seq": resp.last_seq}
                except grpc.RpcError as err:
                    self.error("append %s" % marker, err)
                    self.move()
                    time.sleep(self.rng.uniform(0.05, 0.2))
            if self.rng.random() < 0.1:
                self.move()
            time.sleep(self.rng.uniform(0.01, 0.05))

    def history(self):
        return {"shim": self.shim_id, "session": self.session_id, "records": list(self.records),
                "errors": list(self.errors), "ops": self.ops, "crash": self.crash}


def unary(addr, path, req_cls, resp_cls, request, token, timeout=CALL_TIMEOUT):
    with grpc.insecure_channel(addr, options=CHANNEL_OPTIONS) as ch:
        return ch.unary_unary(path, request_serializer=req_cls.SerializeToString,
                              response_deserializer=resp_cls.FromString)(
            request, metadata=auth(token), timeout=timeout)


def spawn_agent_session(addr, runner_addr):
    """A terminal (by runner-1) and an agent session under it (by agent-1);
    returns (resource_id, session_id)."""
    term = unary(runner_addr, RESOURCE + "SpawnResource", S.SpawnResourceRequest,
                 S.SpawnResourceResponse, S.SpawnResourceRequest(
                     kind=S.RESOURCE_KIND_TERMINAL, container_name="ctr-1"), "t-runner-1")
    spawned = unary(addr, RESOURCE + "SpawnResource", S.SpawnResourceRequest,
                    S.SpawnResourceResponse, S.SpawnResourceRequest(
                        kind=S.RESOURCE_KIND_AGENT_SESSION, parent=term.resource_id,
                        provider="claude", native_id="nemesis"), "t-agent-1")
    return spawned.resource_id, spawned.session_id


def last_seq(addr, session_id, token="t-admin"):
    resp = unary(addr, COMPASS + "GetAgentStatus", S.GetAgentStatusRequest,
                 S.GetAgentStatusResponse, S.GetAgentStatusRequest(session_id=session_id), token)
    return resp.statuses[0].last_seq if resp.statuses else 0


def read_session(addr, session_id, until_seq, token="t-admin", tries=4):
    """read_session_once until a read reaches UNTIL_SEQ, up to TRIES times a
    second apart: a read that could not connect, or ended early, is a fact
    about the connection, not about what the node holds.  Returns the last
    read, with the error of the last attempt."""
    got = None
    for attempt in range(tries):
        got = read_session_once(addr, session_id, until_seq, token)
        if got["error"] is None:
            return got
        time.sleep(1.0)
    return got


def drain(call, idle, stop=None):
    """Reads the raw messages of the server stream CALL until it ends, STOP
    (a function of the last message) says so, or nothing arrives for IDLE
    seconds; then cancels it.  Returns (messages, error): error is why the
    stream failed, "idle" when it went quiet first, or None."""
    got, result = [], {"error": None}
    done = threading.Event()
    last = [time.monotonic()]

    def pump():
        try:
            for raw in call:
                got.append(raw)
                last[0] = time.monotonic()
                if stop and stop(raw):
                    break
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.CANCELLED:
                result["error"] = error_text(err)
        finally:
            done.set()
    t = threading.Thread(target=pump, daemon=True)
    t.start()
    while not done.wait(0.1):
        if time.monotonic() - last[0] > idle:
            result["error"] = result["error"] or "idle"
            break
    call.cancel()
    t.join(5)
    return list(got), result["error"]


def read_session_once(addr, session_id, until_seq, token="t-admin", idle=3.0, timeout=30.0):
    """Every frame of SESSION_ID on the node at ADDR, as raw AgentSessionFrame
    bytes, read with a tail of everything: until a frame at or past
    UNTIL_SEQ arrives, nothing arrives for IDLE seconds, or TIMEOUT.
    Returns {"frames": [bytes], "error": None or why the read ended early}."""
    ch = grpc.insecure_channel(addr, options=CHANNEL_OPTIONS)
    call = ch.unary_stream(COMPASS + "SubscribeAgentSession",
                           request_serializer=S.SubscribeAgentSessionRequest.SerializeToString,
                           response_deserializer=None)(
        S.SubscribeAgentSessionRequest(session_id=session_id, tail=1 << 30, agenthub_events=True),
        metadata=auth(token), timeout=timeout)
    frames, error = drain(call, idle,
                          stop=lambda raw: F.AgentSessionFrame.FromString(raw).seq >= until_seq)
    ch.close()
    if error == "idle":
        error = "idle for %.0f s before seq %d" % (idle, until_seq)
    return {"frames": frames, "error": error}


def read_bus(addr, token="t-admin", idle=2.0, timeout=30.0):
    """This node's whole bus copy, as raw SubscribeEventsResponse bytes:
    the instance epoch from the resync a seq no bus reaches gets, then
    since_seq 1 until nothing arrives for IDLE seconds or TIMEOUT.
    Returns {"events": [bytes], "error": None or why the read failed}."""
    ch = grpc.insecure_channel(addr, options=CHANNEL_OPTIONS)
    events, error = [], None
    try:
        subscribe = ch.unary_stream(COMPASS + "SubscribeEvents",
                                    request_serializer=S.SubscribeEventsRequest.SerializeToString,
                                    response_deserializer=None)
        probe = subscribe(S.SubscribeEventsRequest(since_seq=(1 << 64) - 1),
                          metadata=auth(token), timeout=CALL_TIMEOUT)
        epoch = S.SubscribeEventsResponse.FromString(next(iter(probe))).instance_epoch
        probe.cancel()
        call = subscribe(S.SubscribeEventsRequest(since_seq=1, instance_epoch=epoch,
                                                  agenthub_payloads=True),
                         metadata=auth(token), timeout=timeout)
        events, error = drain(call, idle)
        if error == "idle":
            error = None  # the whole copy was read: nothing more came
    except (grpc.RpcError, StopIteration) as err:
        error = error_text(err) if isinstance(err, grpc.RpcError) else "no answer"
    finally:
        ch.close()
    return {"events": events, "error": error}
