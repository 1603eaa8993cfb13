"""gRPC-Web on the public door (gRPC's PROTOCOL-WEB), over raw HTTP/2
frames (rawh2) and raw HTTP/1.1 bytes on the same listener: framing, the
trailer frame, text mode, errors, deadlines, cancellation, the lag drop,
the membership gate, CORS and hostile input."""
import base64
import socket
import struct
import time

import pytest

import rawh2
from helpers import CHECK, SERVER_STREAM, UNARY
from harness import wait_for

WEB = "application/grpc-web+proto"
TEXT = "application/grpc-web-text"
COMPASS = "/compass.v1.CompassService/"


def frame(body, flag=0):
    return struct.pack(">BI", flag, len(body)) + body


def split_web_body(data):
    """[(flag, bytes)] of a gRPC-Web body."""
    out, at = [], 0
    while at < len(data):
        assert len(data) - at >= 5, data
        flag, n = struct.unpack(">BI", data[at:at + 5])
        out.append((flag, data[at + 5:at + 5 + n]))
        at += 5 + n
    return out


def trailer_map(block):
    fields = {}
    for line in block.decode().split("\r\n"):
        if line:
            name, value = line.split(":", 1)
            fields[name.strip()] = value.strip()
    return fields


def web_result(data):
    """(messages, trailers) of a gRPC-Web body; the trailer frame must be
    last and only once."""
    frames = split_web_body(data)
    assert frames and frames[-1][0] & 0x80, frames
    assert all(not (f & 0x80) for f, _ in frames[:-1]), frames
    return [b for _, b in frames[:-1]], trailer_map(frames[-1][1])


# --- HTTP/2 -----------------------------------------------------------------

def h2_web(raw, path, body, content_type=WEB, extra=()):
    return raw.request(path, body=body, content_type=content_type, te=None, extra=extra)


def test_h2_unary_grpc_web_trailers_in_body_and_end_stream_on_data(server, pb):
    raw = server.raw()
    sid = h2_web(raw, UNARY, frame(pb.echo.EchoRequest(payload=b"hi").SerializeToString()))
    stream = raw.wait_closed(sid)
    assert stream.http_status == 200
    assert stream.headers["content-type"] == WEB
    assert len(stream.header_blocks) == 1 and not stream.header_blocks[0][1]
    assert stream.ended, "the last DATA frame ends the stream"
    messages, trailers = web_result(bytes(stream.data))
    assert trailers["grpc-status"] == "0"
    assert pb.echo.EchoResponse.FromString(messages[0]).payload == b"hi"


def test_h2_health_check_over_grpc_web(server, pb):
    raw = server.raw()
    sid = h2_web(raw, CHECK, frame(pb.health.HealthCheckRequest().SerializeToString()),
                 content_type="application/grpc-web")
    stream = raw.wait_closed(sid)
    assert stream.headers["content-type"] == "application/grpc-web"
    messages, trailers = web_result(bytes(stream.data))
    assert trailers["grpc-status"] == "0"
    assert pb.health.HealthCheckResponse.FromString(messages[0]).status == 1


def test_h2_error_is_a_trailer_frame_not_trailers_only(server, pb):
    raw = server.raw()
    req = pb.echo.EchoRequest(status_code=5, status_message="gone 100%")
    sid = h2_web(raw, UNARY, frame(req.SerializeToString()))
    stream = raw.wait_closed(sid)
    assert stream.http_status == 200
    messages, trailers = web_result(bytes(stream.data))
    assert messages == []
    assert trailers["grpc-status"] == "5"
    assert trailers["grpc-message"] == "gone 100%25"


def test_h2_text_mode_round_trip_decodes_when_concatenated(server, pb):
    raw = server.raw()
    req = pb.echo.EchoRequest(response_count=5, response_size=7)
    sid = h2_web(raw, SERVER_STREAM, base64.b64encode(frame(req.SerializeToString())),
                 content_type=TEXT)
    stream = raw.wait_closed(sid)
    assert stream.headers["content-type"] == TEXT
    text = bytes(stream.data)
    assert text.count(b"=") <= 2 and text.rstrip(b"=").find(b"=") == -1, text
    messages, trailers = web_result(base64.b64decode(text))
    assert len(messages) == 5
    assert trailers["grpc-status"] == "0"


def test_h2_text_mode_accepts_padded_chunks(server, pb):
    raw = server.raw()
    body = frame(pb.echo.EchoRequest(payload=b"abcd").SerializeToString())
    text = base64.b64encode(body[:4]) + base64.b64encode(body[4:])
    sid = h2_web(raw, UNARY, text, content_type=TEXT)
    messages, trailers = web_result(base64.b64decode(bytes(raw.wait_closed(sid).data)))
    assert trailers["grpc-status"] == "0"
    assert pb.echo.EchoResponse.FromString(messages[0]).payload == b"abcd"


def test_h2_text_mode_rejects_non_base64(server):
    raw = server.raw()
    sid = h2_web(raw, UNARY, b"!!!!", content_type=TEXT)
    _, trailers = web_result(base64.b64decode(bytes(raw.wait_closed(sid).data)))
    assert trailers["grpc-status"] == "13"


def test_h2_grpc_web_refuses_client_streaming(server, pb):
    raw = server.raw()
    sid = h2_web(raw, "/agenthub.testing.v1.EchoService/ClientStream", frame(b""))
    _, trailers = web_result(bytes(raw.wait_closed(sid).data))
    assert trailers["grpc-status"] == "12"
