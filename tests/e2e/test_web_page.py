"""The pane page: served by agenthubd on the public door (its headers,
caching, HEAD, 404, --web off), then driven in headless Chromium against a
real agenthubd with the reference Runner hosting the scripted agent."""
import os
import re

import pytest

from harness import REPO

DIST = os.path.join(REPO, "web", "dist")
CSP = "default-src 'self'"


def dist_files():
    """{request path: bytes} of the committed bundle."""
    out = {}
    for name in sorted(os.listdir(DIST)):
        with open(os.path.join(DIST, name), "rb") as f:
            out["/" + name] = f.read()
    out["/"] = out["/index.html"]
    return out


def hashed_assets():
    return [p for p in dist_files() if re.search(r"-[0-9a-f]{16}\.[a-z]+$", p)]


def h2_get(server, path, method="GET", extra=()):
    """(response headers, body) of one plain HTTP/2 request on the public door."""
    conn = server.raw()
    sid = conn.new_stream_id()
    headers = [(":method", method), (":scheme", "http"), (":path", path),
               (":authority", "localhost")] + list(extra)
    conn.send_headers(sid, headers, end_stream=True)
    conn.wait_closed(sid)
    stream = conn.streams[sid]
    assert stream.ended, stream.events
    conn.close()
    return stream.headers, bytes(stream.data)


# --- Serving ------------------------------------------------------------------

def test_get_slash_serves_the_page_with_its_security_headers(start_server):
    server = start_server()
    headers, body = h2_get(server, "/")
    assert headers[":status"] == "200"
    assert body == dist_files()["/"]
    assert headers["content-type"] == "text/html; charset=utf-8"
    assert headers["content-security-policy"] == CSP
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["cache-control"] == "no-cache"
    assert re.fullmatch(r'"[0-9a-f]{32}"', headers["etag"]), headers
    assert headers["content-length"] == str(len(body))
    # The page pulls in nothing inline: every script and style is a file.
    html = body.decode()
    assert "<style" not in html and " style=" not in html
    assert re.findall(r"<script[^>]*>([^<]*)</script>", html) == [""]
    assert re.search(r"\son[a-z]+\s*=", html) is None


def test_hashed_assets_are_immutable_and_the_page_revalidates(start_server):
    server = start_server()
    files = dist_files()
    assets = hashed_assets()
    assert any(a.endswith(".js") for a in assets) and any(a.endswith(".css") for a in assets)
    for path in assets:
        headers, body = h2_get(server, path)
        assert headers[":status"] == "200", path
        assert body == files[path]
        assert headers["cache-control"] == "public, max-age=31536000, immutable"
        assert headers["content-security-policy"] == CSP
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["content-type"] == ("text/javascript; charset=utf-8"
                                           if path.endswith(".js") else "text/css; charset=utf-8")
    etag = h2_get(server, "/")[0]["etag"]
    headers, body = h2_get(server, "/", extra=[("if-none-match", etag)])
    assert headers[":status"] == "304" and body == b""
    assert headers["etag"] == etag and headers["cache-control"] == "no-cache"
    headers, body = h2_get(server, "/", extra=[("if-none-match", '"stale", W/%s' % etag)])
    assert headers[":status"] == "304"
    headers, body = h2_get(server, "/", extra=[("if-none-match", '"stale"')])
    assert headers[":status"] == "200" and body == files["/"]


def test_head_has_headers_only_and_unknown_paths_are_404(start_server):
    server = start_server()
    headers, body = h2_get(server, "/", method="HEAD")
    assert headers[":status"] == "200" and body == b""
    assert headers["content-length"] == str(len(dist_files()["/"]))
    assert headers["content-security-policy"] == CSP
    for path in ("/nope", "/app-0000000000000000.js", "/../etc/passwd", "/index.htm",
                 "/compass.v1.CompassService/NoSuchMethod"):
        headers, body = h2_get(server, path)
        assert headers[":status"] == "404", path
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["content-security-policy"] == CSP
    headers, _ = h2_get(server, "/nope", method="HEAD")
    assert headers[":status"] == "404"
    # A gRPC method's path is still a gRPC method: only POST.
    headers, _ = h2_get(server, "/compass.v1.CompassService/WhoAmI")
    assert headers[":status"] == "405"


def test_web_off_answers_404_and_grpc_is_served_beside_the_page(start_server, pb):
    from helpers import Health
    server = start_server("--web", "off")
    for path in ["/"] + hashed_assets():
        headers, _ = h2_get(server, path)
        assert headers[":status"] == "404", path
    assert Health(server.channel(), pb).status() == Health.SERVING
    on = start_server()
    assert h2_get(on, "/")[0][":status"] == "200"
    assert Health(on.channel(), pb).status() == Health.SERVING


def test_web_flag_refuses_other_values(start_server):
    import subprocess
    from harness import AGENTHUBD
    proc = subprocess.run([str(AGENTHUBD), "--db", "/nonexistent", "--listen", "127.0.0.1:0",
                           "--web", "maybe"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2, proc.stderr
    assert "--web: expected on or off, got 'maybe'" in proc.stderr
