"""Shared harness for the RPC-surface suites (tests/e2e/test_rpc_*.py).

- F, S: the compass.v1 python modules (frames, services) of harness.protos().
- Hub: harness.Server with a world imported through `agenthub admin import`
  (the demo world by default), a call() helper and Runner doubles; stop()
  SIGTERMs it, requires exit 0 within 5 s with no sanitizer report, and
  that the log shows no token, SQL text or pointer.
- Runner: a Runner test double on grpcio: Enroll (resuming its run), the
  Sessions control stream (commands answered with the result of their kind,
  or a RunnerError), PublishEvents with its own runner_seq, and a real batch
  window.  command_session() and command_text() read a command.
- Pane / Bus: background readers of SubscribeAgentSession / SubscribeEvents.
- raw_unary(): one unary call over python3-h2, for exact header blocks.
"""
import json
import queue
import socket
import struct
import threading
import time

import grpc

import harness
from harness import BUILD, ROOT, demo_world, parse_metrics, wait_for, world_with  # noqa: F401

STOP_TIMEOUT = harness.STOP_TIMEOUT


def gen():
    """(frames_pb2, services_pb2) of harness.protos()."""
    p = harness.protos()
    return p.frames, p.services


F, S = gen()

# Methods: name -> (kind, request class, response class)
COMPASS = "/compass.v1.CompassService/"
RUNNER = "/compass.v1.RunnerService/"
RESOURCE = "/compass.v1.ResourceService/"
METHODS = {
    COMPASS + "SubscribeAgentSession": ("us", S.SubscribeAgentSessionRequest, F.AgentSessionFrame),
    COMPASS + "SkipBatchWindow": ("uu", S.SkipBatchWindowRequest, S.SkipBatchWindowResponse),
    COMPASS + "SubscribeEvents": ("us", S.SubscribeEventsRequest, S.SubscribeEventsResponse),
    COMPASS + "StartAgentSession": ("uu", S.StartAgentSessionRequest,
                                    S.StartAgentSessionResponse),
    COMPASS + "StopAgentSession": ("uu", S.StopAgentSessionRequest, S.StopAgentSessionResponse),
    COMPASS + "SendAgentMessage": ("uu", S.SendAgentMessageRequest, S.SendAgentMessageResponse),
    COMPASS + "GetAgentStatus": ("uu", S.GetAgentStatusRequest, S.GetAgentStatusResponse),
    COMPASS + "GetServerInfo": ("uu", S.GetServerInfoRequest, S.GetServerInfoResponse),
    COMPASS + "WhoAmI": ("uu", S.WhoAmIRequest, S.WhoAmIResponse),
    COMPASS + "IssueToken": ("uu", S.IssueTokenRequest, S.IssueTokenResponse),
    COMPASS + "RevokeToken": ("uu", S.RevokeTokenRequest, S.RevokeTokenResponse),
    RUNNER + "Enroll": ("uu", S.EnrollRequest, S.EnrollResponse),
    RUNNER + "Sessions": ("ss", S.SessionsRequest, S.SessionsResponse),
    RUNNER + "PublishEvents": ("su", F.PublishEventsRequest, F.PublishEventsResponse),
    RUNNER + "UploadSessionBlob": ("uu", S.UploadSessionBlobRequest, S.UploadSessionBlobResponse),
    RUNNER + "FetchSessionBlob": ("uu", S.FetchSessionBlobRequest, S.FetchSessionBlobResponse),
    RUNNER + "ReportEvidence": ("uu", S.ReportEvidenceRequest, S.ReportEvidenceResponse),
    RESOURCE + "SpawnResource": ("uu", S.SpawnResourceRequest, S.SpawnResourceResponse),
    RESOURCE + "AppendResourceOutput": ("uu", S.AppendResourceOutputRequest,
                                        S.AppendResourceOutputResponse),
    RESOURCE + "CloseResource": ("uu", S.CloseResourceRequest, S.CloseResourceResponse),
    RESOURCE + "ReportAgentState": ("uu", S.ReportAgentStateRequest, S.ReportAgentStateResponse),
}

ST = F.AgentSessionState  # enum wrapper: ST.Value("AGENT_SESSION_STATE_WORKING")


def state(name):
    return F.AgentSessionState.Value("AGENT_SESSION_STATE_" + name)


def method(channel, name):
    """A grpcio multi-callable for NAME (short names resolve across services)."""
    if not name.startswith("/"):
        full = [m for m in METHODS if m.endswith("/" + name)]
        assert len(full) == 1, name
        name = full[0]
    kind, req, resp = METHODS[name]
    maker = {"uu": channel.unary_unary, "us": channel.unary_stream,
             "su": channel.stream_unary, "ss": channel.stream_stream}[kind]
    return maker(name, request_serializer=req.SerializeToString,
                 response_deserializer=resp.FromString)


def command_session(command):
    """The session a SessionsResponse command is for."""
    kind = command.WhichOneof("command")
    if kind == "start":
        return command.session_id
    if kind == "deliver_control":
        return command.deliver_control.session_id
    return getattr(command, kind).session_id


def command_text(command):
    """The text a deliver_control carries (a prompt)."""
    return command.deliver_control.op.prompt.input


def refusal(request_id, message, code=None):
    """A SessionsRequest refusing REQUEST_ID (RunnerError, INTERNAL by default)."""
    return S.SessionsRequest(request_id=request_id, error=S.RunnerError(
        code=S.RUNNER_ERROR_CODE_INTERNAL if code is None else code, message=message))


def auth(token):
    return (("authorization", "Bearer " + token),) if token else ()


def fail(fn, *args, **kwargs):
    """Runs a call that must fail; returns the grpc.RpcError (also a Call)."""
    try:
        result = fn(*args, **kwargs)
        if hasattr(result, "__next__"):  # a server stream: drain it
            result = list(result)
    except grpc.RpcError as err:
        return err
    raise AssertionError("call succeeded: %r" % (result,))


def error_view(err):
    """Everything a client sees of a failed call, for identity checks."""
    return (err.code(), err.details(), tuple(err.initial_metadata() or ()),
            tuple(err.trailing_metadata() or ()))


def stream_error(iterator):
    """Drains a server stream that must fail before any message."""
    try:
        items = list(iterator)
    except grpc.RpcError as err:
        return err
    raise AssertionError("stream ended OK with %d messages" % len(items))


# ---------------------------------------------------------------------------
# The server

class Hub(harness.Server):
    """harness.Server on a provisioned store.  runner=False drops the Runner
    door; metrics=False the metrics door; blob_dir=True adds a --blob-dir;
    db= reuses another server's (already provisioned) store; other keywords
    go to harness.Server (flags, env, hold_stderr, ...)."""

    def __init__(self, world=None, runner=True, metrics=True, db=None, **kwargs):
        self.runners = []
        doors = ("public",) + (("runner",) if runner else ()) + (("metrics",) if metrics else ())
        if db is None and world is None:
            world = True
        kwargs.setdefault("check_log", True)
        super().__init__(world=world, doors=doors, db=db, **kwargs)

    def call(self, name, request, token=None, door=None, timeout=10, **kwargs):
        """A unary call; door defaults to runner for RunnerService."""
        if door is None:
            door = "runner" if RUNNER in name or name in (
                "Enroll", "UploadSessionBlob", "FetchSessionBlob", "ReportEvidence",
                "PublishEvents") else "public"
        if not hasattr(self, "_ch"):
            self._ch = {}
        if door not in self._ch:
            self._ch[door] = self.channel(door)
        return method(self._ch[door], name)(request, metadata=auth(token), timeout=timeout,
                                             **kwargs)

    def runner(self, runner_id="runner-1", token=None, **kwargs):
        r = Runner(self, runner_id, token or "t-" + runner_id, **kwargs)
        self.runners.append(r)
        return r

    def stop(self):
        """Closes the Runner doubles, then harness.Server.stop()."""
        if not self.stopped:
            for r in self.runners:
                r.close()
        return super().stop()


def hub_fixture(**kwargs):
    """Context manager that starts and stops a Hub."""
    class _Ctx:
        def __enter__(self):
            self.hub = Hub(**kwargs)
            return self.hub

        def __exit__(self, *exc):
            self.hub.stop()
            return False
    return _Ctx()


# ---------------------------------------------------------------------------
# The Runner test double

class RequestQueue:
    """An iterator for a grpcio request stream fed from another thread."""
    _END = object()

    def __init__(self):
        self.q = queue.Queue()

    def put(self, item):
        self.q.put(item)

    def close(self):
        self.q.put(self._END)

    def __iter__(self):
        return self

    def __next__(self):
        item = self.q.get()
        if item is self._END:
            raise StopIteration
        return item


class Runner:
    """A Runner on grpcio.  auto_ack answers every command (ack_ok decides
    between its result and a RunnerError, ack_delay waits first;
    auto_ack=False leaves commands unanswered).  batch_ms > 0 runs a batch
    window for `deliver_control`."""

    def __init__(self, hub, runner_id, token, auto_ack=True, ack_ok=True, ack_delay=0.0,
                 batch_ms=0):
        self.hub = hub
        self.id = runner_id
        self.token = token
        self.channel = grpc.insecure_channel(hub.runner_addr)
        self.seq = 0
        self.commands = []  # SessionsResponse received, in order
        self.command_event = threading.Condition()
        self.auto_ack = auto_ack
        self.ack_ok = ack_ok
        self.ack_delay = ack_delay
        self.batch_ms = batch_ms
        self.batches = {}  # session_id -> [count, timer]
        self.fired = []  # (session_id, items, why)
        self.lock = threading.RLock()
        self.sessions_call = None
        self.requests = None
        self.reader = None
        self.stream_error = None

    def call(self, name, request, token=None, timeout=10):
        return method(self.channel, name)(request, metadata=auth(token or self.token),
                                           timeout=timeout)

    def enroll(self, version="test-double 1", resume=True):
        """Enroll; RESUME continues the run the server knows (runner_seq goes
        on after last_runner_seq), else a new run starts at 1."""
        response = self.call("Enroll", S.EnrollRequest(runner_version=version, resume=resume))
        self.seq = max(self.seq, response.last_runner_seq) if resume else 0
        return response

    # --- Sessions control stream
    def open_sessions(self, live_sessions=None, wait=True):
        """Opens the Sessions stream; with WAIT, returns once the server has
        registered it (so a command sent next reaches it)."""
        older = [r for r in self.hub.runners
                 if r is not self and r.id == self.id and r.sessions_call is not None and
                 r.reader is not None and r.reader.is_alive()]
        baseline = self.hub.metric("agenthub_grpc_calls_open") if wait and not older else 0
        requests = RequestQueue()
        call = method(self.channel, "Sessions")(requests, metadata=auth(self.token))
        self.requests = requests
        self.sessions_call = call
        if live_sessions is not None:
            requests.put(S.SessionsRequest(live_sessions=list(live_sessions)))
        self.reader = threading.Thread(target=self._read_commands, args=(call, requests),
                                       daemon=True)
        self.reader.start()
        if wait and older:  # the server replaces (ends) the older stream
            for r in older:
                r.reader.join(10)
        elif wait:
            wait_for(lambda: self.hub.metric("agenthub_grpc_calls_open") > baseline,
                     what="the Sessions stream to open")
        return call

    def _read_commands(self, call, requests):
        try:
            for command in call:
                with self.command_event:
                    self.commands.append(command)
                    self.command_event.notify_all()
                self._handle(command, requests)
        except grpc.RpcError as err:
            self.stream_error = err
        finally:
            with self.command_event:
                self.command_event.notify_all()

    def _handle(self, command, requests):
        kind = command.WhichOneof("command")
        sid = command_session(command)
        if kind == "deliver_control" and self.batch_ms > 0:
            self._batch_add(sid)
        elif kind == "start_now" and self.batch_ms > 0:
            self._batch_fire(sid, "start_now")
        elif kind == "stop" and self.batch_ms > 0:
            self._batch_close(sid)
        if not self.auto_ack:
            return

        def ack():
            if self.ack_delay:
                time.sleep(self.ack_delay)
            requests.put(self.answer(command) if self.ack_ok else
                         refusal(command.request_id, "refused by test"))
        if self.ack_delay:
            threading.Thread(target=ack, daemon=True).start()
        else:
            ack()

    def wait_command(self, kind, count=1, timeout=10.0):
        deadline = time.monotonic() + timeout
        with self.command_event:
            while True:
                found = [c for c in self.commands if c.WhichOneof("command") == kind]
                if len(found) >= count:
                    return found[count - 1]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("no %s command (have %r)" % (kind, self.commands))
                self.command_event.wait(left)

    def report(self, live_sessions):
        self.requests.put(S.SessionsRequest(live_sessions=list(live_sessions)))

    @staticmethod
    def answer(command):
        """The result a Runner that carried COMMAND out sends."""
        kind = command.WhichOneof("command")
        if kind == "start":
            return S.SessionsRequest(request_id=command.request_id, start=S.StartAgentSessionResponse(
                session_id=command.session_id))
        if kind == "stop":
            return S.SessionsRequest(request_id=command.request_id,
                                     stop=S.StopAgentSessionResponse())
        if kind == "status":
            return S.SessionsRequest(request_id=command.request_id,
                                     status=S.GetAgentStatusResponse())
        return S.SessionsRequest(request_id=command.request_id)

    def ack(self, request_id, ok=True, error=""):
        """Answers REQUEST_ID: carried out, or (not OK) refused with ERROR."""
        self.requests.put(S.SessionsRequest(request_id=request_id) if ok else
                          refusal(request_id, error))

    def drop_sessions(self):
        """Cancels the Sessions stream (the Runner's connection drops)."""
        if self.sessions_call is not None:
            self.sessions_call.cancel()
            self.requests.close()
            self.reader.join(5)
            self.sessions_call = None

    # --- the batch window (the agent's inbound idle batch)
    def _batch_add(self, sid):
        with self.lock:
            entry = self.batches.get(sid)
            if entry:
                entry[1].cancel()
                count = entry[0] + 1
            else:
                count = 1
            fires_at = int(time.time() * 1000) + self.batch_ms
            timer = threading.Timer(self.batch_ms / 1000.0, self._batch_fire, (sid, "timer"))
            timer.daemon = True
            self.batches[sid] = [count, timer]
            self.publish(sid, batch_pending(count, fires_at))
            timer.start()

    def _batch_fire(self, sid, why):
        with self.lock:
            entry = self.batches.pop(sid, None)
            if not entry:
                return  # no open window: start_now does nothing
            entry[1].cancel()
            self.fired.append((sid, entry[0], why))
            self.publish(sid, batch_pending(0, 0))

    def _batch_close(self, sid):
        """The agent ends: its terminal status closes the window, no count 0."""
        with self.lock:
            entry = self.batches.pop(sid, None)
            if entry:
                entry[1].cancel()
                self.fired.append((sid, entry[0], "closed"))

    # --- PublishEvents
    def next_seq(self):
        with self.lock:
            self.seq += 1
            return self.seq

    def request(self, session_id, frame, runner_seq=None):
        return F.PublishEventsRequest(
            runner_seq=self.next_seq() if runner_seq is None else runner_seq,
            session_id=session_id, frame=frame)

    def publish(self, session_id, *frames):
        """Publishes FRAMES in one PublishEvents call; returns when the server
        has taken them all (the call's response)."""
        with self.lock:
            requests = [self.request(session_id, f) for f in frames]
        return self.publish_raw(requests)

    def publish_raw(self, requests, token=None):
        return method(self.channel, "PublishEvents")(iter(requests),
                                                      metadata=auth(self.token if token is None
                                                                    else token),
                                                      timeout=30)

    def close(self):
        with self.lock:
            for entry in self.batches.values():
                entry[1].cancel()
            self.batches.clear()
        self.drop_sessions()
        self.channel.close()


# ---------------------------------------------------------------------------
# Frames

def event_frame(**event):
    """AgentFrame{session{typed_event{...}}}; keys as in SessionEvent."""
    return F.AgentFrame(session=F.SessionFrame(typed_event=F.SessionEvent(**event)))


def text(t, message_id="m1"):
    return event_frame(assistant_text=F.SessionAssistantText(text=t, message_id=message_id))


def thinking(t):
    return event_frame(thinking=F.SessionThinking(text=t, message_id="t1"))


def batch_pending(count, fires_at):
    return event_frame(batch_pending=F.SessionBatchPending(count=count,
                                                           fires_at_unix_ms=fires_at))


def state_frame(name):
    return F.AgentFrame(session=F.SessionFrame(state=state(name)))


def record(type_, data=None):
    return event_frame(record=F.AgentRecord(type=type_, data_json=json.dumps(data or {})))


# ---------------------------------------------------------------------------
# Subscribers

class Reader:
    """Reads a server stream on a thread; frames land in .items."""

    def __init__(self, call, keep=None):
        """KEEP(item) false: ITEM is read and left out of .items."""
        self.call = call
        self.keep = keep
        self.items = []
        self.error = None
        self.done = threading.Event()
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            for item in self.call:
                if self.keep is not None and not self.keep(item):
                    continue
                with self.cond:
                    self.items.append(item)
                    self.cond.notify_all()
        except grpc.RpcError as err:
            self.error = err
        finally:
            self.done.set()
            with self.cond:
                self.cond.notify_all()

    def wait(self, predicate, timeout=10.0, what="items"):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                got = predicate(self.items)
                if got:
                    return got
                left = deadline - time.monotonic()
                if left <= 0 or (self.done.is_set() and not predicate(self.items)):
                    if self.done.is_set() and left > 0:
                        raise AssertionError("stream ended (%s) before %s; have %r" % (
                            self.error, what, self.items[-5:]))
                    raise AssertionError("timed out waiting for %s; have %r" % (
                        what, self.items[-5:]))
                self.cond.wait(min(left, 0.2))

    def wait_count(self, n, timeout=10.0):
        self.wait(lambda items: len(items) >= n, timeout, "%d items" % n)
        return list(self.items)

    def finish(self, timeout=10.0):
        """Waits for the end; returns (code, trailing metadata dict)."""
        assert self.done.wait(timeout), "stream did not end"
        if self.error is not None:
            return self.error.code(), dict(self.error.trailing_metadata() or ())
        return self.call.code(), dict(self.call.trailing_metadata() or ())

    def cancel(self):
        self.call.cancel()
        self.done.wait(5)


def subscribe(hub, session_id, token="t-alice", since_seq=0, tail=0, channel=None,
              agenthub_events=True):
    """An open SubscribeAgentSession (response headers already received), as
    agenthub's own clients ask for it: with agenthub's events (records,
    batch windows) unless AGENTHUB_EVENTS is False."""
    ch = channel or hub.channel()
    call = method(ch, "SubscribeAgentSession")(
        S.SubscribeAgentSessionRequest(session_id=session_id, since_seq=since_seq, tail=tail,
                                       agenthub_events=agenthub_events),
        metadata=auth(token))
    call.initial_metadata()  # blocks until the server has subscribed us
    return Reader(call)


def subscribe_events(hub, token="t-admin", since_seq=0, epoch=0, channel=None,
                     agenthub_payloads=True, server_status=False):
    """An open SubscribeEvents, as agenthub's own clients ask for it: with
    agenthub's payloads (records, batch windows) unless AGENTHUB_PAYLOADS is
    False.  With since_seq 0 the server starts with a snapshot: ServerStatus,
    then the latest status of each session the caller may view (none on a
    hub where no session was announced yet).  Unless SERVER_STATUS, the
    ServerStatus is left out of .items."""
    ch = channel or hub.channel()
    call = method(ch, "SubscribeEvents")(
        S.SubscribeEventsRequest(since_seq=since_seq, instance_epoch=epoch,
                                 agenthub_payloads=agenthub_payloads), metadata=auth(token))
    call.initial_metadata()
    return Reader(call, None if server_status else
                  lambda e: e.WhichOneof("payload") != "server_status")


# ---------------------------------------------------------------------------
# One unary call on a raw HTTP/2 connection (python3-h2), for exact headers

def raw_unary(address, path, body, token=None, timeout=10.0):
    """Returns (response header list, data bytes, trailer list), each header
    list as [(name, value)] byte pairs in wire order."""
    import h2.config
    import h2.connection
    import h2.events

    host, port = address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=timeout)
    try:
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True,
                                                                    header_encoding=None))
        conn.initiate_connection()
        headers = [(b":method", b"POST"), (b":scheme", b"http"), (b":path", path.encode()),
                   (b":authority", address.encode()), (b"content-type", b"application/grpc"),
                   (b"te", b"trailers")]
        if token:
            headers.append((b"authorization", b"Bearer " + token.encode()))
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, headers)
        conn.send_data(sid, struct.pack(">BI", 0, len(body)) + body, end_stream=True)
        sock.sendall(conn.data_to_send())
        blocks, data, ended = [], bytearray(), False
        deadline = time.monotonic() + timeout
        while not ended and time.monotonic() < deadline:
            chunk = sock.recv(65536)
            if not chunk:
                break
            for ev in conn.receive_data(chunk):
                if isinstance(ev, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
                    blocks.append([(bytes(k), bytes(v)) for k, v in ev.headers])
                elif isinstance(ev, h2.events.DataReceived):
                    data += ev.data
                    conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, (h2.events.StreamEnded, h2.events.StreamReset)):
                    ended = True
            out = conn.data_to_send()
            if out:
                sock.sendall(out)
        assert ended, "raw call did not end"
        head = blocks[0] if blocks else []
        trailers = blocks[1] if len(blocks) > 1 else []
        return head, bytes(data), trailers
    finally:
        sock.close()


def calls_key(name, status, door="public"):
    path = name if name.startswith("/") else [m for m in METHODS if m.endswith("/" + name)][0]
    return 'agenthub_grpc_calls_total{door="%s",method="%s",status="%s"}' % (door, path, status)


# ---------------------------------------------------------------------------
# pytest fixtures (import them into a test module to use them)

import pytest  # noqa: E402


@pytest.fixture
def hub():
    """The demo world on a server with both doors, metrics and blob storage."""
    h = Hub(blob_dir=True)
    yield h
    h.stop()


@pytest.fixture
def start_hub():
    """start_hub(**Hub kwargs) -> Hub; every one is stopped (exit 0) at teardown."""
    started = []

    def start(**kwargs):
        h = Hub(**kwargs)
        started.append(h)
        return h
    yield start
    errors = []
    for h in started:
        try:
            h.stop()
        except AssertionError as err:
            errors.append(str(err))
    assert not errors, "\n".join(errors)


class RawStream:
    """A server-streaming call on its own raw HTTP/2 connection (python3-h2)
    whose reader can stop reading: no WINDOW_UPDATE, nothing taken off the
    socket, so the server's flow-control window runs dry."""

    def __init__(self, address, path, body, token=None, timeout=10.0,
                 content_type="application/grpc"):
        import h2.config
        import h2.connection
        self.h2events = __import__("h2.events").events
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(
            client_side=True, header_encoding=None))
        self.conn.initiate_connection()
        headers = [(b":method", b"POST"), (b":scheme", b"http"), (b":path", path.encode()),
                   (b":authority", address.encode()), (b"content-type", content_type.encode()),
                   (b"te", b"trailers")]
        if token:
            headers.append((b"authorization", b"Bearer " + token.encode()))
        self.sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(self.sid, headers)
        self.conn.send_data(self.sid, struct.pack(">BI", 0, len(body)) + body, end_stream=True)
        self.sock.sendall(self.conn.data_to_send())
        self.headers = None
        self.trailers = None
        self.data = bytearray()
        self.ended = False
        self.reset = None
        self._pump(lambda: self.headers is not None or self.ended, timeout)

    def _pump(self, until, timeout):
        deadline = time.monotonic() + timeout
        while not until():
            if time.monotonic() > deadline:
                raise AssertionError("raw stream: timed out")
            self.sock.settimeout(max(0.05, deadline - time.monotonic()))
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                self.ended = True
                break
            for ev in self.conn.receive_data(chunk):
                if isinstance(ev, self.h2events.ResponseReceived):
                    self.headers = [(bytes(k), bytes(v)) for k, v in ev.headers]
                elif isinstance(ev, self.h2events.TrailersReceived):
                    self.trailers = [(bytes(k), bytes(v)) for k, v in ev.headers]
                elif isinstance(ev, self.h2events.DataReceived):
                    self.data += ev.data
                    self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, self.h2events.StreamEnded):
                    self.ended = True
                elif isinstance(ev, self.h2events.StreamReset):
                    self.reset = ev.error_code
                    self.ended = True
            out = self.conn.data_to_send()
            if out:
                self.sock.sendall(out)

    def read_to_end(self, timeout=30.0):
        """Resumes reading; returns (messages as bytes, trailers dict)."""
        self._pump(lambda: self.ended, timeout)
        messages, i = [], 0
        while i + 5 <= len(self.data):
            _, n = struct.unpack(">BI", self.data[i:i + 5])
            messages.append(bytes(self.data[i + 5:i + 5 + n]))
            i += 5 + n
        assert i == len(self.data), "partial gRPC message"
        return messages, {k.decode(): v.decode() for k, v in (self.trailers or [])}

    def close(self):
        self.sock.close()
