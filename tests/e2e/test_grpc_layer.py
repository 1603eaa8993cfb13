"""The gRPC layer's rules (PROTOCOL-HTTP2), driven with python3-grpcio and,
where the wire form matters, with raw HTTP/2 frames (rawh2)."""
import base64
import os
import queue
import subprocess
import time
import urllib.parse
import zlib

import grpc
import pytest

import rawh2
from helpers import (BIDI, CHECK, REPO, SERVER_STREAM, UNARY, UNLIMITED, Echo, Health,
                     calls_key, vm_rss_kib,
                     rpc_error)
from rawh2 import grpc_frame

FOUR_MIB = 4 * 1024 * 1024


# --- Health ------------------------------------------------------------------

def test_health_check_over_h2c_on_both_doors(server, pb):
    for door in ("public", "runner"):
        health = Health(server.channel(door), pb)
        assert health.status() == Health.SERVING
        assert health.status("grpc.health.v1.Health") == Health.SERVING
        assert health.status("agenthub.testing.v1.EchoService") == Health.SERVING
        err = rpc_error(health.check, "no.such.Service")
        assert err.code() == grpc.StatusCode.NOT_FOUND


def test_health_watch_streams_serving_then_not_serving_on_sigterm_then_unavailable(server, pb):
    channel = server.channel()
    responses = Health(channel, pb).watch()
    assert next(responses).status == Health.SERVING
    server.terminate()
    assert next(responses).status == Health.NOT_SERVING
    with pytest.raises(grpc.RpcError) as info:
        next(responses)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    channel.close()
    rc, waited = server.wait_exit()
    assert rc == 0, server.stderr()
    assert waited < 5


# --- Unknown methods and non-gRPC requests ------------------------------------

@pytest.mark.parametrize("path", ["/no.such.Service/Method", "/grpc.health.v1.Health/NoSuchMethod"])
def test_unknown_service_or_method_is_unimplemented(server, pb, path):
    call = server.channel().unary_unary(path)
    err = rpc_error(call, b"", timeout=10)
    assert err.code() == grpc.StatusCode.UNIMPLEMENTED


@pytest.mark.parametrize("path", ["/no.such.Service/Method", "/grpc.health.v1.Health/NoSuchMethod"])
def test_unknown_method_answer_is_trailers_only(server, path):
    raw = server.raw()
    sid = raw.request(path, body=grpc_frame(b""))
    stream = raw.wait_closed(sid)
    assert stream.trailers_only, stream.events
    assert stream.http_status == 200
    assert stream.headers["content-type"].startswith("application/grpc")
    assert stream.grpc_status == 12


def test_non_post_gets_http_405(server):
    raw = server.raw()
    sid = raw.request(CHECK, method="GET")
    stream = raw.wait_closed(sid)
    assert stream.ended
    assert stream.http_status == 405


# application/json is the Connect protocol's (test_connect.py).
@pytest.mark.parametrize("content_type", ["text/plain", "application/grpcx", "application/xml"])
def test_non_grpc_content_type_gets_http_415(server, content_type):
    raw = server.raw()
    sid = raw.request(CHECK, body=grpc_frame(b""), content_type=content_type)
    stream = raw.wait_closed(sid)
    assert stream.http_status == 415


def test_missing_content_type_gets_http_415(server):
    raw = server.raw()
    sid = raw.request(CHECK, body=grpc_frame(b""), content_type=None)
    assert raw.wait_closed(sid).http_status == 415


@pytest.mark.parametrize("content_type", ["application/grpc+proto", "application/grpc;charset=x"])
def test_grpc_content_type_variants_are_accepted(server, content_type):
    raw = server.raw()
    sid = raw.request(CHECK, body=grpc_frame(b""), content_type=content_type)
    stream = raw.wait_closed(sid)
    assert stream.http_status == 200
    assert stream.grpc_status == 0


def test_request_without_te_trailers_is_rejected_with_http_400(server):
    raw = server.raw()
    sid = raw.request(CHECK, body=grpc_frame(b""), te=None)
    stream = raw.wait_closed(sid)
    assert stream.ended
    assert stream.http_status == 400
    assert stream.data_frames == 0


def test_te_other_than_trailers_is_a_malformed_request(server):
    # RFC 9113 8.2.2: te may only be "trailers"; nghttp2 resets the stream.
    raw = server.raw()
    sid = raw.request(CHECK, body=grpc_frame(b""), te="gzip")
    stream = raw.wait_closed(sid)
    assert stream.reset_code == rawh2.PROTOCOL_ERROR
    assert stream.http_status is None


# --- Encodings and framing ---------------------------------------------------

def test_unsupported_grpc_encoding_is_unimplemented_with_accept_encoding(server):
    raw = server.raw()
    sid = raw.request(CHECK, body=grpc_frame(b""), extra=[("grpc-encoding", "snappy")])
    stream = raw.wait_closed(sid)
    assert stream.grpc_status == 12
    accepted = [e.strip() for e in stream.trailers["grpc-accept-encoding"].split(",")]
    assert sorted(accepted) == ["deflate", "gzip", "identity"]


@pytest.mark.parametrize("compression", [grpc.Compression.Gzip, grpc.Compression.Deflate])
def test_grpcio_compressed_calls_work_both_ways(server, pb, compression):
    """grpcio with compression on: small and large requests, unary and
    streaming; large responses come back compressed (grpcio accepts gzip
    and deflate), small ones as they are."""
    channel = server.channel(options=[("grpc.default_compression_algorithm", compression)])
    health = Health(channel, pb)
    echo = Echo(channel, pb)
    assert health.status() == Health.SERVING
    text = b"the agent is running the tests again. " * 4000
    for payload in (b"x", text):
        assert echo.unary(echo.req(payload=payload), timeout=10).payload == payload
    got = list(echo.server_stream(echo.req(response_count=3, response_size=20000), timeout=10))
    assert [len(r.payload) for r in got] == [20000] * 3
    reply = echo.client_stream(iter([echo.req(payload=text)] * 4), timeout=10)
    assert reply.total_bytes == 4 * len(text)
    m = server.metrics()
    name = "gzip" if compression == grpc.Compression.Gzip else "deflate"
    key = 'agenthub_grpc_compressed_messages_total{door="public",direction="%s",encoding="%s"}'
    assert m[key % ("received", name)] >= 5, m
    assert m[key % ("sent", name)] >= 4, m


def test_large_responses_are_compressed_only_for_clients_that_accept_it(server, pb):
    request = pb.echo.EchoRequest(payload=b"compressible " * 2000).SerializeToString()
    raw = server.raw()
    plain = raw.wait_closed(raw.request(UNARY, body=grpc_frame(request)))
    asked = raw.wait_closed(raw.request(UNARY, body=grpc_frame(request),
                                        extra=[("grpc-accept-encoding", "identity,gzip")]))
    small = raw.wait_closed(raw.request(UNARY, body=grpc_frame(
        pb.echo.EchoRequest(payload=b"tiny").SerializeToString()),
        extra=[("grpc-accept-encoding", "gzip")]))
    assert plain.grpc_status == asked.grpc_status == small.grpc_status == 0
    assert "grpc-encoding" not in plain.headers
    ((flag, body),) = plain.messages()
    assert flag == 0
    assert asked.headers["grpc-encoding"] == "gzip"
    ((flag, packed),) = asked.messages()
    assert flag == 1 and len(packed) < len(body) // 10
    assert zlib.decompress(packed, 16 + zlib.MAX_WBITS) == body
    ((flag, _),) = small.messages()
    assert flag == 0  # too small to gain: sent as it is, even to a client that accepts gzip


def test_a_decompression_bomb_is_refused_without_inflating_it(start_server, pb):
    """64 MiB of zeros gzip to about 64 KiB: the server stops at its 4 MiB
    receive limit and answers RESOURCE_EXHAUSTED; its memory does not grow
    by the inflated size.  (ASan's quarantine of freed memory is shrunk so
    that what was freed does not count as held.)"""
    server = start_server(env={"ASAN_OPTIONS": "detect_leaks=1:quarantine_size_mb=4"})
    zeros = b"\0" * (64 << 20)
    bomb = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    packed = bomb.compress(pb.echo.EchoRequest(payload=zeros).SerializeToString()) + bomb.flush()
    del zeros
    assert len(packed) < 200_000
    before = vm_rss_kib(server.pid)
    raw = server.raw()
    for _ in range(4):
        sid = raw.request(UNARY, body=grpc_frame(packed, compressed=1),
                          extra=[("grpc-encoding", "gzip")])
        stream = raw.wait_closed(sid, timeout=20)
        assert stream.grpc_status == 8, stream.trailers
        assert "once decompressed" in stream.trailers["grpc-message"]
    assert vm_rss_kib(server.pid) - before < 24 * 1024
    m = server.metrics()
    assert m['agenthub_grpc_decompress_refusals_total{door="public"}'] >= 4
    assert Health(server.channel(), pb).status() == Health.SERVING


@pytest.mark.parametrize("body", [b"not gzip at all", b""])
def test_a_corrupt_compressed_message_is_internal(server, body):
    raw = server.raw()
    good = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    truncated = (good.compress(b"\x0a\x03abc") + good.flush())[:-4]
    for packed in (body, truncated):
        sid = raw.request(CHECK, body=grpc_frame(packed, compressed=1),
                          extra=[("grpc-encoding", "gzip")])
        stream = raw.wait_closed(sid)
        assert stream.grpc_status == 13, stream.trailers
        assert "cannot decompress" in stream.trailers["grpc-message"]


NODE_TESTS = os.path.join(REPO, "tests", "node")


@pytest.mark.parametrize("algorithm", ["gzip", "deflate"])
def test_grpc_js_with_compression_on_makes_every_kind_of_call(start_server, algorithm):
    """@grpc/grpc-js with grpc.default_compression_algorithm set (it never
    falls back to identity) against a provisioned server."""
    assert os.path.isdir(os.path.join(NODE_TESTS, "node_modules", "@grpc", "grpc-js")), \
        "tests/node has no node_modules: run make deps"
    s = start_server(world=True)
    out = subprocess.run(["node", os.path.join(NODE_TESTS, "grpc_compression.mjs"), s.public,
                          os.path.join(REPO, "proto"), algorithm, "t-alice"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip() == "ok: " + algorithm
    m = s.metrics()
    key = 'agenthub_grpc_compressed_messages_total{door="public",direction="%s",encoding="%s"}'
    assert m[key % ("received", algorithm)] >= 5 and m[key % ("sent", algorithm)] >= 3, m


@pytest.mark.parametrize("encoding", [None, "identity"])
def test_compressed_flag_without_supported_encoding_is_internal(server, encoding):
    raw = server.raw()
    extra = [("grpc-encoding", encoding)] if encoding else []
    sid = raw.request(CHECK, body=grpc_frame(b"", compressed=1), extra=extra)
    stream = raw.wait_closed(sid)
    assert stream.grpc_status == 13


def test_unary_with_zero_request_messages_is_unimplemented(server):
    raw = server.raw()
    sid = raw.request(UNARY)  # END_STREAM on HEADERS, no DATA
    stream = raw.wait_closed(sid)
    assert stream.grpc_status == 12
    assert stream.messages() == []


def test_unary_with_two_request_messages_is_unimplemented(server, pb):
    body = pb.echo.EchoRequest(payload=b"a").SerializeToString()
    raw = server.raw()
    sid = raw.request(UNARY, body=grpc_frame(body) + grpc_frame(body))
    stream = raw.wait_closed(sid)
    assert stream.grpc_status == 12
    assert stream.messages() == []


def test_request_ending_inside_a_message_is_internal(server, pb):
    raw = server.raw()
    sid = raw.request(UNARY, body=grpc_frame(b"\x0a\x03abc")[:-2])
    assert raw.wait_closed(sid).grpc_status == 13


def test_one_request_split_across_many_data_frames_is_reassembled(server, pb):
    payload = bytes(range(256)) * 300
    framed = grpc_frame(pb.echo.EchoRequest(payload=payload).SerializeToString())
    raw = server.raw()
    sid = raw.new_stream_id()
    raw.send_headers(sid, raw.grpc_headers(UNARY))
    for i in range(0, len(framed), 7001):
        raw.send_data(sid, framed[i:i + 7001])
    raw.send_data(sid, b"", end_stream=True)
    stream = raw.wait_closed(sid)
    assert stream.grpc_status == 0
    [(flag, body)] = stream.messages()
    assert flag == 0
    assert pb.echo.EchoResponse.FromString(body).payload == payload


def test_request_ending_with_a_trailers_block_is_served(server, pb):
    """HTTP/2 lets a client end its request with a trailing HEADERS frame
    instead of END_STREAM on DATA."""
    raw = server.raw()
    sid = raw.new_stream_id()
    raw.send_headers(sid, raw.grpc_headers(UNARY))
    raw.send_data(sid, grpc_frame(pb.echo.EchoRequest(payload=b"t").SerializeToString()))
    raw.send_headers(sid, [("x-client-trailer", "1")], end_stream=True)
    stream = raw.wait_closed(sid)
    assert stream.grpc_status == 0
    [(_, reply)] = stream.messages()
    assert pb.echo.EchoResponse.FromString(reply).payload == b"t"


def test_unparsable_request_message_is_internal(server, pb):
    echo = Echo(server.channel(), pb)
    # Field 1 (bytes) declares 5 bytes but only 2 follow.
    err = rpc_error(echo.unary_raw, b"\x0a\x05ab", timeout=10)
    assert err.code() == grpc.StatusCode.INTERNAL


# --- Message size limits -----------------------------------------------------

def echo_request_of_size(pb, size):
    """An EchoRequest whose serialized form is exactly SIZE bytes."""
    for payload_len in range(size - 6, size):
        req = pb.echo.EchoRequest(payload=b"\xab" * payload_len)
        if req.ByteSize() == size:
            return req
    raise AssertionError("no payload length gives %d bytes" % size)


def test_request_of_exactly_4_mib_works_and_4_mib_plus_1_is_resource_exhausted(server, pb):
    echo = Echo(server.channel(options=UNLIMITED), pb)
    exact = echo_request_of_size(pb, FOUR_MIB)
    reply = echo.unary(exact, timeout=30)
    assert reply.payload == exact.payload
    err = rpc_error(echo.unary, echo_request_of_size(pb, FOUR_MIB + 1), timeout=30)
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    # The connection is still good.
    assert echo.unary(echo.req(payload=b"ok"), timeout=10).payload == b"ok"


def test_oversized_declared_length_is_refused_before_the_body_arrives(server):
    raw = server.raw()
    sid = raw.new_stream_id()
    raw.send_headers(sid, raw.grpc_headers(UNARY))
    raw.send_data(sid, b"\x00" + (FOUR_MIB + 1).to_bytes(4, "big"))  # header only, no body
    stream = raw.wait_closed(sid)
    assert stream.grpc_status == 8
    # Then the server tells the still-sending client to stop.
    assert raw.wait_reset(sid) == rawh2.NO_ERROR


def test_max_recv_bytes_flag_lowers_the_limit(start_server, pb):
    server = start_server("--max-recv-bytes", "1024")
    echo = Echo(server.channel(), pb)
    exact = echo_request_of_size(pb, 1024)
    assert echo.unary(exact, timeout=10).payload == exact.payload
    err = rpc_error(echo.unary, echo_request_of_size(pb, 1025), timeout=10)
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


# --- Status messages and metadata --------------------------------------------

SPECIAL_MESSAGE = "\t\ntest with whitespace\r\nand Unicode BMP \u263a and non-BMP \U0001F608\t\n"
SPECIAL_MESSAGE_WIRE = (b"%09%0Atest with whitespace%0D%0Aand Unicode BMP %E2%98%BA "
                        b"and non-BMP %F0%9F%98%88%09%0A")


def test_grpc_message_percent_encoding_round_trips_byte_for_byte(server, pb):
    echo = Echo(server.channel(), pb)
    err = rpc_error(echo.unary, echo.req(status_code=2, status_message=SPECIAL_MESSAGE),
                    timeout=10)
    assert err.code() == grpc.StatusCode.UNKNOWN
    assert err.details() == SPECIAL_MESSAGE
    # On the wire: percent-encoded exactly, and decoding gives the UTF-8 bytes.
    raw = server.raw()
    body = pb.echo.EchoRequest(status_code=2, status_message=SPECIAL_MESSAGE).SerializeToString()
    stream = raw.wait_closed(raw.request(UNARY, body=grpc_frame(body)))
    assert stream.grpc_status == 2
    wire = stream.raw_trailer("grpc-message")
    assert urllib.parse.unquote_to_bytes(wire) == SPECIAL_MESSAGE.encode("utf-8")
    assert wire.upper() == SPECIAL_MESSAGE_WIRE.upper()


def test_percent_sign_in_grpc_message_is_encoded(server, pb):
    echo = Echo(server.channel(), pb)
    err = rpc_error(echo.unary, echo.req(status_code=9, status_message="100% sure %41"),
                    timeout=10)
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert err.details() == "100% sure %41"


@pytest.mark.parametrize("plain", [4093, 4094, 5000])
def test_long_grpc_message_is_cut_to_a_clean_prefix(server, pb, plain):
    """However long the status message, grpc-message carries whole escapes
    only: a prefix of the message, never stale bytes."""
    raw = server.raw()
    # A long plain message first, so a reused buffer would hold stale bytes.
    for message in ["b" * 6000, "a" * plain + "\u263a\u263a\u263a"]:
        body = pb.echo.EchoRequest(status_code=2, status_message=message).SerializeToString()
        stream = raw.wait_closed(raw.request(UNARY, body=grpc_frame(body)))
        assert stream.grpc_status == 2
        decoded = urllib.parse.unquote_to_bytes(stream.raw_trailer("grpc-message"))
        assert len(decoded) >= 4000
        assert message.encode("utf-8").startswith(decoded), decoded[-20:]


def test_echoed_initial_and_binary_trailing_metadata(server, pb):
    echo = Echo(server.channel(), pb)
    value = b"\x00\x01\xfe\xff\x80"
    reply, call = echo.unary.with_call(
        echo.req(payload=b"p"), timeout=10,
        metadata=(("x-grpc-test-echo-initial", "hello"),
                  ("x-grpc-test-echo-trailing-bin", value)))
    assert reply.payload == b"p"
    assert ("x-grpc-test-echo-initial", "hello") in call.initial_metadata()
    assert ("x-grpc-test-echo-trailing-bin", value) in call.trailing_metadata()


@pytest.mark.parametrize("value", [b"\xff", b"\x00\xfe", b"\x01\x02\x03", b"\xfa\xce\xb0\x0c",
                                   b"\x00\x01\xfe\xff\x80"])
@pytest.mark.parametrize("padded", [True, False])
def test_bin_metadata_accepts_padded_and_unpadded_base64(server, pb, value, padded):
    encoded = base64.b64encode(value)
    if not padded:
        encoded = encoded.rstrip(b"=")
    raw = server.raw()
    body = pb.echo.EchoRequest(payload=b"x").SerializeToString()
    sid = raw.request(UNARY, body=grpc_frame(body),
                      extra=[("x-grpc-test-echo-trailing-bin", encoded.decode())])
    stream = raw.wait_closed(sid)
    assert stream.grpc_status == 0
    wire = stream.raw_trailer("x-grpc-test-echo-trailing-bin")
    assert wire is not None, stream.trailers
    assert base64.b64decode(wire + b"=" * (-len(wire) % 4)) == value


# --- Deadlines ---------------------------------------------------------------

def hold_open_body(pb, count=1):
    return grpc_frame(pb.echo.EchoRequest(response_count=count, hold_open=True)
                      .SerializeToString())


def test_grpc_timeout_every_unit_is_parsed_and_enforced(server, pb):
    """Short timeouts in n, u, m and S fire (DEADLINE_EXCEEDED in trailers,
    then RST_STREAM CANCEL); long ones in S, M and H do not fire."""
    raw = server.raw()
    short = {"80000000n": 0.08, "80000u": 0.08, "80m": 0.08, "1S": 1.0}
    long = ["30S", "1M", "1H", "99999999H"]
    started = time.monotonic()
    sids = {}
    for value in list(short) + long:
        sids[value] = raw.request(SERVER_STREAM, body=hold_open_body(pb),
                                  extra=[("grpc-timeout", value)])
    for value, seconds in sorted(short.items(), key=lambda kv: kv[1]):
        stream = raw.wait_closed(sids[value], timeout=5)
        elapsed = time.monotonic() - started
        assert stream.ended, (value, stream.events)
        assert stream.grpc_status == 4, (value, stream.trailers)
        assert len(stream.messages()) == 1  # the message sent before the deadline
        assert elapsed >= seconds * 0.9, (value, elapsed)
        assert raw.wait_reset(sids[value]) == rawh2.CANCEL, (value, stream.events)
    assert time.monotonic() - started < 3
    raw.pump(0.2)
    for value in long:
        stream = raw.streams[sids[value]]
        assert not stream.closed, (value, stream.events)
        assert len(stream.messages()) == 1
        raw.send_rst(sids[value])


def test_deadline_mid_message_never_cuts_a_message_in_half(server, pb):
    """The deadline fires while a 100 kB response is half sent (the client's
    stream window is 64 KiB): the rest of that message still goes out
    before the DEADLINE_EXCEEDED trailers, so the client parses whole
    messages only."""
    raw = server.raw()
    raw.auto_window_update = False
    body = grpc_frame(pb.echo.EchoRequest(response_count=50, response_size=100000)
                      .SerializeToString())
    sid = raw.request(SERVER_STREAM, body=body, extra=[("grpc-timeout", "100m")])
    raw.wait(lambda: len(raw.streams[sid].data) >= 65535, timeout=5)
    time.sleep(0.3)  # the deadline passes with the first message half sent
    raw.pump(0.05)
    assert len(raw.streams[sid].data) == 65535 and not raw.streams[sid].ended
    raw.auto_window_update = True
    raw.send_frame(rawh2.WindowUpdateFrame(sid, window_increment=1 << 20))
    stream = raw.wait_closed(sid)
    assert stream.grpc_status == 4, stream.trailers
    messages = stream.messages()  # raises on a cut message
    assert len(messages) >= 1
    assert all(len(pb.echo.EchoResponse.FromString(b).payload) == 100000 for _, b in messages)


@pytest.mark.parametrize("value", ["1x", "S", "-1S", "1.5S", "123456789S", "10 S", "abc"])
def test_malformed_grpc_timeout_is_rejected(server, value):
    raw = server.raw()
    sid = raw.request(CHECK, body=grpc_frame(b""), extra=[("grpc-timeout", value)])
    stream = raw.wait_closed(sid)
    assert stream.grpc_status == 13, (value, stream.trailers)


def test_one_millisecond_deadline_on_a_stream(server, pb):
    echo = Echo(server.channel(), pb)
    responses = echo.server_stream(echo.req(response_count=1, hold_open=True), timeout=0.001)
    with pytest.raises(grpc.RpcError) as info:
        list(responses)
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    # The server itself enforces it: raw, with no client-side timer.
    raw = server.raw()
    sid = raw.request(SERVER_STREAM, body=hold_open_body(pb, 0), extra=[("grpc-timeout", "1m")])
    stream = raw.wait_closed(sid, timeout=3)
    assert stream.grpc_status == 4, stream.events
    assert raw.wait_reset(sid) == rawh2.CANCEL
    server.wait_metric(calls_key(SERVER_STREAM, "DEADLINE_EXCEEDED"), lambda v: v >= 1)
    server.wait_metric("agenthub_streams_open", lambda v: v == 0)
    server.wait_metric("agenthub_grpc_calls_open", lambda v: v == 0)


# --- Streaming ---------------------------------------------------------------

def test_server_streaming_past_the_send_bound(server, pb):
    """50 x 100 kB is well over the per-call send bound (1 MiB), so the
    handler has to be pulled through on_writable."""
    echo = Echo(server.channel(options=UNLIMITED), pb)
    responses = list(echo.server_stream(echo.req(response_count=50, response_size=100000),
                                        timeout=30))
    assert [r.index for r in responses] == list(range(50))
    assert all(len(r.payload) == 100000 for r in responses)


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_server_stream_to_a_client_that_does_not_read_stays_bounded(server, pb):
    """400 x 100 kB (40 MB) to a client whose stream window stays at 64 KiB:
    the handler is held at the send bound instead of queueing it all, and
    resumes as the client reads."""
    raw = server.raw()
    raw.auto_window_update = False
    window = {rawh2.SettingsFrame.INITIAL_WINDOW_SIZE: 65535}
    raw.send_frame(rawh2.SettingsFrame(0, settings=window))
    before = rss_kib(server.pid)
    body = grpc_frame(pb.echo.EchoRequest(response_count=400, response_size=100000)
                      .SerializeToString())
    sid = raw.request(SERVER_STREAM, body=body)
    raw.wait(lambda: len(raw.streams[sid].data) >= 65535, timeout=5)
    time.sleep(0.3)
    raw.pump(0.1)
    assert len(raw.streams[sid].data) == 65535  # exactly the window, no more
    grown = rss_kib(server.pid) - before
    assert grown < 20 * 1024, "agenthubd grew by %d KiB for one stalled stream" % grown
    # Now read: everything arrives, in order.
    raw.auto_window_update = True
    raw.send_frame(rawh2.WindowUpdateFrame(sid, window_increment=65535))
    stream = raw.wait_closed(sid, timeout=60)
    assert stream.grpc_status == 0, stream.trailers
    replies = [pb.echo.EchoResponse.FromString(b) for _, b in stream.messages()]
    assert [r.index for r in replies] == list(range(400))
    assert all(len(r.payload) == 100000 for r in replies)


def test_client_streaming(server, pb):
    echo = Echo(server.channel(), pb)
    sizes = [0, 1, 1000, 70000, 5]
    reply = echo.client_stream(iter([echo.req(payload=b"z" * n) for n in sizes]), timeout=10)
    assert reply.total_bytes == sum(sizes)
    assert reply.index == len(sizes)
    assert echo.client_stream(iter([]), timeout=10).index == 0


def test_bidi_streaming_echoes_each_message_in_order(server, pb):
    echo = Echo(server.channel(), pb)
    requests = queue.Queue()
    responses = echo.bidi(iter(requests.get, None), timeout=10)
    total = 0
    for i in range(20):
        payload = b"m%d" % i
        total += len(payload)
        requests.put(echo.req(payload=payload))
        reply = next(responses)  # answered before the next message is sent
        assert (reply.payload, reply.index, reply.total_bytes) == (payload, i, total)
    requests.put(None)
    assert list(responses) == []
    assert responses.code() == grpc.StatusCode.OK


def test_bidi_handler_can_end_the_call_with_a_status(server, pb):
    echo = Echo(server.channel(), pb)
    requests = [echo.req(payload=b"a"), echo.req(status_code=7, status_message="no")]
    responses = echo.bidi(iter(requests), timeout=10)
    assert next(responses).payload == b"a"
    with pytest.raises(grpc.RpcError) as info:
        next(responses)
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert info.value.details() == "no"


def test_1000_calls_cancelled_mid_stream_free_everything(server, pb):
    channel = server.channel()
    echo = Echo(channel, pb)
    request = echo.req(response_count=1, response_size=10, hold_open=True)
    for _ in range(10):
        calls = [echo.server_stream(request, timeout=30) for _ in range(100)]
        for call in calls:
            assert next(call).index == 0  # the call is open, mid-stream
        for call in calls:
            call.cancel()
    server.wait_metric(calls_key(SERVER_STREAM, "CANCELLED"), lambda v: v == 1000)
    server.wait_metric("agenthub_streams_open", lambda v: v == 0)
    server.wait_metric("agenthub_grpc_calls_open", lambda v: v == 0)
    # Still answering, on the same channel and on a fresh one.
    assert Health(channel, pb).status() == Health.SERVING
    assert Health(server.channel(), pb).status() == Health.SERVING


def test_100_concurrent_streams_on_one_connection(server, pb):
    channel = server.channel()
    echo = Echo(channel, pb)
    queues = [queue.Queue() for _ in range(100)]
    calls = [echo.bidi(iter(q.get, None), timeout=60) for q in queues]
    for i, q in enumerate(queues):
        q.put(echo.req(payload=b"%d" % i))
    for i, call in enumerate(calls):
        assert next(call).payload == b"%d" % i
    metrics = server.metrics()
    assert metrics["agenthub_streams_open"] == 100
    assert metrics["agenthub_grpc_calls_open"] == 100
    assert metrics["agenthub_connections_open"] == 1
    for q in queues:
        q.put(None)
    for call in calls:
        assert list(call) == []
        assert call.code() == grpc.StatusCode.OK
    assert server.metrics()[calls_key(BIDI, "OK")] == 100


def test_streams_beyond_max_concurrent_streams_are_refused(start_server, pb):
    server = start_server("--max-concurrent-streams", "5")

    def open_five():
        raw = server.raw()
        assert raw.wait(lambda: raw.settings_frames >= 1)
        assert raw.server_settings[0x3] == 5  # SETTINGS_MAX_CONCURRENT_STREAMS
        raw.pump(0.1)  # our SETTINGS ACK reaches the server first
        sids = [raw.request(SERVER_STREAM, body=hold_open_body(pb)) for _ in range(5)]
        for sid in sids:
            assert raw.wait(lambda: len(raw.streams[sid].messages()) == 1)
        return raw, sids

    # A sixth stream is refused: a stream error, or (nghttp2, once the
    # client acknowledged the limit) a connection error that spares the
    # streams already open up to last_stream_id.
    raw, sids = open_five()
    extra = raw.request(SERVER_STREAM, body=hold_open_body(pb))
    raw.wait(lambda: raw.streams[extra].closed or raw.goaway is not None)
    stream = raw.streams[extra]
    assert stream.http_status is None, stream.events
    if raw.goaway is None:
        assert stream.reset_code in (rawh2.REFUSED_STREAM, rawh2.PROTOCOL_ERROR), stream.events
    else:
        last_stream_id, code, _ = raw.goaway
        assert code == rawh2.PROTOCOL_ERROR
        assert last_stream_id < extra
    raw.close()

    # Within the limit, closing one stream makes room for the next.
    raw, sids = open_five()
    raw.send_rst(sids[0])
    server.wait_metric("agenthub_streams_open", lambda v: v == 4)
    again = raw.request(CHECK, body=grpc_frame(b""))
    assert raw.wait_closed(again).grpc_status == 0
    assert raw.goaway is None
