"""The Connect protocol on both doors: connect-node's own client
(createConnectTransport, binary and JSON) and curl, against agenthubd.

- tests/node/connect_client.mjs: unary, errors with their codes, a Runner's
  Enroll, bidi Sessions (HTTP/2) and client-streaming PublishEvents, and a
  server-streaming pane that ends with its agenthub-last-seq trailer, per
  HTTP version and message format; the per-protocol metrics.
- curl: unary JSON and its errors as whole HTTP responses, the membership
  gate's not_found byte for byte, bidi refused over HTTP/1.1,
  Connect-Timeout-Ms, malformed input, metadata, every stream kind.
- raw HTTP/2: the lag drop's agenthub-last-seq in the end-of-stream
  message; cancellation when the client goes away.
"""
import json
import os
import shutil
import struct
import subprocess

import pytest

import harness
from rpc_harness import COMPASS, F, S, RawStream, start_hub, text  # noqa: F401

NODE_TESTS = os.path.join(harness.REPO, "tests", "node")
STATUS = "/compass.v1.CompassService/GetAgentStatus"


@pytest.fixture(scope="module")
def descriptor_set(tmp_path_factory):
    path = tmp_path_factory.mktemp("connect") / "set.pb"
    protos = sorted(os.path.relpath(os.path.join(d, f), os.path.join(harness.REPO, "proto"))
                    for d, _, fs in os.walk(os.path.join(harness.REPO, "proto")) for f in fs
                    if f.endswith(".proto"))
    subprocess.run(["protoc", "--include_imports", "--descriptor_set_out=%s" % path,
                    "-I" + os.path.join(harness.REPO, "proto")] + protos, check=True)
    return str(path)


def speaks_http1(server):
    """1 when the public door answers an HTTP/1.1 request (the HTTP/1.1
    transport is built in)."""
    out = curl(server, "/compass.v1.CompassService/WhoAmI", b"{}", http2=False,
               headers={"Content-Type": "application/json"})
    return out.startswith(b"HTTP/1.1 ")


def curl(server, path, body, http2=True, headers=None, door="public"):
    """The whole HTTP response (status line, headers, body) curl received."""
    assert shutil.which("curl"), "curl is missing: run make deps"
    args = ["curl", "-s", "-i", "--max-time", "20", "--data-binary", "@-"]
    if http2:
        args.append("--http2-prior-knowledge")
    for name, value in (headers or {}).items():
        args += ["-H", "%s: %s" % (name, value)]
    args.append("http://%s%s" % (server.addr[door], path))
    return subprocess.run(args, input=body, capture_output=True, timeout=30).stdout


def split(response):
    """(status, headers dict, body) of a curl -i response."""
    head, _, body = response.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, body


def envelopes(body):
    """[(flags, payload)] of an enveloped Connect stream body."""
    out = []
    while body:
        flags, length = struct.unpack(">BI", body[:5])
        out.append((flags, body[5:5 + length]))
        body = body[5 + length:]
    return out


def envelope(payload, flags=0):
    return struct.pack(">BI", flags, len(payload)) + payload


@pytest.mark.parametrize("http_version", ["2", "1.1"])
@pytest.mark.parametrize("fmt", ["binary", "json"])
def test_connect_node_client(start_server, descriptor_set, http_version, fmt):
    assert os.path.isdir(os.path.join(NODE_TESTS, "node_modules", "@connectrpc", "connect-node")), \
        "tests/node has no node_modules: run make deps"
    s = start_server(world=True)
    if http_version == "1.1" and not speaks_http1(s):
        pytest.skip("this build has no HTTP/1.1 transport")
    out = subprocess.run(["node", os.path.join(NODE_TESTS, "connect_client.mjs"), descriptor_set,
                          s.public, s.runner_addr, http_version, fmt],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    bidi = ["ok bidi"] if http_version == "2" else []
    assert out.stdout.split("\n")[:-1] == [
        "ok unary", "ok errors"] + bidi + ["ok client streaming", "ok server streaming with trailers"]
    m = s.metrics()
    transport = "h2" if http_version == "2" else "http1"
    protocol = "connect-json" if fmt == "json" else "connect"
    for door in ("public", "runner"):
        key = ('agenthub_grpc_protocol_calls_total{door="%s",protocol="%s",transport="%s"}'
               % (door, protocol, transport))
        assert m[key] >= 2, (key, m)


@pytest.mark.parametrize("http2", [True, False])
def test_curl_unary_json_and_errors(start_server, http2):
    s = start_server(world=True)
    if not http2 and not speaks_http1(s):
        pytest.skip("this build has no HTTP/1.1 transport")
    json_ct = {"Content-Type": "application/json"}

    def call(token, body, path=STATUS, extra=None):
        headers = dict(json_ct, **(extra or {}))
        if token:
            headers["Authorization"] = "Bearer " + token
        return curl(s, path, body, http2=http2, headers=headers)

    # The README's line: bob's status of sess-1.
    status, headers, body = split(call("t-bob", b'{"sessionId":"sess-1"}'))
    assert status == 200 and headers["content-type"] == "application/json"
    doc = json.loads(body)
    assert doc["statuses"][0]["sessionId"] == "sess-1"

    # The gate: carol's view of a session she may not see is the very
    # response an unknown id gets, byte for byte.
    hidden = call("t-carol", b'{"sessionId":"sess-1"}')
    unknown = call("t-carol", b'{"sessionId":"sess-nope"}')
    assert hidden == unknown
    status, headers, body = split(hidden)
    assert status == 404 and headers["content-type"] == "application/json"
    assert json.loads(body)["code"] == "not_found"

    # Errors carry the spec's HTTP status for their code.
    cases = [
        (None, b'{"sessionId":"sess-1"}', {}, 401, "unauthenticated"),
        ("t-bob", b'{"sessionIdx":"a"}', {}, 400, "invalid_argument"),
        ("t-bob", b'{"sessionId":', {}, 400, "invalid_argument"),
        ("t-bob", b'{"sessionId":"a","session_id":"b"}', {}, 400, "invalid_argument"),
        ("t-bob", b'{}', {"Connect-Protocol-Version": "2"}, 400, "invalid_argument"),
        ("t-bob", b'{}', {"Content-Encoding": "br"}, 501, "unimplemented"),
        ("t-bob", b'{}', {"Connect-Timeout-Ms": "soon"}, 400, "invalid_argument"),
    ]
    for token, body, extra, want_status, want_code in cases:
        status, headers, out = split(call(token, body, extra=extra))
        assert (status, json.loads(out)["code"]) == (want_status, want_code), (body, extra, out)
    status, _, out = split(call("t-bob", b"{}", path="/compass.v1.CompassService/Nope"))
    assert (status, json.loads(out)["code"]) == (501, "unimplemented")
    # A streaming method does not take a unary content type.
    status, _, out = split(call("t-bob", b"{}", path="/compass.v1.CompassService/SubscribeEvents"))
    assert (status, json.loads(out)["code"]) == (501, "unimplemented")

    # Bidi streams need HTTP/2: over HTTP/1.1 Sessions is refused in its
    # end-of-stream message.
    if not http2:
        status, headers, body = split(curl(
            s, "/compass.v1.RunnerService/Sessions", envelope(b""), http2=False, door="runner",
            headers={"Content-Type": "application/connect+proto",
                     "Authorization": "Bearer t-runner-1"}))
        (flags, payload), = envelopes(body)
        assert status == 200 and flags == 0x02
        assert json.loads(payload)["error"] == {"code": "unimplemented",
                                                "message": "bidi streams need HTTP/2"}

    # Protobuf unary: a bare message both ways.
    status, headers, body = split(curl(s, "/compass.v1.CompassService/WhoAmI", b"", http2=http2,
                                       headers={"Content-Type": "application/proto",
                                                "Authorization": "Bearer t-bob"}))
    assert status == 200 and headers["content-type"] == "application/proto"
    assert body == b"\x0a\x03bob"


def test_request_body_over_the_limit_is_resource_exhausted(start_server):
    s = start_server("--max-recv-bytes", "1024", world=True)
    big = json.dumps({"sessionId": "x" * 4096}).encode()
    status, _, body = split(curl(s, STATUS, big, headers={"Content-Type": "application/json",
                                                          "Authorization": "Bearer t-bob"}))
    assert (status, json.loads(body)["code"]) == (429, "resource_exhausted")


def test_stream_deadline_from_connect_timeout_ms(start_server):
    """A server stream that never ends by itself ends deadline_exceeded in
    its end-of-stream message, HTTP 200 as the spec has it."""
    s = start_server(world=True)
    out = curl(s, "/agenthub.testing.v1.EchoService/ServerStream",
               envelope(b'{"holdOpen":true,"responseCount":1}'),
               headers={"Content-Type": "application/connect+json", "Connect-Timeout-Ms": "300"})
    status, headers, body = split(out)
    if status == 501:
        pytest.skip("this build has no EchoService")
    assert status == 200 and headers["content-type"] == "application/connect+json"
    frames = envelopes(body)
    assert frames[-1][0] == 0x02, frames
    end = json.loads(frames[-1][1])
    assert end["error"]["code"] == "deadline_exceeded", end
    assert all(f == 0 for f, _ in frames[:-1])


def test_stream_errors_and_trailers_in_the_end_of_stream_message(start_server):
    s = start_server(world=True)
    # A pane of an unknown session: not_found, after HTTP 200.
    status, _, body = split(curl(s, "/compass.v1.CompassService/SubscribeAgentSession",
                                 envelope(b'{"sessionId":"sess-nope"}'),
                                 headers={"Content-Type": "application/connect+json",
                                          "Authorization": "Bearer t-bob"}))
    assert status == 200
    (flags, payload), = envelopes(body)
    assert flags == 0x02 and json.loads(payload)["error"]["code"] == "not_found"
    # The end-of-stream message is the only place a client-sent flag 0x02
    # is legal on the wire: a client sending one is refused.
    status, _, body = split(curl(s, "/compass.v1.CompassService/SubscribeEvents",
                                 envelope(b"{}", flags=0x02),
                                 headers={"Content-Type": "application/connect+json",
                                          "Authorization": "Bearer t-bob"}))
    (flags, payload), = envelopes(body)
    assert flags == 0x02 and "error" in json.loads(payload)


def test_a_connect_subscriber_that_falls_behind_ends_with_the_last_seq(start_hub):
    """The lag drop over Connect: the pane ends without an error, and the
    end-of-stream message's metadata carries agenthub-last-seq, the seq of
    the last frame it delivered."""
    # Memory alone: on disk a reader behind the ring is served from disk.
    h = start_hub(flags=["--agent-log-bytes", "262144", "--subscriber-buffer-bytes", "67108864",
                         "--log", "memory"])
    r = h.runner("runner-1")
    r.publish("sess-1", text("start"))
    slow = RawStream(h.public, COMPASS + "SubscribeAgentSession",
                     S.SubscribeAgentSessionRequest(session_id="sess-1").SerializeToString(),
                     token="t-alice", content_type="application/connect+proto")
    for _ in range(8):
        r.publish("sess-1", *[text("y" * 16384) for _ in range(16)])  # 2 MiB in all
    slow.read_to_end()
    slow.close()
    assert dict(slow.headers)[b":status"] == b"200"
    frames = envelopes(bytes(slow.data))
    assert frames and frames[-1][0] == 0x02
    end = json.loads(frames[-1][1])
    assert "error" not in end, end
    delivered = [F.AgentSessionFrame.FromString(p) for f, p in frames[:-1]]
    assert all(f == 0 for f, _ in frames[:-1])
    assert delivered, "the slow subscriber got nothing before the drop"
    assert end["metadata"]["agenthub-last-seq"] == [str(delivered[-1].seq)]
    assert delivered[-1].seq < 2 + 8 * 16
    assert h.metric("agenthub_subscriber_lag_drops_total") >= 1


def test_a_connect_stream_is_cancelled_when_its_client_goes_away(start_hub):
    h = start_hub()
    proc = subprocess.Popen(
        ["curl", "-s", "--http2-prior-knowledge", "--data-binary", "@-",
         "-H", "Content-Type: application/connect+json", "-H", "Authorization: Bearer t-bob",
         "http://%s%sSubscribeAgentSession" % (h.public, COMPASS)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    proc.stdin.write(envelope(b'{"sessionId":"sess-1"}'))
    proc.stdin.close()
    try:
        h.wait_metric("agenthub_session_subscribers", lambda v: v == 1)
    finally:
        proc.kill()
        proc.wait()
    h.wait_metric("agenthub_session_subscribers", lambda v: v == 0)


ECHO = "/agenthub.testing.v1.EchoService/"


def test_metadata_and_errors_through_the_echo_service(start_server):
    s = start_server()
    meta = {"x-grpc-test-echo-initial": "hi", "x-grpc-test-echo-trailing-bin": "AAEC"}
    out = curl(s, ECHO + "Unary", b'{"payload":"AAEC/w=="}',
               headers=dict(meta, **{"Content-Type": "application/json"}))
    status, headers, body = split(out)
    if status == 501:
        pytest.skip("this build has no EchoService")
    # Unary: initial metadata as headers, trailing ones prefixed trailer-.
    assert status == 200 and headers["x-grpc-test-echo-initial"] == "hi"
    assert headers["trailer-x-grpc-test-echo-trailing-bin"] == "AAEC"
    assert json.loads(body) == {"payload": "AAEC/w==", "totalBytes": "4"}

    # A handler's status and message, quotes and bytes that are not UTF-8
    # included, come back as valid error JSON with the code's HTTP status.
    status, headers, body = split(curl(
        s, ECHO + "Unary", b'{"statusCode":7,"statusMessage":"no \\"way\\" \\u00e9"}',
        headers={"Content-Type": "application/json"}))
    assert status == 403 and headers["content-type"] == "application/json"
    assert json.loads(body) == {"code": "permission_denied", "message": 'no "way" \u00e9'}

    # A server stream: enveloped JSON messages, then the end-of-stream
    # message with the trailing metadata.
    status, headers, body = split(curl(
        s, ECHO + "ServerStream", envelope(b'{"responseCount":3,"responseSize":2}'),
        headers=dict(meta, **{"Content-Type": "application/connect+json"})))
    assert status == 200 and headers["x-grpc-test-echo-initial"] == "hi"
    frames = envelopes(body)
    assert [f for f, _ in frames] == [0, 0, 0, 2]
    assert [json.loads(p).get("index", 0) for _, p in frames[:3]] == [0, 1, 2]
    assert json.loads(frames[3][1]) == {"metadata": {"x-grpc-test-echo-trailing-bin": ["AAEC"]}}

    # Client streaming and bidi (HTTP/2) with protobuf messages.
    pb = harness.protos().echo
    two = envelope(pb.EchoRequest(payload=b"ab").SerializeToString()) + \
        envelope(pb.EchoRequest(payload=b"cde").SerializeToString())
    status, headers, body = split(curl(s, ECHO + "ClientStream", two,
                                       headers={"Content-Type": "application/connect+proto"}))
    frames = envelopes(body)
    assert status == 200 and [f for f, _ in frames] == [0, 2]
    assert pb.EchoResponse.FromString(frames[0][1]).total_bytes == 5
    assert json.loads(frames[1][1]) == {}
    status, headers, body = split(curl(s, ECHO + "Bidi", two,
                                       headers={"Content-Type": "application/connect+proto"}))
    frames = envelopes(body)
    assert status == 200 and frames[-1] == (2, b"{}") and len(frames) >= 3
