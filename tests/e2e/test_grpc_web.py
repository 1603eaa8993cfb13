"""gRPC-Web on the public door (gRPC's PROTOCOL-WEB), over raw HTTP/2
frames (rawh2) and raw HTTP/1.1 bytes on the same listener: framing, the
trailer frame, text mode, errors, deadlines, cancellation, the lag drop,
the membership gate, CORS and hostile input."""
import base64
import os
import socket
import ssl
import struct
import subprocess

import pytest

import rawh2
from helpers import CHECK, SERVER_STREAM, UNARY
from harness import REPO

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


def b64_groups(text):
    """Decodes base64 TEXT four characters at a time, as gRPC-Web clients
    do: padding may end any group."""
    assert len(text) % 4 == 0, text
    return b"".join(base64.b64decode(text[i:i + 4]) for i in range(0, len(text), 4))


def test_h2_text_mode_round_trip_decodes_in_groups_of_four(server, pb):
    raw = server.raw()
    req = pb.echo.EchoRequest(response_count=5, response_size=7)
    sid = h2_web(raw, SERVER_STREAM, base64.b64encode(frame(req.SerializeToString())),
                 content_type=TEXT)
    stream = raw.wait_closed(sid)
    assert stream.headers["content-type"] == TEXT
    messages, trailers = web_result(b64_groups(bytes(stream.data)))
    assert len(messages) == 5
    assert trailers["grpc-status"] == "0"


def test_h2_text_mode_message_decodes_before_the_next_one_is_sent(server, pb):
    # One 7-byte message (14 bytes framed, not a multiple of 3) on a stream
    # that stays open: its last bytes must not wait for a next message.
    raw = server.raw()
    req = pb.echo.EchoRequest(response_count=1, response_size=7, hold_open=True)
    sid = h2_web(raw, SERVER_STREAM, base64.b64encode(frame(req.SerializeToString())),
                 content_type=TEXT)

    def one_message():
        data = bytes(raw.streams[sid].data) if sid in raw.streams else b""
        if len(data) % 4:
            return False
        decoded = b64_groups(data)
        return len(decoded) >= 5 and len(decoded) >= 5 + struct.unpack(">I", decoded[1:5])[0]

    assert raw.wait(one_message), bytes(raw.streams[sid].data)
    body = split_web_body(b64_groups(bytes(raw.streams[sid].data)))[0][1]
    assert len(pb.echo.EchoResponse.FromString(body).payload) == 7
    assert not raw.streams[sid].closed


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


# --- HTTP/1.1 ---------------------------------------------------------------

class Http1:
    """A raw HTTP/1.1 client on one connection: requests are written as
    bytes, responses parsed by hand (chunked or content-length)."""

    def __init__(self, address, timeout=5.0, rcvbuf=None):
        host, port = address.rsplit(":", 1)
        self.sock = socket.socket()
        if rcvbuf:  # before connecting, so the window stays small
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        self.sock.connect((host, int(port)))
        self.buf = b""

    def close(self):
        self.sock.close()

    def send(self, data):
        self.sock.sendall(data)

    def request(self, path, body=b"", content_type=WEB, method="POST", headers=(),
                send=True):
        lines = ["%s %s HTTP/1.1" % (method, path), "Host: localhost"]
        if content_type:
            lines.append("Content-Type: " + content_type)
        if method in ("POST", "PUT"):
            lines.append("Content-Length: %d" % len(body))
        lines.extend("%s: %s" % h for h in headers)
        data = ("\r\n".join(lines) + "\r\n\r\n").encode() + body
        if send:
            self.send(data)
        return data

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError("connection closed")
        self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def head(self):
        status = self._line().decode()
        headers = {}
        while True:
            line = self._line().decode()
            if not line:
                break
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
        return int(status.split()[1]), headers

    def chunks(self):
        """Yields the body's chunks as they arrive (chunked responses)."""
        while True:
            size = int(self._line().split(b";")[0], 16)
            if size == 0:
                self._line()
                return
            data = self._exact(size)
            self._line()
            yield data

    def response(self):
        status, headers = self.head()
        if headers.get("transfer-encoding") == "chunked":
            body = b"".join(self.chunks())
        else:
            body = self._exact(int(headers.get("content-length", "0")))
        return status, headers, body

    def closed_by_peer(self, timeout=5.0):
        self.sock.settimeout(timeout)
        try:
            while True:
                self._fill()
        except (EOFError, ConnectionResetError):
            return True  # a reset: the server closed with input unread
        except socket.timeout:
            return False


@pytest.fixture
def h1(server):
    clients = []

    def connect(address=None):
        c = Http1(address or server.public)
        clients.append(c)
        return c

    yield connect
    for c in clients:
        c.close()


def test_http1_unary_chunked_with_trailer_frame(server, pb, h1):
    c = h1()
    c.request(UNARY, frame(pb.echo.EchoRequest(payload=b"one").SerializeToString()))
    status, headers, body = c.response()
    assert status == 200
    assert headers["content-type"] == WEB
    assert headers["transfer-encoding"] == "chunked"
    messages, trailers = web_result(body)
    assert trailers["grpc-status"] == "0"
    assert pb.echo.EchoResponse.FromString(messages[0]).payload == b"one"
    # keep-alive: a second call on the same connection
    c.request(CHECK, frame(pb.health.HealthCheckRequest().SerializeToString()),
              content_type="application/grpc-web")
    status, headers, body = c.response()
    assert web_result(body)[1]["grpc-status"] == "0"


def test_http1_server_stream_is_flushed_frame_by_frame(server, pb, h1):
    c = h1()
    req = pb.echo.EchoRequest(response_count=1, response_size=10, hold_open=True)
    c.request(SERVER_STREAM, frame(req.SerializeToString()))
    status, headers = c.head()
    assert status == 200 and headers["transfer-encoding"] == "chunked"
    first = next(c.chunks())
    flag, body = split_web_body(first)[0]
    assert flag == 0 and len(pb.echo.EchoResponse.FromString(body).payload) == 10


def test_http1_text_mode(server, pb, h1):
    c = h1()
    req = pb.echo.EchoRequest(response_count=3, response_size=4)
    c.request(SERVER_STREAM, base64.b64encode(frame(req.SerializeToString())),
              content_type=TEXT)
    status, headers, body = c.response()
    assert headers["content-type"] == TEXT
    messages, trailers = web_result(b64_groups(body))
    assert len(messages) == 3 and trailers["grpc-status"] == "0"


def test_http1_native_grpc_is_refused_with_415(server, h1):
    c = h1()
    c.request(CHECK, frame(b""), content_type="application/grpc")
    status, headers, _ = c.response()
    assert status == 415
    assert "grpc-web" in headers["grpc-message"]


def test_http1_request_that_is_not_grpc_web_gets_an_http_error(server, h1):
    c = h1()
    c.request("/nope", method="GET", content_type=None)  # GET / is the pane page
    status, headers, _ = c.response()
    assert status in (404, 405)
    c2 = h1()
    c2.send(b"garbage\r\n\r\n")
    status, _, _ = c2.response()
    assert status == 400


def test_http1_over_tls_when_alpn_chooses_it(start_server, tls_dir, pb):
    server = start_server("--tls-cert", tls_dir.server_crt, "--tls-key", tls_dir.server_key)
    host, port = server.public.rsplit(":", 1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["http/1.1"])
    c = Http1.__new__(Http1)
    c.sock = ctx.wrap_socket(socket.create_connection((host, int(port)), timeout=5))
    c.buf = b""
    assert c.sock.selected_alpn_protocol() == "http/1.1"
    for _ in range(2):  # keep-alive over TLS
        c.request(CHECK, frame(pb.health.HealthCheckRequest().SerializeToString()))
        status, headers, body = c.response()
        assert status == 200
        assert web_result(body)[1]["grpc-status"] == "0"
    c.close()


def test_http1_and_h2_share_the_listener(server, pb, h1):
    raw = server.raw()
    sid = h2_web(raw, CHECK, frame(pb.health.HealthCheckRequest().SerializeToString()))
    assert web_result(bytes(raw.wait_closed(sid).data))[1]["grpc-status"] == "0"
    c = h1()
    c.request(CHECK, frame(pb.health.HealthCheckRequest().SerializeToString()))
    assert web_result(c.response()[2])[1]["grpc-status"] == "0"


# --- CORS --------------------------------------------------------------------

ALLOWED = "https://ui.example.com"


@pytest.fixture
def cors_server(start_server):
    return start_server("--cors-origin", ALLOWED, "--cors-origin", "http://localhost:8080")


def preflight(c, origin):
    headers = [("Origin", origin), ("Access-Control-Request-Method", "POST"),
               ("Access-Control-Request-Headers", "content-type,x-grpc-web,authorization")]
    c.request(UNARY, method="OPTIONS", content_type=None, headers=headers)
    return c.response()


def test_cors_preflight_from_an_allowed_origin_over_http1(cors_server):
    c = Http1(cors_server.public)
    status, headers, _ = preflight(c, ALLOWED)
    assert status == 204
    assert headers["access-control-allow-origin"] == ALLOWED
    allowed = [h.strip() for h in headers["access-control-allow-headers"].split(",")]
    for name in ("authorization", "content-type", "x-grpc-web", "x-user-agent", "grpc-timeout"):
        assert name in allowed
    assert "POST" in headers["access-control-allow-methods"]
    assert int(headers["access-control-max-age"]) > 0
    c.close()


def test_cors_preflight_from_a_refused_origin_gets_403_without_cors_headers(cors_server):
    c = Http1(cors_server.public)
    status, headers, _ = preflight(c, "https://evil.example.com")
    assert status == 403
    assert not [h for h in headers if h.startswith("access-control-")]
    c.close()


def test_cors_actual_response_carries_allow_origin_and_exposed_headers(cors_server, pb):
    c = Http1(cors_server.public)
    c.request(UNARY, frame(pb.echo.EchoRequest(payload=b"x").SerializeToString()),
              headers=[("Origin", ALLOWED)])
    status, headers, body = c.response()
    assert headers["access-control-allow-origin"] == ALLOWED
    exposed = [h.strip() for h in headers["access-control-expose-headers"].split(",")]
    for name in ("grpc-status", "grpc-message", "agenthub-last-seq"):
        assert name in exposed
    assert web_result(body)[1]["grpc-status"] == "0"
    c.request(UNARY, frame(pb.echo.EchoRequest(payload=b"x").SerializeToString()),
              headers=[("Origin", "https://evil.example.com")])
    status, headers, body = c.response()
    assert "access-control-allow-origin" not in headers
    c.close()


def test_cors_preflight_over_h2(cors_server):
    raw = cors_server.raw()
    sid = raw.new_stream_id()
    raw.send_headers(sid, [(":method", "OPTIONS"), (":scheme", "http"), (":path", UNARY),
                           (":authority", "localhost"), ("origin", ALLOWED),
                           ("access-control-request-method", "POST")], end_stream=True)
    stream = raw.wait_closed(sid)
    assert stream.http_status == 204
    assert stream.headers["access-control-allow-origin"] == ALLOWED


def test_no_cors_origin_by_default_refuses_every_preflight(server):
    c = Http1(server.public)
    status, headers, _ = preflight(c, ALLOWED)
    assert status == 403
    c.close()


def test_a_malformed_cors_origin_is_a_usage_error(start_server):
    with pytest.raises(AssertionError) as info:
        start_server("--cors-origin", "https://ui.example.com/path")
    assert "--cors-origin" in str(info.value)


# --- Connect's gRPC-Web client for Node ----------------------------------------

NODE_DIR = os.path.join(REPO, "tests", "node")


def test_node_connect_grpc_web_transport_over_http1_and_h2(start_server):
    """@connectrpc/connect-node's createGrpcWebTransport, httpVersion "1.1"
    and "2", with the code protoc-gen-es made for proto/ (tests/node/gen,
    committed; checked for staleness below)."""
    from rpc_harness import Hub, text
    h = Hub(flags=["--cors-origin", "http://localhost:5173"])
    try:
        h.runner("runner-1").publish("sess-1", text("hello"))
        out = subprocess.run(["node", os.path.join(NODE_DIR, "grpc_web.mjs"), "http://" + h.public,
                              "http://localhost:5173"], capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "ok: gRPC-Web over HTTP/1.1" in out.stdout
        assert "ok: gRPC-Web over HTTP/2" in out.stdout
        assert "ok: CORS preflights" in out.stdout
        key = 'agenthub_grpc_protocol_calls_total{door="public",protocol="grpc-web",transport="%s"}'
        assert h.metric(key % "http1") > 0 and h.metric(key % "h2") > 0
    finally:
        h.stop()


def test_node_generated_code_is_up_to_date(tmp_path):
    plugin = os.path.join(NODE_DIR, "node_modules", ".bin", "protoc-gen-es")
    files = ["compass/v1/services.proto", "compass/v1/frames.proto", "grpc/health/v1/health.proto",
             "agenthub/testing/v1/echo.proto"]
    subprocess.run(["protoc", "--plugin=protoc-gen-es=" + plugin, "--es_out=" + str(tmp_path),
                    "--es_opt=target=js,import_extension=js", "-I" + os.path.join(REPO, "proto")]
                   + files, check=True)
    out = subprocess.run(["diff", "-r", str(tmp_path), os.path.join(NODE_DIR, "gen")],
                         capture_output=True, text=True)
    assert out.returncode == 0, "tests/node/gen is stale; regenerate it:\n" + out.stdout
