"""Hostile clients at the transport: HTTP/2 and gRPC bounds that the layers
themselves enforce (send queues, request bytes held, unauthenticated bodies,
idle and half-open connections, running out of file descriptors, TLS).

Every test asserts that the bad client is refused or cut, and that a good
client on a connection of its own is served within 100 ms meanwhile.  Memory
tests run the attack at 1x and 4x and assert that the server's growth does
not follow the attack."""
import contextlib
import os
import resource
import socket
import ssl
import struct
import time

import grpc
import pytest

import rawh2
from helpers import (BIDI, CHECK, CLIENT_STREAM, SERVER_STREAM, UNARY, GoodClient, Health,
                     read_bytes, vm_rss_kib)
from hyperframe.frame import (DataFrame, HeadersFrame, PingFrame, SettingsFrame,
                              WindowUpdateFrame)
from rawh2 import grpc_frame

MiB = 1 << 20
REFLECTION = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
GET_STATUS = "/compass.v1.CompassService/GetAgentStatus"
PUBLISH = "/compass.v1.RunnerService/PublishEvents"
UNAUTHENTICATED = 16
RESOURCE_EXHAUSTED = 8
CANCELLED = 1


def varint(n):
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def reflection_request(symbol):
    """ServerReflectionRequest{file_containing_symbol: SYMBOL} (field 4)."""
    name = symbol.encode()
    return grpc_frame(b"\x22" + varint(len(name)) + name)


def cpu_seconds(pid):
    """User + system CPU time of process PID (from /proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ASan keeps freed memory in a quarantine (256 MiB by default) before reusing
# it, so RSS would grow with every byte that merely passed through.  Memory
# tests run the server with a small quarantine to see what it retains.
MEASURED = {"ASAN_OPTIONS": "detect_leaks=1:quarantine_size_mb=4"}


def start_measured(start_server, *flags):
    return start_server(*flags, env=MEASURED)


def metric(server, key):
    return server.metrics().get(key, 0)


class FlowH2(rawh2.RawH2):
    """A raw client that plays by HTTP/2 flow control when it sends DATA, as
    a careful attacker would: it never gets cut for a window violation, so
    what bounds it is only what the server grants."""

    def __init__(self, sock):
        super().__init__(sock)
        self.conn_credit = 65535
        self.stream_credit = {}

    def _on_frame(self, frame, raw_length):
        if isinstance(frame, WindowUpdateFrame):
            if frame.stream_id == 0:
                self.conn_credit += frame.window_increment
            else:
                self.stream_credit[frame.stream_id] = (self.stream_credit.get(frame.stream_id, 0)
                                                       + frame.window_increment)
            return
        super()._on_frame(frame, raw_length)

    def initial_window(self):
        return self.server_settings.get(SettingsFrame.INITIAL_WINDOW_SIZE, 65535)

    def window(self, sid):
        stream = self.stream_credit.get(sid, 0) + self.initial_window()
        return min(self.conn_credit, stream)

    def send_flow(self, sid, data, stall=0.5):
        """Sends DATA within the windows; returns the bytes sent once all are
        out or no credit came for STALL seconds."""
        sent = 0
        waited_since = None
        while sent < len(data) and not self.eof:
            room = min(self.window(sid), 16384, len(data) - sent)
            if room <= 0:
                if waited_since is None:
                    waited_since = time.monotonic()
                elif time.monotonic() - waited_since > stall:
                    break
                self.pump(0.02)
                continue
            waited_since = None
            self.send_frame(DataFrame(sid, data=data[sent:sent + room]))
            self.conn_credit -= room
            self.stream_credit[sid] = self.stream_credit.get(sid, 0) - room
            sent += room
            self.pump(0)
        return sent


def flow_connect(server, door="public"):
    conn = server.track(FlowH2.connect(server.addresses[door]))
    assert conn.wait(lambda: conn.settings_frames >= 1)
    return conn


@contextlib.contextmanager
def open_files_limit(n):
    """Lowers this process's soft RLIMIT_NOFILE while a server is started, so
    the server inherits it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (n, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


# --- Send queues are bounded by the gRPC layer -----------------------------------

def reflection_flood(server, pb, count):
    """COUNT small reflection requests on one stream of a client whose stream
    window is zero: it never reads a reply.  Returns (RSS growth in KiB,
    bytes the server let in, bytes the attack had)."""
    good = server.track(GoodClient(server.public, pb))
    raw = server.track(FlowH2.connect(server.public,
                                      settings={SettingsFrame.INITIAL_WINDOW_SIZE: 0}))
    raw.auto_window_update = False
    assert raw.wait(lambda: raw.settings_frames >= 1)
    before = vm_rss_kib(server.pid)
    sid = raw.request(REFLECTION, end_stream=False)
    attack = reflection_request("compass.v1.CompassService") * count
    sent = raw.send_flow(sid, attack, stall=1.0)
    good.assert_served()
    raw.pump(0.2)
    grown = vm_rss_kib(server.pid) - before
    stream = raw.streams[sid]
    assert not stream.closed and raw.goaway is None  # held back, not cut
    assert len(stream.data) == 0  # the client never granted a byte of window
    return grown, sent, len(attack)


def test_reflection_replies_to_a_client_that_never_reads_stay_bounded(start_server, pb):
    """60,000 small file_containing_symbol requests on one unauthenticated
    stream whose window is zero: replies pile up only to the call's send
    bound, then the layer stops reading requests and flow control holds
    the client back.  Growth does not follow the attack's size."""
    results = {}
    for scale, count in (("1x", 15000), ("4x", 60000)):
        server = start_measured(start_server)
        grown, sent, total = reflection_flood(server, pb, count)
        results[scale] = grown
        assert server.wait_metric('agenthub_grpc_recv_pauses_total{door="public"}',
                                  lambda v: v >= 1)
        print("%s: %d requests (%d bytes), server let in %d bytes, grew %d KiB"
              % (scale, count, total, sent, grown))
        if scale == "4x":
            assert sent < total  # flow control stopped it part way
        server.stop()
    assert results["4x"] < results["1x"] + 24 * 1024, results
    assert results["4x"] < 64 * 1024, results


def test_a_handler_pushing_past_the_cap_is_ended_resource_exhausted(start_server, pb):
    """A handler that keeps queueing for a client that does not read (the
    test service's bidi push: 40 x 256 KiB) is cut at 4x the 1 MiB send
    bound, and the client learns RESOURCE_EXHAUSTED once it reads."""
    server = start_measured(start_server)
    good = server.track(GoodClient(server.public, pb))
    raw = server.raw(settings={SettingsFrame.INITIAL_WINDOW_SIZE: 0})
    raw.auto_window_update = False
    assert raw.wait(lambda: raw.settings_frames >= 1)
    before = vm_rss_kib(server.pid)
    push = pb.echo.EchoRequest(response_count=40, response_size=256 * 1024)
    sid = raw.request(BIDI, body=grpc_frame(push.SerializeToString()), end_stream=False)
    server.wait_metric('agenthub_grpc_send_queue_cuts_total{door="public"}', lambda v: v == 1)
    good.assert_served()
    grown = vm_rss_kib(server.pid) - before
    assert grown < 32 * 1024, "grew %d KiB" % grown
    # Reading now: the partial message, if any, then the status.
    raw.auto_window_update = True
    raw.send_frame(WindowUpdateFrame(sid, window_increment=8 * MiB))
    stream = raw.wait_closed(sid)
    assert stream.grpc_status == RESOURCE_EXHAUSTED, stream.trailers
    assert "not reading" in stream.trailers.get("grpc-message", "")
    assert len(stream.messages()) < 16  # the queued rest was dropped
    assert raw.wait_reset(sid) == rawh2.CANCEL


def test_pull_producers_and_well_behaved_streams_still_pass_the_bound(server, pb):
    """A pull-style producer (the test service's server stream, 50 x 100 kB)
    and a bidi echo of 300 messages that each reply: neither is cut, the
    bidi one is paused and resumed as the client reads."""
    good = server.track(GoodClient(server.public, pb))
    raw = flow_connect(server)
    sid = raw.request(SERVER_STREAM, body=grpc_frame(
        pb.echo.EchoRequest(response_count=50, response_size=100000).SerializeToString()))
    assert raw.wait_closed(sid, timeout=30).grpc_status == 0
    assert len(raw.streams[sid].messages()) == 50
    body = b"".join(grpc_frame(pb.echo.EchoRequest(payload=b"x" * 20000).SerializeToString())
                    for _ in range(300))
    sid = raw.request(BIDI, end_stream=False)
    assert raw.send_flow(sid, body, stall=5.0) == len(body)
    raw.send_data(sid, b"", end_stream=True)
    stream = raw.wait_closed(sid, timeout=30)
    assert stream.grpc_status == 0, stream.trailers
    replies = [pb.echo.EchoResponse.FromString(m) for _, m in stream.messages()]
    assert [r.index for r in replies] == list(range(300))
    good.assert_served()
    assert metric(server, 'agenthub_grpc_send_queue_cuts_total{door="public"}') == 0


# --- Nothing is buffered for a caller that has not authenticated --------------

def unauthenticated_bodies(server, pb, connections, streams, body_len):
    """Opens STREAMS calls per connection and sends each a BODY_LEN message
    at once, without waiting for an answer.  Returns (RSS growth in KiB,
    calls refused, bytes sent)."""
    good = server.track(GoodClient(server.public, pb))
    before = vm_rss_kib(server.pid)
    body = grpc_frame(b"\x0a" + varint(body_len) + b"s" * body_len)  # session_id = "sss..."
    conns = [flow_connect(server) for _ in range(connections)]
    refused = sent = 0
    for conn in conns:
        sids = []
        for _ in range(streams):
            sids.append(conn.request(GET_STATUS, end_stream=False))
            sent += conn.send_flow(sids[-1], body, stall=0.3)
        for sid in sids:
            stream = conn.wait_closed(sid)
            assert stream.trailers_only and stream.grpc_status == UNAUTHENTICATED, stream.events
            assert stream.trailers.get("grpc-message") == "missing or invalid credentials"
            assert conn.wait_reset(sid) is not None  # and told to stop sending
            refused += 1
    good.assert_served()
    grown = vm_rss_kib(server.pid) - before
    return grown, refused, sent


@pytest.mark.parametrize("scale", [1, 4])
def test_unauthenticated_calls_are_refused_from_their_headers(start_server, pb, scale):
    """2 connections x (25 or 100) streams of GetAgentStatus without an
    authorization header: each is refused UNAUTHENTICATED as Trailers-Only
    plus RST_STREAM before any DATA is taken, so the server holds nothing."""
    server = start_measured(start_server)
    grown, refused, sent = unauthenticated_bodies(server, pb, 2, 25 * scale, 256 * 1024)
    assert refused == 2 * 25 * scale
    print("scale %d: %d refused, %d bytes sent, grew %d KiB" % (scale, refused, sent, grown))
    assert grown < 16 * 1024
    assert metric(server, 'agenthub_grpc_header_refusals_total{door="public",'
                          'status="UNAUTHENTICATED"}') == refused
    assert metric(server, "agenthub_recv_buffered_bytes") == 0


def test_unauthenticated_streams_on_the_runner_door_are_refused_too(server, pb):
    good = server.track(GoodClient(server.public, pb))
    raw = server.raw("runner")
    sid = raw.request(PUBLISH, end_stream=False,
                      extra=[("authorization", "Bearer not-a-token")])
    stream = raw.wait_closed(sid)
    assert stream.trailers_only and stream.grpc_status == UNAUTHENTICATED
    assert raw.wait_reset(sid) is not None
    good.assert_served()


def held_attack(server, pb, streams, body_len):
    """STREAMS health Checks on one connection, each sending BODY_LEN bytes of
    its one message and never half-closing.  Returns (RSS growth in KiB,
    bytes the server let in)."""
    good = server.track(GoodClient(server.public, pb))
    before = vm_rss_kib(server.pid)
    conn = flow_connect(server)
    message = grpc_frame(b"\x0a" + varint(body_len) + b"s" * body_len)
    # Every stream is open before its body comes: what bounds them is not
    # the refusal of new streams but the window the server grants.
    sids, sent = [conn.request(CHECK, end_stream=False) for _ in range(streams)], 0
    for sid in sids:
        n = conn.send_flow(sid, message, stall=0.3)
        sent += n
        if n == 0:
            break  # no window left for anyone: the rest would fare the same
    good.assert_served()
    grown = vm_rss_kib(server.pid) - before
    return grown, sent, conn, sids


def test_request_bytes_held_per_connection_are_budgeted(start_server, pb):
    """8 health Checks (no caller needed) on one connection, all opened first,
    each sending most of one large message and never ending.  Past
    --recv-budget-bytes the server gives window back to one stream only:
    the others keep what is left of their 1 MiB stream windows, so making
    each message 4x larger does not make the server hold 4x more.  A new
    stream on that connection is refused (REFUSED_STREAM)."""
    results = {}
    for scale in (1, 4):
        server = start_measured(start_server, "--recv-budget-bytes", str(MiB))
        grown, sent, conn, sids = held_attack(server, pb, 8, scale * 900 * 1000)
        held = metric(server, "agenthub_recv_buffered_bytes")
        print("scale %d: server let in %d bytes, holds %d, grew %d KiB" % (scale, sent, held,
                                                                           grown))
        # The budget, what the other streams' windows had left, one message.
        assert held <= MiB + 7 * MiB + scale * 900 * 1000 + 5
        sid = conn.request(CHECK)  # (no body: the attacker spent its windows)
        assert conn.wait_reset(sid) == rawh2.REFUSED_STREAM
        assert metric(server, "agenthub_streams_refused_budget_total") >= 1
        results[scale] = held
        # Resetting the streams frees the budget: the connection works again.
        for s in sids:
            conn.send_rst(s)
        server.wait_metric("agenthub_recv_buffered_bytes", lambda v: v == 0)
        sid = conn.request(CHECK, end_stream=False)
        assert conn.send_flow(sid, grpc_frame(b"")) == 5
        conn.send_data(sid, b"", end_stream=True)
        assert conn.wait_closed(sid).grpc_status == 0
        server.stop()
    assert results[4] < 2 * results[1], results


def test_messages_over_the_budget_still_complete_one_at_a_time(start_server, pb):
    """A well-behaved client with four 3 MB unary calls in flight on one
    connection, interleaved, against a 1 MiB budget: the stream holding the
    connection's turn completes, then the next, and none waits for a
    timeout."""
    server = start_measured(start_server, "--recv-budget-bytes", str(MiB))
    good = server.track(GoodClient(server.public, pb))
    conn = flow_connect(server)
    body = grpc_frame(pb.echo.EchoRequest(payload=b"x" * 3000000).SerializeToString())
    sids = [conn.request(UNARY, end_stream=False) for _ in range(4)]
    sent = dict.fromkeys(sids, 0)
    started = time.monotonic()
    while any(n < len(body) for n in sent.values()) and time.monotonic() - started < 20:
        moved = False
        for sid in sids:
            room = min(conn.window(sid), 16384, len(body) - sent[sid])
            if room > 0:
                conn.send_frame(DataFrame(sid, data=body[sent[sid]:sent[sid] + room],
                                          flags=["END_STREAM"] if sent[sid] + room == len(body)
                                          else []))
                conn.conn_credit -= room
                conn.stream_credit[sid] = conn.stream_credit.get(sid, 0) - room
                sent[sid] += room
                moved = True
        conn.pump(0 if moved else 0.02)
        good.assert_served()
    for sid in sids:
        stream = conn.wait_closed(sid, timeout=10)
        assert stream.grpc_status == 0, stream.trailers
        [(_, reply)] = stream.messages()
        assert pb.echo.EchoResponse.FromString(reply).total_bytes == 3000000
    assert time.monotonic() - started < 8  # no request timeout (10 s) was needed
    assert metric(server, 'agenthub_grpc_request_timeouts_total{door="public"}') == 0


def test_a_request_whose_first_message_never_arrives_is_cancelled(start_server, pb):
    server = start_server("--request-timeout-ms", "300")
    good = server.track(GoodClient(server.public, pb))
    raw = server.raw()
    # A unary request with half a message, and one with no message at all.
    half = raw.request(CHECK, body=grpc_frame(b"\x0a\x05hello")[:6], end_stream=False)
    empty = raw.request(CHECK, end_stream=False)
    # A client stream that began a message, and one that sent nothing yet.
    started = raw.request(CLIENT_STREAM, body=grpc_frame(b"\x0a\x03abc")[:4], end_stream=False)
    quiet = raw.request(CLIENT_STREAM, end_stream=False)
    for sid in (half, empty, started):
        stream = raw.wait_closed(sid, timeout=3)
        assert stream.grpc_status == CANCELLED, stream.events
        assert "did not arrive within 300 ms" in stream.trailers.get("grpc-message", "")
        assert raw.wait_reset(sid) == rawh2.CANCEL
    good.assert_served()
    assert not raw.streams[quiet].closed  # an open stream may stay quiet
    assert metric(server, 'agenthub_grpc_request_timeouts_total{door="public"}') == 3


# --- Idle and half-open connections -------------------------------------------

def keep_good_client_busy(good, seconds):
    """Serves the good client every 100 ms for SECONDS (its own traffic keeps
    its connection out of the idle timeout)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        good.assert_served()
        time.sleep(0.1)


def test_a_connection_that_only_pings_is_closed_as_idle(start_server, pb):
    server = start_server("--idle-timeout-ms", "500")
    good = server.track(GoodClient(server.public, pb))
    raw = server.raw()
    started = time.monotonic()
    while not raw.eof and time.monotonic() - started < 5:
        try:
            raw.send_frame(PingFrame(0, opaque_data=b"12345678"))
        except OSError:
            break  # closed under our feet
        raw.pump(0.05)
        good.assert_served()
    raw.wait_eof(timeout=1)
    assert raw.eof and raw.goaway is not None
    assert raw.goaway[1] == rawh2.NO_ERROR and raw.goaway[2] == b"idle"
    assert 0.4 < time.monotonic() - started < 3
    assert metric(server, "agenthub_idle_closes_total") >= 1


def test_a_stream_stalled_by_its_own_client_does_not_keep_the_connection(start_server, pb):
    """A client that opened a window of zero and asks for a stream of replies
    makes no progress: the connection is closed after the idle timeout.  A
    stream waiting on the server (held open, nothing to say) is not idle."""
    server = start_server("--idle-timeout-ms", "500")
    good = server.track(GoodClient(server.public, pb))
    stalled = server.raw(settings={SettingsFrame.INITIAL_WINDOW_SIZE: 0})
    stalled.auto_window_update = False
    sid = stalled.request(SERVER_STREAM, body=grpc_frame(
        pb.echo.EchoRequest(response_count=10, response_size=1000).SerializeToString()))
    waiting = server.raw()
    held = waiting.request(SERVER_STREAM, body=grpc_frame(
        pb.echo.EchoRequest(response_count=0, hold_open=True).SerializeToString()))
    keep_good_client_busy(good, 1.5)
    assert stalled.wait_eof(timeout=3)
    assert stalled.goaway is not None and stalled.goaway[2] == b"idle"
    assert not stalled.streams[sid].ended
    waiting.pump(0.1)
    assert not waiting.eof and not waiting.streams[held].closed


def test_an_unfinished_header_block_is_cut(start_server, pb):
    server = start_server("--header-timeout-ms", "300")
    good = server.track(GoodClient(server.public, pb))
    raw = server.raw()
    assert raw.wait(lambda: raw.settings_frames >= 1)  # and acknowledged
    block = raw.encode_headers(raw.grpc_headers(CHECK))
    raw.send_frame(HeadersFrame(1, data=block[:5]))  # no END_HEADERS, no CONTINUATION
    started = time.monotonic()
    assert raw.wait_eof(timeout=3)
    assert raw.goaway is not None and raw.goaway[2] == b"header timeout"
    assert time.monotonic() - started < 2
    # A connection that never sends its preface is cut the same way.  The
    # listener also serves HTTP/1.1, so it says nothing until the client's
    # first bytes tell which protocol it speaks.
    host, port = server.public.rsplit(":", 1)
    silent = socket.create_connection((host, int(port)))
    silent.settimeout(3)
    assert silent.recv(65536) == b""
    silent.close()
    good.assert_served()
    assert metric(server, "agenthub_header_timeouts_total") == 2


def recv_until_eof(sock):
    try:
        while sock.recv(65536):
            pass
    except socket.timeout:
        return False
    except ConnectionResetError:
        pass
    return True


def test_max_connections_defaults_to_what_the_open_files_limit_holds(start_server, pb):
    """With RLIMIT_NOFILE at 200 and no --max-connections, each of the two
    gRPC listeners takes (200 - 64 reserved - 16 for metrics) / 2 = 60."""
    with open_files_limit(200):
        server = start_server()
    good = server.track(GoodClient(server.public, pb))  # connection 1
    conns = [server.raw() for _ in range(70)]
    for conn in conns:
        conn.wait(lambda c=conn: c.settings_frames >= 1 or c.eof, timeout=3)
    admitted = [c for c in conns if c.settings_frames >= 1 and not c.eof]
    assert len(admitted) == 59
    assert metric(server, "agenthub_connections_over_limit_total") == 11
    good.assert_served()
    for conn in conns:
        conn.close()


def test_the_metrics_listener_has_a_connection_cap_and_an_idle_timeout(start_server, pb):
    server = start_server("--metrics-max-connections", "4", "--metrics-idle-timeout-ms", "400")
    good = server.track(GoodClient(server.public, pb))
    host, port = server.metrics_addr.rsplit(":", 1)
    idle = [socket.create_connection((host, int(port))) for _ in range(4)]
    time.sleep(0.1)
    extra = socket.create_connection((host, int(port)))
    extra.settimeout(2)
    assert recv_until_eof(extra)  # over the cap: closed at once
    for sock in idle:
        sock.settimeout(3)
        assert recv_until_eof(sock)  # closed by the idle timeout
        sock.close()
    good.assert_served()
    metrics = server.metrics()
    assert metrics["agenthub_metrics_connections_refused_total"] == 1
    assert metrics["agenthub_metrics_idle_closes_total"] == 4


# --- Out of file descriptors --------------------------------------------------

def test_running_out_of_file_descriptors_pauses_accepting(start_server, pb):
    """RLIMIT_NOFILE 200 and 400 connections: accept() fails with EMFILE.  The
    server pauses accepting instead of spinning (little CPU, little log),
    keeps serving the connections it has, and accepts again once some
    close."""
    with open_files_limit(200):
        server = start_server("--max-connections", "10000")
    good = server.track(GoodClient(server.public, pb))
    cpu_before = cpu_seconds(server.pid)
    log_before = len(server.stderr())
    host, port = server.public.rsplit(":", 1)
    conns = [socket.create_connection((host, int(port))) for _ in range(400)]
    # (/metrics cannot answer now: its listener is out of descriptors too.)
    deadline = time.monotonic() + 10
    while "pausing accepts" not in server.stderr() and time.monotonic() < deadline:
        time.sleep(0.05)
    keep_good_client_busy(good, 2.0)
    cpu = cpu_seconds(server.pid) - cpu_before
    log = len(server.stderr()) - log_before
    print("out of descriptors for 2 s: %.2f s CPU, %d bytes of log" % (cpu, log))
    assert cpu < 1.0
    assert log < 16 * 1024
    assert "pausing accepts" in server.stderr()
    for sock in conns:
        sock.close()
    fresh = server.channel()
    assert Health(fresh, pb).status(timeout=10) == Health.SERVING
    good.assert_served()
    assert metric(server, "agenthub_accept_pauses_total") >= 1


# --- TLS -----------------------------------------------------------------------

def tls_flags(tls_dir, client_ca=False):
    flags = ["--tls-cert", tls_dir.server_crt, "--tls-key", tls_dir.server_key]
    if client_ca:
        flags += ["--tls-client-ca", tls_dir.ca_crt]
    return flags


class TlsGoodClient(GoodClient):
    def __init__(self, address, pb, tls_dir, within=0.1):
        self.pb = pb
        self.within = within
        creds = grpc.ssl_channel_credentials(
            root_certificates=read_bytes(tls_dir.server_crt),
            private_key=read_bytes(tls_dir.client_key),
            certificate_chain=read_bytes(tls_dir.client_crt))
        self.channel = grpc.secure_channel(
            address, creds, options=[("grpc.ssl_target_name_override", "localhost")])
        self.health = Health(self.channel, pb)
        self.health.check(timeout=10)


def tls_client_context(tls_dir, version=None, ciphers=None):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(tls_dir.server_crt)
    ctx.load_cert_chain(tls_dir.client_crt, tls_dir.client_key)
    ctx.set_alpn_protocols(["h2"])
    if version is not None:
        ctx.minimum_version = ctx.maximum_version = version
    if ciphers is not None:
        ctx.set_ciphers(ciphers)
    return ctx


def tls_connect(address, ctx, session=None):
    host, _, port = address.rpartition(":")
    sock = socket.create_connection((host, int(port)), timeout=5)
    tls = ctx.wrap_socket(sock, server_hostname="localhost", session=session)
    tls.sendall(rawh2.PREFACE + SettingsFrame(0).serialize())
    assert tls.recv(65536)  # the server's SETTINGS (and, on TLS 1.3, the tickets)
    return tls


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_tls_sessions_resume_with_client_certificates(start_server, tls_dir, pb, version):
    server = start_server(*tls_flags(tls_dir, client_ca=True))
    good = server.track(TlsGoodClient(server.public, pb, tls_dir))
    ctx = tls_client_context(tls_dir, version)
    first = tls_connect(server.public, ctx)
    session = first.session
    assert not first.session_reused and session is not None
    first.close()
    second = tls_connect(server.public, ctx, session=session)
    assert second.session_reused, "the server refused to resume the session"
    assert second.selected_alpn_protocol() == "h2"
    second.close()
    good.assert_served()


def test_tls12_offers_only_cipher_suites_http2_allows(start_server, tls_dir, pb):
    server = start_server(*tls_flags(tls_dir, client_ca=True))
    good = server.track(TlsGoodClient(server.public, pb, tls_dir))
    cbc = tls_client_context(tls_dir, ssl.TLSVersion.TLSv1_2,
                             "ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA:"
                             "ECDHE-ECDSA-AES128-SHA256:ECDHE-ECDSA-AES256-SHA384")
    with pytest.raises(ssl.SSLError):
        tls_connect(server.public, cbc)
    gcm = tls_connect(server.public, tls_client_context(tls_dir, ssl.TLSVersion.TLSv1_2))
    assert "GCM" in gcm.cipher()[0] or "CHACHA20" in gcm.cipher()[0]
    gcm.close()
    good.assert_served()
