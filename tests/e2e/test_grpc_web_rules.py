"""Every rule of the native path on gRPC-Web over HTTP/1.1: authentication,
the membership gate's byte-identical NOT_FOUND, deadlines, cancellation
when the client goes away, the lag drop with agenthub-last-seq in the
trailer frame, the hostile-input bounds, and per-protocol metrics."""
import socket
import time

from rpc_harness import COMPASS, F, S, hub, start_hub, text, wait_for  # noqa: F401
from test_grpc_web import Http1, frame, split_web_body, trailer_map, web_result

SUB = COMPASS + "SubscribeAgentSession"


def sub_body(sid, since_seq=0, tail=0):
    return frame(S.SubscribeAgentSessionRequest(session_id=sid, since_seq=since_seq, tail=tail)
                 .SerializeToString())


def bearer(token):
    return [("Authorization", "Bearer " + token)] if token else []


def raw_response(address, path, body, token=None):
    """The whole HTTP/1.1 response, as bytes, of one request on its own
    connection (Connection: close, read to the end)."""
    c = Http1(address)
    c.request(path, body, headers=bearer(token) + [("Connection", "close")])
    data = b""
    c.sock.settimeout(10)
    while True:
        chunk = c.sock.recv(65536)
        if not chunk:
            break
        data += chunk
    c.close()
    return data


class WebStream:
    """A server stream over HTTP/1.1 gRPC-Web, read frame by frame."""

    def __init__(self, address, path, body, token=None, headers=(), rcvbuf=None):
        self.c = Http1(address, rcvbuf=rcvbuf)
        self.c.request(path, body, headers=bearer(token) + list(headers))
        self.status, self.headers = self.c.head()
        self.pending = b""
        self.chunks = self.c.chunks()
        self.trailers = None

    def next_frame(self):
        while True:
            if len(self.pending) >= 5:
                n = int.from_bytes(self.pending[1:5], "big")
                if len(self.pending) >= 5 + n:
                    flag, body = self.pending[0], self.pending[5:5 + n]
                    self.pending = self.pending[5 + n:]
                    if flag & 0x80:
                        self.trailers = trailer_map(body)
                        return None
                    return body
            self.pending += next(self.chunks)

    def read_to_end(self):
        messages = []
        while True:
            m = self.next_frame()
            if m is None:
                return messages, self.trailers
            messages.append(m)

    def close(self):
        self.c.close()


def test_subscribe_needs_a_caller_and_streams_frames(hub):
    r = hub.runner("runner-1")
    r.publish("sess-1", text("hello"))
    s = WebStream(hub.public, SUB, sub_body("sess-1"))
    assert s.status == 200
    assert s.read_to_end()[1]["grpc-status"] == "16"  # UNAUTHENTICATED
    s.close()
    s = WebStream(hub.public, SUB, sub_body("sess-1", tail=10), token="t-alice")
    r.publish("sess-1", text("live"))
    first = F.AgentSessionFrame.FromString(s.next_frame())
    assert first.event.assistant_text.text == "hello"
    second = F.AgentSessionFrame.FromString(s.next_frame())
    assert second.seq == first.seq + 1 and second.event.assistant_text.text == "live"
    s.close()


def test_unknown_and_forbidden_sessions_get_byte_identical_responses(hub):
    r = hub.runner("runner-2")
    r.publish("sess-2", text("live"))
    answers = {raw_response(hub.public, SUB, sub_body(sid), token="t-alice")
               for sid in ("sess-2", "sess-unknown", "SESS-1")}
    assert len(answers) == 1, answers
    answer = next(iter(answers))
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert b"grpc-status:5\r\n" in answer and b"session not found" in answer


def test_grpc_timeout_ends_a_stream_deadline_exceeded(hub):
    s = WebStream(hub.public, SUB, sub_body("sess-1"), token="t-alice",
                  headers=[("grpc-timeout", "300m")])
    messages, trailers = s.read_to_end()
    assert trailers["grpc-status"] == "4"
    s.close()


def test_a_client_that_goes_away_cancels_its_stream(hub):
    s = WebStream(hub.public, SUB, sub_body("sess-1"), token="t-alice")
    wait_for(lambda: hub.metric('agenthub_grpc_calls_open') >= 1, what="stream open")
    s.close()
    wait_for(lambda: hub.metric('agenthub_grpc_calls_open') == 0, what="stream cancelled")
    assert hub.metric('agenthub_http1_disconnects_total{door="public"}') >= 1


def test_a_subscriber_that_falls_behind_ends_ok_with_last_seq_in_the_trailer_frame(start_hub):
    # Memory alone: on disk a reader behind the ring is served from disk.
    h = start_hub(flags=["--agent-log-bytes", "262144", "--subscriber-buffer-bytes", "67108864",
                         "--log", "memory"])
    r = h.runner("runner-1")
    r.publish("sess-1", text("start"))
    s = WebStream(h.public, SUB, sub_body("sess-1"), token="t-alice", rcvbuf=4096)
    # More than the socket buffers on both sides and the connection's
    # output bound hold, so the stalled reader falls behind the ring.
    batches = 0
    while h.metric("agenthub_subscriber_lag_drops_total") < 1 and batches < 64:
        r.publish("sess-1", *[text("y" * 16384) for _ in range(16)])  # 256 KiB
        batches += 1
    messages, trailers = s.read_to_end()
    s.close()
    assert trailers["grpc-status"] == "0", trailers
    last = F.AgentSessionFrame.FromString(messages[-1])
    assert trailers["agenthub-last-seq"] == str(last.seq)
    assert last.seq < 2 + batches * 16
    assert h.metric("agenthub_subscriber_lag_drops_total") >= 1


def test_metrics_count_calls_per_protocol_and_transport(hub, pb):
    c = Http1(hub.public)
    c.request("/grpc.health.v1.Health/Check",
              frame(pb.health.HealthCheckRequest().SerializeToString()))
    assert web_result(c.response()[2])[1]["grpc-status"] == "0"
    c.close()
    key = ('agenthub_grpc_protocol_calls_total{door="public",protocol="grpc-web",'
           'transport="http1"}')
    assert hub.metric(key) >= 1


# --- hostile input -------------------------------------------------------------

def test_huge_headers_get_431_and_a_close(hub):
    c = Http1(hub.public)
    c.request(SUB, sub_body("sess-1"), headers=[("x-big", "a" * 70000)])
    status, headers, _ = c.response()
    assert status == 431
    assert c.closed_by_peer()


def test_a_huge_body_gets_413_before_it_is_read(hub):
    c = Http1(hub.public)
    c.send(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/grpc-web\r\n"
           b"Content-Length: 1000000000\r\n\r\n" % SUB.encode())
    status, _, _ = c.response()
    assert status == 413
    assert c.closed_by_peer()


def test_a_huge_chunked_body_is_cut_at_the_limit(hub):
    c = Http1(hub.public)
    c.send(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/grpc-web\r\n"
           b"Authorization: Bearer t-alice\r\nTransfer-Encoding: chunked\r\n\r\n" % SUB.encode())
    chunk = b"%x\r\n%s\r\n" % (65536, b"\x00" * 65536)
    refused = False
    try:
        for _ in range(200):  # 13 MiB, past the 4 MiB message limit
            c.send(chunk)
    except (BrokenPipeError, ConnectionResetError):
        refused = True
    c.sock.settimeout(5)
    try:
        data = c.sock.recv(65536)
    except ConnectionResetError:
        data = b""
    assert refused or data.startswith(b"HTTP/1.1 ")


def test_slow_headers_are_cut_at_the_header_timeout(start_hub):
    h = start_hub(flags=["--header-timeout-ms", "300"])
    c = Http1(h.public)
    c.send(b"POST / HTTP/1.1\r\nHost: x\r\n")
    started = time.monotonic()
    for _ in range(10):
        try:
            c.send(b"X-Slow: 1\r\n")
        except (BrokenPipeError, ConnectionResetError):
            break
        time.sleep(0.1)
    assert c.closed_by_peer(timeout=3)
    assert time.monotonic() - started < 3
    assert h.metric('agenthub_http1_request_timeouts_total{door="public"}') >= 1


def test_garbage_and_an_h2_preface_prefix_do_not_hang_or_crash(hub, pb):
    for junk in (b"\x00\x01\x02\x03\r\n\r\n", b"PRX * HTTP/2.0\r\n\r\n", b"GET\r\n\r\n",
                 b"POST / HTTP/9.9\r\n\r\n"):
        c = Http1(hub.public)
        c.send(junk)
        assert c.closed_by_peer(timeout=5)
        c.close()
    c = Http1(hub.public)
    c.request("/grpc.health.v1.Health/Check",
              frame(pb.health.HealthCheckRequest().SerializeToString()))
    assert web_result(c.response()[2])[1]["grpc-status"] == "0"


def test_a_refusal_from_the_headers_comes_before_the_body_and_keeps_the_connection(hub, pb):
    c = Http1(hub.public)
    body = sub_body("sess-1") + b"\x00" * 200000  # never read as a message
    c.send(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/grpc-web\r\n"
           b"Content-Length: %d\r\n\r\n" % (SUB.encode(), len(body)))
    status, headers, answer = c.response()  # before any body byte was sent
    assert status == 200 and web_result(answer)[1]["grpc-status"] == "16"
    c.send(body)  # read and dropped
    c.request("/grpc.health.v1.Health/Check",
              frame(pb.health.HealthCheckRequest().SerializeToString()))
    assert web_result(c.response()[2])[1]["grpc-status"] == "0"


def test_new_requests_are_refused_503_over_the_server_receive_budget(start_hub, pb):
    h = start_hub(flags=["--total-recv-budget-bytes", "1000"])
    from helpers import UNARY
    body = frame(pb.echo.EchoRequest(payload=b"p" * 3000).SerializeToString())
    held = Http1(h.public)
    held.send(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/grpc-web\r\n"
              b"Content-Length: %d\r\n\r\n" % (UNARY.encode(), len(body)) + body[:2000])
    wait_for(lambda: h.metric('agenthub_http1_recv_held_bytes{door="public"}') >= 2000,
             what="the first body held")
    other = Http1(h.public)
    other.request("/grpc.health.v1.Health/Check",
                  frame(pb.health.HealthCheckRequest().SerializeToString()))
    assert other.response()[0] == 503
    held.send(body[2000:])
    messages, trailers = web_result(held.response()[2])
    assert trailers["grpc-status"] == "0"
    wait_for(lambda: h.metric('agenthub_http1_recv_held_bytes{door="public"}') == 0,
             what="the budget given back")
    again = Http1(h.public)
    again.request("/grpc.health.v1.Health/Check",
                  frame(pb.health.HealthCheckRequest().SerializeToString()))
    assert again.response()[0] == 200
    assert h.metric('agenthub_http1_budget_refusals_total{door="public"}') == 1
