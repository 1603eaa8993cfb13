"""The HTTP/2 server and the agenthubd process: TLS, connection limits,
SIGTERM, command line, and abuse from raw sockets after which other
clients are still served."""
import os
import socket
import ssl
import subprocess
import time
import warnings

import grpc
import pytest

import rawh2
from helpers import (CHECK, CLIENT_STREAM, SERVER_STREAM, UNARY, Echo, Health, build_dir,
                     read_bytes, rpc_error)
from hyperframe.frame import (ContinuationFrame, DataFrame, HeadersFrame, PingFrame,
                              RstStreamFrame, WindowUpdateFrame)
from rawh2 import grpc_frame


def hold_open_body(pb, count=1):
    return grpc_frame(pb.echo.EchoRequest(response_count=count, hold_open=True)
                      .SerializeToString())


# --- TLS ---------------------------------------------------------------------

def tls_channel(server, tls_dir, client_cert=False):
    kwargs = {"root_certificates": read_bytes(tls_dir.server_crt)}
    if client_cert:
        kwargs["private_key"] = read_bytes(tls_dir.client_key)
        kwargs["certificate_chain"] = read_bytes(tls_dir.client_crt)
    creds = grpc.ssl_channel_credentials(**kwargs)
    return server.track(grpc.secure_channel(
        server.public, creds, options=[("grpc.ssl_target_name_override", "localhost")]))


def tls_flags(tls_dir, client_ca=False):
    flags = ["--tls-cert", tls_dir.server_crt, "--tls-key", tls_dir.server_key]
    if client_ca:
        flags += ["--tls-client-ca", tls_dir.ca_crt]
    return flags


def test_health_check_over_tls(start_server, tls_dir, pb):
    server = start_server(*tls_flags(tls_dir))
    assert Health(tls_channel(server, tls_dir), pb).status() == Health.SERVING
    # The runner door serves TLS too.
    creds = grpc.ssl_channel_credentials(root_certificates=read_bytes(tls_dir.server_crt))
    runner = server.track(grpc.secure_channel(
        server.runner_addr, creds, options=[("grpc.ssl_target_name_override", "localhost")]))
    assert Health(runner, pb).status() == Health.SERVING
    # A plaintext client gets nowhere on a TLS port.
    err = rpc_error(Health(server.channel(), pb).check, timeout=3)
    assert err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def tls_handshake(address, alpn):
    host, _, port = address.rpartition(":")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(alpn)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        with ctx.wrap_socket(sock) as tls:
            return tls.selected_alpn_protocol(), tls.version()


def test_tls_negotiates_h2_by_alpn_and_refuses_clients_without_it(start_server, tls_dir):
    server = start_server(*tls_flags(tls_dir))
    protocol, version = tls_handshake(server.public, ["http/1.1", "h2"])
    assert protocol == "h2"
    assert version in ("TLSv1.2", "TLSv1.3")
    # Both doors serve HTTP/1.1 too: browsers (gRPC-Web) on the public one,
    # Connect clients (Runners among them) on both.
    assert tls_handshake(server.public, ["http/1.1"])[0] == "http/1.1"
    assert tls_handshake(server.runner_addr, ["http/1.1"])[0] == "http/1.1"
    with pytest.raises(ssl.SSLError):
        tls_handshake(server.public, ["spdy/3"])


def test_tls_below_1_2_is_refused(start_server, tls_dir):
    server = start_server(*tls_flags(tls_dir))
    host, _, port = server.public.rpartition(":")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            ctx.minimum_version = ssl.TLSVersion.TLSv1
            ctx.maximum_version = ssl.TLSVersion.TLSv1_1
        ctx.set_ciphers("ALL:@SECLEVEL=0")
    except (ValueError, ssl.SSLError):
        pytest.skip("this OpenSSL cannot even offer TLS 1.1")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        with pytest.raises((ssl.SSLError, ConnectionResetError)):
            ctx.wrap_socket(sock)


def test_tls_client_ca_requires_a_client_certificate(start_server, tls_dir, pb):
    server = start_server(*tls_flags(tls_dir, client_ca=True))
    err = rpc_error(Health(tls_channel(server, tls_dir), pb).check, timeout=5)
    assert err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    with_cert = tls_channel(server, tls_dir, client_cert=True)
    assert Health(with_cert, pb).status() == Health.SERVING


# --- SIGTERM -----------------------------------------------------------------

def test_sigterm_ends_streams_unavailable_and_exits_0_within_5s(server, pb):
    channel = server.channel()
    echo = Echo(channel, pb)
    calls = [echo.server_stream(echo.req(response_count=1, hold_open=True), timeout=30)
             for _ in range(3)]
    for call in calls:
        assert next(call).index == 0
    started = time.monotonic()
    server.terminate()
    for call in calls:
        with pytest.raises(grpc.RpcError) as info:
            next(call)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    channel.close()
    rc, _ = server.wait_exit()
    assert rc == 0, server.stderr()
    assert time.monotonic() - started < 5


def test_sigterm_sends_goaway_lets_unary_in_flight_finish_and_refuses_new_streams(server, pb):
    raw = server.raw()
    # A unary call in flight: headers and half its request sent.
    body = grpc_frame(pb.echo.EchoRequest(payload=b"finish me").SerializeToString())
    unary = raw.new_stream_id()
    raw.send_headers(unary, raw.grpc_headers(UNARY))
    raw.send_data(unary, body[:7])
    # And a server stream held open.
    stream_id = raw.request(SERVER_STREAM, body=hold_open_body(pb))
    assert raw.wait(lambda: len(raw.streams[stream_id].messages()) == 1)

    started = time.monotonic()
    server.terminate()
    assert raw.wait(lambda: raw.goaway is not None)
    last_stream_id, code, _ = raw.goaway
    assert code == rawh2.NO_ERROR
    assert last_stream_id >= stream_id
    held = raw.wait_closed(stream_id)
    assert held.grpc_status == 14
    # While draining, /healthz says so.
    status, body_text = server.http_get("/healthz")
    assert status == 503 and "draining" in body_text
    # The unary call still completes.
    raw.send_data(unary, body[7:], end_stream=True)
    done = raw.wait_closed(unary)
    assert done.grpc_status == 0
    [(_, reply)] = done.messages()
    assert pb.echo.EchoResponse.FromString(reply).payload == b"finish me"
    raw.close()
    rc, _ = server.wait_exit()
    assert rc == 0, server.stderr()
    assert time.monotonic() - started < 5


def test_sigterm_with_a_unary_call_that_never_completes_still_exits_0_within_5s(server, pb):
    """The drain waits for unary calls in flight, but not forever: a client
    that never sends the rest of its request is cut off at the grace period."""
    raw = server.raw()
    sid = raw.new_stream_id()
    raw.send_headers(sid, raw.grpc_headers(UNARY))
    raw.send_data(sid, b"\x00\x00\x00\x00\x10")  # declares 16 bytes, sends none
    raw.pump(0.1)
    started = time.monotonic()
    server.terminate()
    assert raw.wait(lambda: raw.goaway is not None)
    rc, _ = server.wait_exit()
    elapsed = time.monotonic() - started
    print("exit after %.2f s" % elapsed)
    assert rc == 0, server.stderr()
    assert elapsed < 5
    assert raw.wait_eof(timeout=1)


# --- Connection limits ---------------------------------------------------------

def test_idle_connection_is_closed_after_idle_timeout(start_server, pb):
    server = start_server("--idle-timeout-ms", "200")
    started = time.monotonic()
    idle = server.raw()
    assert idle.wait_eof(timeout=5)
    assert time.monotonic() - started >= 0.15
    assert idle.goaway is not None and idle.goaway[1] == rawh2.NO_ERROR
    # A connection with an open stream is not idle.
    busy = server.raw()
    sid = busy.request(SERVER_STREAM, body=hold_open_body(pb))
    busy.pump(0.7)
    assert not busy.eof and busy.goaway is None
    assert not busy.streams[sid].closed


def test_max_connections_refuses_a_third(start_server, pb):
    server = start_server("--max-connections", "2")
    first, second = server.raw(), server.raw()
    for conn in (first, second):
        assert conn.wait(lambda: conn.settings_frames >= 1)
    third = server.raw()
    assert third.wait_eof(timeout=5)
    assert third.settings_frames == 0
    # The two admitted connections still work.
    sid = first.request(CHECK, body=grpc_frame(b""))
    assert first.wait_closed(sid).grpc_status == 0
    # Closing one makes room again.
    first.close()
    server.wait_metric("agenthub_connections_open", lambda v: v == 1)
    assert Health(server.channel(), pb).status() == Health.SERVING


# --- Command line --------------------------------------------------------------

def run_agenthubd(*args):
    return subprocess.run([os.path.join(build_dir(), "agenthubd")] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30,
                          env=dict(os.environ, ASAN_OPTIONS="detect_leaks=1"))


def test_port_0_picks_free_ports_for_every_listener(server, pb):
    ports = [int(server.addresses[name].rpartition(":")[2])
             for name in ("public", "runner", "metrics")]
    assert all(port > 0 for port in ports)
    assert len(set(ports)) == 3
    status, body = server.http_get("/healthz")
    assert (status, body.strip()) == (200, "ok")
    assert Health(server.channel("runner"), pb).status() == Health.SERVING


def test_metrics_count_connections_streams_calls_and_bytes(server, pb):
    health = Health(server.channel(), pb)
    for _ in range(3):
        health.check()
    metrics = server.metrics()
    assert metrics['agenthub_grpc_calls_total{door="public",method="/grpc.health.v1.Health/Check"'
                   ',status="OK"}'] == 3
    assert metrics["agenthub_connections_open"] == 1
    assert metrics["agenthub_connections_total"] >= 1
    assert metrics["agenthub_streams_total"] >= 3
    assert metrics["agenthub_bytes_in_total"] > 0
    assert metrics["agenthub_bytes_out_total"] > 0
    assert server.http_get("/nope")[0] == 404


def test_help_exits_0():
    result = run_agenthubd("--help")
    assert result.returncode == 0
    assert b"--listen" in result.stdout and b"--tls-client-ca" in result.stdout


@pytest.mark.parametrize("args", [
    ["--bogus"],
    ["--listen", "127.0.0.1:0"],  # no --db
    ["--db", "x"],  # no --listen
    ["--db", "x", "--listen", "127.0.0.1:0", "--max-recv-bytes", "0"],
    ["--db", "x", "--listen", "127.0.0.1:0", "--tls-cert", "only-a-cert.pem"],
    ["--db", "x", "--listen", "127.0.0.1:0", "stray"],
])
def test_bad_command_line_exits_2(args):
    result = run_agenthubd(*args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(b"agenthubd: ")


def test_misconfigured_paths_exit_2_naming_the_flag(tmp_path, tls_dir):
    """Every path a flag names is checked at start, not at first use."""
    db = str(tmp_path / "db")
    base = ["--db", db, "--listen", "127.0.0.1:0"]
    a_file = tmp_path / "plain-file"
    a_file.write_text("x")
    read_only = tmp_path / "read-only"
    read_only.mkdir()
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    cases = [
        (["--blob-dir", str(tmp_path / "missing")], b"--blob-dir"),
        (["--blob-dir", str(a_file)], b"--blob-dir"),
        (["--tls-cert", str(tmp_path / "no.crt"), "--tls-key", tls_dir.server_key], b"--tls-cert"),
        (["--tls-cert", tls_dir.server_crt, "--tls-key", str(tmp_path / "no.key")], b"--tls-key"),
        (["--tls-cert", tls_dir.server_crt, "--tls-key", tls_dir.server_key,
          "--tls-client-ca", str(tmp_path / "no-ca.crt")], b"--tls-client-ca"),
        (["--tls-cert", str(garbage), "--tls-key", tls_dir.server_key], b"--tls-cert"),
        (["--tls-cert", tls_dir.server_crt, "--tls-key", tls_dir.client_key], b"--tls-key"),
        (["--db", str(tmp_path / "no-such-dir" / "db")], b"--db"),
    ]
    if os.geteuid() != 0:  # root writes anywhere: the mode check needs a user
        read_only.chmod(0o500)
        cases.append((["--blob-dir", str(read_only)], b"--blob-dir"))
    for extra, flag in cases:
        result = run_agenthubd(*(base + extra))
        assert result.returncode == 2, (extra, result.stderr)
        assert result.stderr.startswith(b"agenthubd: "), (extra, result.stderr)
        assert flag in result.stderr.split(b": ")[1], (extra, result.stderr)
        assert b"listening" not in result.stderr


def test_unusable_listen_address_exits_1(tmp_path):
    result = run_agenthubd("--db", str(tmp_path / "db"), "--listen", "256.0.0.1:0")
    assert result.returncode == 1, result.stderr
    assert b"listening" not in result.stderr


# --- Abuse from raw sockets ------------------------------------------------------

def assert_still_served(server, pb, channel=None):
    assert Health(channel or server.channel(), pb).status() == Health.SERVING
    raw = server.raw()
    sid = raw.request(CHECK, body=grpc_frame(b""))
    assert raw.wait_closed(sid).grpc_status == 0
    raw.close()


def frame_header(length, type_, flags, stream_id):
    return length.to_bytes(3, "big") + bytes([type_, flags]) + stream_id.to_bytes(4, "big")


MALFORMED = {
    # name: (bytes after preface + SETTINGS, expected GOAWAY code)
    "oversized frame": (b"\xff" * 9 + b"\x00" * 64, rawh2.FRAME_SIZE_ERROR),
    "settings on a stream": (frame_header(0, 0x4, 0, 1), rawh2.PROTOCOL_ERROR),
    "data on stream 0": (frame_header(4, 0x0, 0, 0) + b"abcd", rawh2.PROTOCOL_ERROR),
    "bad hpack": (frame_header(4, 0x1, 0x4 | 0x1, 1) + b"\xff\xff\xff\xff",
                  rawh2.COMPRESSION_ERROR),
    "even stream id": (None, rawh2.PROTOCOL_ERROR),
    "window overflow": (WindowUpdateFrame(0, window_increment=0x7fffffff).serialize() * 2,
                        rawh2.FLOW_CONTROL_ERROR),
    "continuation without headers": (ContinuationFrame(1, data=b"", flags=["END_HEADERS"])
                                     .serialize(), rawh2.PROTOCOL_ERROR),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_frame_gets_goaway_and_others_are_still_served(server, pb, name):
    before = server.channel()
    assert Health(before, pb).status() == Health.SERVING
    payload, code = MALFORMED[name]
    raw = server.raw()
    if payload is None:  # even stream id: a client may only open odd ones
        payload = HeadersFrame(2, data=raw.encode_headers(raw.grpc_headers(CHECK)),
                               flags=["END_HEADERS", "END_STREAM"]).serialize()
    raw.send(payload)
    assert raw.wait_eof(timeout=5), "the server kept the connection open"
    assert raw.goaway is not None
    assert raw.goaway[1] == code, raw.goaway
    assert_still_served(server, pb, before)
    server.wait_metric("agenthub_connections_open", lambda v: v == 1)  # `before`


@pytest.mark.parametrize("garbage", [b"\x00" * 100, os.urandom(4096)])
def test_garbage_instead_of_the_preface_is_dropped(server, pb, garbage):
    raw = server.raw(preface=False)
    raw.send(garbage)
    assert raw.wait_eof(timeout=5)
    assert_still_served(server, pb)


def test_an_http1_request_gets_an_http1_answer_not_http2_bytes(server, pb):
    """The public listener serves HTTP/1.1 too (gRPC-Web): a plain GET of a
    method is answered in HTTP/1.1 (405: not a call), never with HTTP/2
    frames.  (GET / is the pane page: tests/e2e/test_web_page.py.)"""
    host, port = server.public.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(b"GET /grpc.health.v1.Health/Check HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 405 ")
    assert_still_served(server, pb)


def test_headers_flood_on_one_connection_is_capped_at_max_concurrent_streams(server, pb):
    """20,000 HEADERS frames opening streams as fast as the socket takes
    them: 100 streams open, every other one refused, nothing else grows."""
    before = server.channel()
    raw = server.raw()
    headers = raw.grpc_headers(SERVER_STREAM)
    blob = bytearray()
    for i in range(20000):
        blob += raw.headers_frame(1 + 2 * i, headers, end_stream=False)
    assert raw.send_bulk(bytes(blob), read=False) == len(blob)
    refused = lambda: sum(s.reset_code == rawh2.REFUSED_STREAM for s in raw.streams.values())
    assert raw.wait(lambda: refused() == 19900, timeout=20), (refused(), raw.goaway, raw.eof)
    assert raw.goaway is None and not raw.eof
    open_ids = sorted(s.id for s in raw.streams.values() if not s.closed)
    assert open_ids == [1 + 2 * i for i in range(100)]  # the first 100, waiting for requests
    metrics = server.metrics()
    assert metrics["agenthub_streams_open"] == 100
    assert metrics["agenthub_grpc_calls_open"] == 100
    assert_still_served(server, pb, before)
    # The 100 still work: give each its request.
    for sid in open_ids:
        raw.send_data(sid, grpc_frame(pb.echo.EchoRequest(response_count=1).SerializeToString()),
                      end_stream=True)
    assert raw.wait(lambda: all(raw.streams[sid].closed for sid in open_ids), timeout=20)
    assert all(raw.streams[sid].grpc_status == 0 for sid in open_ids)
    raw.close()
    server.wait_metric("agenthub_streams_open", lambda v: v == 0)
    server.wait_metric("agenthub_grpc_calls_open", lambda v: v == 0)
    server.wait_metric("agenthub_connections_open", lambda v: v == 1)  # `before`


def test_headers_flood_of_complete_requests_from_a_client_that_does_not_read(server, pb):
    """20,000 complete requests pipelined without reading a byte: each is
    answered or refused, none is lost, and other clients are served."""
    before = server.channel()
    raw = server.raw()
    headers = raw.grpc_headers(CHECK)
    blob = bytearray()
    for i in range(20000):
        blob += raw.headers_frame(1 + 2 * i, headers, end_stream=True)
    assert raw.send_bulk(bytes(blob), read=False) > 0
    assert_still_served(server, pb, before)
    done = lambda: sum(s.closed for s in raw.streams.values())
    raw.wait(lambda: done() == 20000 or raw.eof, timeout=30)
    if not raw.eof:  # (nghttp2 may also cut off a client that never reads)
        outcomes = {}
        for s in raw.streams.values():
            key = "refused" if s.reset_code == rawh2.REFUSED_STREAM else s.grpc_status
            outcomes[key] = outcomes.get(key, 0) + 1
        # Zero request messages on a unary call: UNIMPLEMENTED (12).
        assert set(outcomes) <= {"refused", 12}, outcomes
        assert outcomes.get(12, 0) >= 100, outcomes
    raw.close()
    server.wait_metric("agenthub_streams_open", lambda v: v == 0)
    server.wait_metric("agenthub_grpc_calls_open", lambda v: v == 0)
    server.wait_metric("agenthub_connections_open", lambda v: v == 1)


def test_continuation_flood_on_one_connection(server, pb):
    """A header block that never ends: HEADERS without END_HEADERS, then
    10,000 CONTINUATION frames of 1 kB each (CVE-2024-27316 style)."""
    before = server.channel()
    raw = server.raw()
    sid = raw.new_stream_id()
    raw.streams[sid] = rawh2.Stream(sid)
    first = raw.encode_headers(raw.grpc_headers(CHECK))
    blob = bytearray(HeadersFrame(sid, data=first, flags=[]).serialize())
    junk = raw.encode_headers([("x-junk", "j" * 1000)])
    blob += ContinuationFrame(sid, data=junk, flags=[]).serialize() * 10000
    sent = raw.send_bulk(bytes(blob))
    raw.wait(lambda: raw.eof or raw.streams[sid].closed, timeout=5)
    print("continuation flood: sent %d of %d, goaway %r, eof %r, stream %r"
          % (sent, len(blob), raw.goaway, raw.eof, raw.streams[sid].events))
    # Refused: the stream reset or the connection ended; never answered.
    assert raw.eof or raw.streams[sid].reset_code is not None
    assert raw.streams[sid].http_status is None
    assert_still_served(server, pb, before)
    raw.close()
    server.wait_metric("agenthub_streams_open", lambda v: v == 0)
    server.wait_metric("agenthub_connections_open", lambda v: v == 1)


def test_header_list_over_16_kib_is_refused_without_harming_the_connection(server):
    raw = server.raw()
    # Just under the 16 KiB header list limit: accepted.
    fits = raw.request(CHECK, body=grpc_frame(b""), extra=[("x-big", "b" * 15000)])
    assert raw.wait_closed(fits).grpc_status == 0
    # Over it: the stream is reset before any handler answers.
    big = raw.request(CHECK, body=grpc_frame(b""), extra=[("x-big", "b" * 20000)])
    stream = raw.wait_closed(big)
    assert stream.http_status is None, stream.events
    assert stream.reset_code is not None or raw.goaway is not None
    if raw.goaway is None:
        ok = raw.request(CHECK, body=grpc_frame(b""))
        assert raw.wait_closed(ok).grpc_status == 0


def test_rapid_reset_burst(server, pb):
    """HEADERS + RST_STREAM x 10,000 (CVE-2023-44487): the server survives,
    cuts the connection off, and frees every stream it opened."""
    before = server.channel()
    raw = server.raw()
    headers = raw.grpc_headers(SERVER_STREAM)
    blob = bytearray()
    for i in range(10000):
        sid = 1 + 2 * i
        blob += raw.headers_frame(sid, headers, end_stream=False)
        blob += RstStreamFrame(sid, error_code=rawh2.CANCEL).serialize()
    started = time.monotonic()
    raw.send_bulk(bytes(blob))
    assert raw.wait_eof(timeout=5), "the server kept a rapid-reset connection open"
    assert raw.goaway is not None
    assert raw.goaway[1] in (rawh2.ENHANCE_YOUR_CALM, rawh2.INTERNAL_ERROR,
                             rawh2.PROTOCOL_ERROR), raw.goaway
    print("rapid reset: goaway %r after %.2f s" % (raw.goaway, time.monotonic() - started))
    assert raw.goaway[0] < 1 + 2 * 9999  # it did not process the whole burst
    assert time.monotonic() - started < 10
    assert_still_served(server, pb, before)
    server.wait_metric("agenthub_streams_open", lambda v: v == 0)
    server.wait_metric("agenthub_grpc_calls_open", lambda v: v == 0)


def test_empty_data_frame_flood_costs_nothing_lasting(server, pb):
    """100,000 zero-length DATA frames on one stream (CVE-2019-9518): nghttp2
    handles them in linear time without buffering, so the server neither
    chokes nor needs to cut the connection; the stream still works."""
    before = server.channel()
    raw = server.raw()
    sid = raw.new_stream_id()
    raw.send_headers(sid, raw.grpc_headers(CLIENT_STREAM))
    raw.send_bulk(DataFrame(sid, data=b"").serialize() * 100000)
    assert_still_served(server, pb, before)
    raw.send_data(sid, grpc_frame(pb.echo.EchoRequest(payload=b"abc").SerializeToString()),
                  end_stream=True)
    stream = raw.wait_closed(sid, timeout=30)
    if raw.goaway is None:
        assert stream.grpc_status == 0, stream.events
        [(_, reply)] = stream.messages()
        assert pb.echo.EchoResponse.FromString(reply).total_bytes == 3
    else:  # a stricter nghttp2 may call it a flood: then only a clean cut is fine
        assert raw.goaway[1] == rawh2.ENHANCE_YOUR_CALM, raw.goaway
    raw.close()
    server.wait_metric("agenthub_streams_open", lambda v: v == 0)
    server.wait_metric("agenthub_grpc_calls_open", lambda v: v == 0)


def test_ping_flood_from_a_client_that_does_not_read(server, pb):
    """300,000 PINGs (5 MB) without reading the ACKs: the server either
    answers them all or cuts the connection off; either way it survives."""
    before = server.channel()
    raw = server.raw()
    flood = PingFrame(0, opaque_data=b"12345678").serialize() * 300000
    raw.send_bulk(flood, read=False)
    assert_still_served(server, pb, before)
    raw.close()
    server.wait_metric("agenthub_connections_open", lambda v: v == 1)
