"""The pane page: served by agenthubd on the public door (its headers,
caching, HEAD, 404, --web off), then driven in headless Chromium against a
real agenthubd with the reference Runner hosting the scripted agent."""
import json
import os
import re
import subprocess
import time
from urllib.parse import urlsplit

import grpc
import pytest

import harness
from harness import BUILD, REPO, wait_for

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


def h1_get(server, path, method="GET", headers=None):
    """(status, {lowercase header: value}, body) of one HTTP/1.1 request."""
    import http.client
    host, _, port = server.public.rpartition(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        body = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body
    finally:
        conn.close()


def test_the_page_over_http1_on_the_same_listener(start_server):
    server = start_server()
    files = dist_files()
    status, headers, body = h1_get(server, "/")
    assert status == 200 and body == files["/"]
    assert headers["content-security-policy"] == CSP
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["cache-control"] == "no-cache"
    status, headers304, body = h1_get(server, "/", headers={"If-None-Match": headers["etag"]})
    assert status == 304 and body == b"" and headers304["etag"] == headers["etag"]
    for path in hashed_assets():
        status, headers, body = h1_get(server, path)
        assert status == 200 and body == files[path]
        assert headers["cache-control"] == "public, max-age=31536000, immutable"
    status, headers, body = h1_get(server, "/", method="HEAD")
    assert status == 200 and body == b""
    assert headers["content-length"] == str(len(files["/"]))
    status, headers, _ = h1_get(server, "/nope")
    assert status == 404 and headers["content-security-policy"] == CSP
    off = start_server("--web", "off")
    assert h1_get(off, "/")[0] == 404


def test_web_flag_refuses_other_values(start_server):
    from harness import AGENTHUBD
    proc = subprocess.run([str(AGENTHUBD), "--db", "/nonexistent", "--listen", "127.0.0.1:0",
                           "--web", "maybe"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2, proc.stderr
    assert "--web: expected on or off, got 'maybe'" in proc.stderr


# --- In headless Chromium -------------------------------------------------------
#
# Over plaintext the browser speaks HTTP/1.1 to the public door (gRPC-Web
# with chunked server streams); it speaks HTTP/2 only over TLS, so the
# "h2" runs serve the door with TLS (deploy/make-tls.sh's self-signed
# certificate, which the browser is told to accept) and the Runner
# connects with --tls.

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
AGENT = os.path.join(REPO, "tests", "agents", "scripted-agent")
PY = "/usr/bin/python3"
COMPASS = "/compass.v1.CompassService/"
WAIT = 30.0


class WebWorld:
    """agenthubd on the demo world (TLS on its doors when TLS is given);
    Runners for sess-1; unary CompassService calls for the test itself."""

    def __init__(self, tmp, tls, flags=(), world=True):
        self.tmp = tmp
        self.tls = tls
        tls_flags = ["--tls-cert", tls.server_crt, "--tls-key", tls.server_key] if tls else []
        self.server = harness.Server(world=world, workdir=tmp / "agenthubd", stop_timeout=15.0,
                                     flags=tls_flags + list(flags))
        self.runners = []
        self._channel = None

    @property
    def scheme(self):
        return "https" if self.tls else "http"

    @property
    def url(self):
        return "%s://%s/" % (self.scheme, self.server.public)

    def channel(self):
        if self._channel is None and self.tls:
            with open(self.tls.server_crt, "rb") as f:
                creds = grpc.ssl_channel_credentials(root_certificates=f.read())
            self._channel = grpc.secure_channel(self.server.public, creds)
        elif self._channel is None:
            self._channel = grpc.insecure_channel(self.server.public)
        return self._channel

    def call(self, method, request, response_type, token="t-alice"):
        fn = self.channel().unary_unary(COMPASS + method,
                                        request_serializer=request.SerializeToString,
                                        response_deserializer=response_type.FromString)
        return fn(request, metadata=[("authorization", "Bearer " + token)], timeout=20)

    def runner(self, agent, *extra, sessions=("sess-1",)):
        log = open(self.tmp / ("runner-%d.log" % len(self.runners)), "w")
        tls = ["--tls", "--ca", self.tls.server_crt] if self.tls else []
        hosted = [a for sid in sessions for a in ("--session", sid)]
        proc = subprocess.Popen(
            [str(BUILD / "agenthub-runner"), "--addr", self.server.runner_addr, *tls, "--token",
             "t-runner-1", *hosted, "--agent", agent, *extra],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        self.runners.append((proc, log))
        return proc

    def runner_log(self):
        return "\n".join(open(log.name).read() for _, log in self.runners)

    def close(self):
        if self._channel is not None:
            self._channel.close()
        for proc, log in self.runners:
            if proc.poll() is None:
                proc.terminate()
            proc.wait(timeout=15)
            log.close()
        if not self.server.stopped:
            self.server.stop()


@pytest.fixture
def make_web(tmp_path, tls_dir):
    """make_web(*agenthubd_flags, tls=False, world=True) -> a WebWorld,
    closed at teardown: plaintext (the browser speaks HTTP/1.1), or with tls
    TLS (the browser speaks HTTP/2); world as harness.Server takes it."""
    worlds = []

    def make(*flags, tls=False, world=True):
        worlds.append(WebWorld(tmp_path, tls_dir if tls else None, flags, world))
        return worlds[-1]

    try:
        yield make
    finally:
        for world in worlds:
            world.close()


@pytest.fixture
def web(make_web):
    """Plaintext: the browser speaks HTTP/1.1."""
    return make_web()


@pytest.fixture(params=["http1", "h2"])
def web_both(request, make_web):
    """Each test twice: HTTP/1.1 (plaintext), then HTTP/2 (TLS)."""
    return make_web(tls=request.param == "h2")


class Cutter:
    """A TCP relay in front of the public door that can cut every
    connection through it and refuse new ones for a while: a network drop
    the browser cannot tell from a real one."""

    def __init__(self, target):
        import socket
        import threading
        self.target = target
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.down = False
        self.closed = False
        self.pairs = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        import socket
        import threading
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.down:
                client.close()
                continue
            host, _, port = self.target.rpartition(":")
            try:
                upstream = socket.create_connection((host, int(port)), timeout=5)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.pairs.append((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a, b):
        import select
        socks = [a, b]
        try:
            while True:
                readable, _, _ = select.select(socks, [], [], 1.0)
                if self.closed:
                    break
                for s in readable:
                    data = s.recv(65536)
                    if not data:
                        return
                    (b if s is a else a).sendall(data)
        except (OSError, ValueError):
            pass
        finally:
            a.close()
            b.close()

    def cut(self):
        """Closes every connection and refuses new ones until restore()."""
        import socket
        self.down = True
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for a, b in pairs:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def restore(self):
        self.down = False

    def close(self):
        self.closed = True
        self.cut()
        self.listener.close()


@pytest.fixture
def cutter_for():
    cutters = []

    def make(web):
        cutters.append(Cutter(web.server.public))
        return cutters[-1]

    try:
        yield make
    finally:
        for c in cutters:
            c.close()


class Browser:
    """One headless Chromium (as root: --no-sandbox) through chromedriver,
    with its console and network logs on."""

    def __init__(self, tmp):
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
        opts = Options()
        opts.binary_location = CHROMIUM
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--ignore-certificate-errors", "--window-size=1280,900", "--no-first-run",
                    "--no-default-browser-check", "--disable-extensions", "--disable-sync",
                    "--disable-background-networking", "--disable-component-update",
                    "--user-data-dir=%s" % (tmp / "chromium-profile")):
            opts.add_argument(arg)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER,
                                                       log_path=str(tmp / "chromedriver.log")),
                                       options=opts)
        self.driver.set_page_load_timeout(WAIT)
        self.driver.set_script_timeout(WAIT)
        self.requests = []  # (document, URL) of every request (the network log)
        self.console = []

    def quit(self):
        self.driver.quit()

    def new_tab(self):
        """A second tab: its own sessionStorage, so its own token."""
        self.driver.switch_to.new_window("tab")
        return self.driver.current_window_handle

    def tab(self, handle):
        self.driver.switch_to.window(handle)

    def collect_logs(self):
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method") == "Network.requestWillBeSent":
                params = message["params"]
                self.requests.append((params.get("documentURL", ""), params["request"]["url"]))
        self.console.extend(self.driver.get_log("browser"))

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def js_async(self, script, *args):
        return self.driver.execute_async_script(script, *args)

    def text(self, css):
        return self.js("const e = document.querySelector(arguments[0]);"
                       "return e ? e.textContent : null;", css)

    def status(self):
        return self.text("#status")

    def visible(self, css):
        return self.js("const e = document.querySelector(arguments[0]);"
                       "return !!e && e.offsetParent !== null;", css)

    def wait(self, predicate, what, timeout=WAIT):
        return wait_for(predicate, timeout, 0.05, what=lambda: "%s (status %r)\n%s" % (
            what, self.status(), self.pane_dump()))

    def sign_in(self, url, token):
        self.driver.get(url)
        self.wait(lambda: self.status() == "signed out", "the sign-in form")
        self.driver.find_element("css selector", "#token").send_keys(token)
        self.driver.find_element("css selector", "#login").click()
        self.wait(lambda: self.status() in ("live", "reconnecting"), "signing in")
        self.wait(lambda: self.status() == "live", "the sessions stream")

    def open(self, session_id):
        self.js("location.hash = '#session=' + encodeURIComponent(arguments[0]);", session_id)

    def sessions(self):
        return self.js("return [...document.querySelectorAll('#sessions [data-session-id]')]"
                       ".map(e => [e.dataset.sessionId, e.dataset.state]);")

    def frames(self):
        """[(seq, type, log, text)] of the pane's frame elements, in order."""
        return [(int(s), t, log, text) for s, t, log, text in self.js(
            "return [...document.querySelectorAll('#pane [data-seq]')]"
            ".map(e => [e.dataset.seq, e.dataset.type, e.dataset.log, e.textContent]);")]

    def pane_dump(self):
        try:
            return "pane: %s" % (self.frames()[-12:],)
        except Exception as e:  # the page may be gone
            return "pane: (%s)" % e


@pytest.fixture
def browser(tmp_path):
    b = Browser(tmp_path)
    try:
        yield b
    finally:
        b.quit()


def assert_consecutive(frames):
    """Seqs within each log strictly +1: nothing twice, nothing skipped."""
    by_log = {}
    for seq, _, log, _ in frames:
        by_log.setdefault(log, []).append(seq)
    for log, seqs in by_log.items():
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), (log, seqs)


def test_bob_watches_sess1_live_frames_in_seq_order(web_both, browser, tmp_path, pb):
    web = web_both
    browser.sign_in(web.url, "t-bob")
    browser.wait(lambda: any(s[0] == "sess-1" for s in browser.sessions()), "sess-1 in the list")
    browser.driver.find_element("css selector", '#sessions [data-session-id="sess-1"] a').click()
    browser.wait(lambda: browser.status() == "live", "the pane")
    assert browser.frames() == []
    web.runner("%s %s --speed 2" % (PY, AGENT))
    # Frames show while the agent runs, not only once it is done.
    browser.wait(lambda: 0 < len(browser.frames()) and "Fixed:" not in browser.text("#pane"),
                 "the first frames")
    browser.wait(lambda: "and the unit suite passes." in browser.text("#pane"),
                 "the script's last words", timeout=60)
    browser.wait(lambda: browser.frames()[-1][1] == "state", "the final state")
    frames = browser.frames()
    assert frames[0][0] == 1
    assert_consecutive(frames)
    types = {f[1] for f in frames}
    assert {"state", "thinking", "assistant_text", "plan", "tool_call", "tool_call_update",
            "record", "notice"} <= types, types
    # The same frames a native gRPC subscriber replays, in the same order.
    frames_pb, services = pb.frames, pb.services
    stream = web.channel().unary_stream(
        COMPASS + "SubscribeAgentSession",
        request_serializer=services.SubscribeAgentSessionRequest.SerializeToString,
        response_deserializer=frames_pb.AgentSessionFrame.FromString)(
            services.SubscribeAgentSessionRequest(session_id="sess-1", tail=1000,
                                                  agenthub_events=True),
            metadata=[("authorization", "Bearer t-bob")], timeout=20)
    native = []
    for frame in stream:
        native.append(frame.seq)
        if frame.seq == frames[-1][0]:
            break
    stream.cancel()
    assert [f[0] for f in frames] == native
    # Streamed text joins one paragraph per message; tool updates join their call.
    assert browser.js("return [...document.querySelectorAll('#pane p.assistant')]"
                      ".map(p => p.dataset.messageId)") == ["m2", "m3"]
    assert browser.js("return [...document.querySelectorAll('#pane p.thinking')]"
                      ".map(p => p.dataset.messageId)") == ["m1"]
    assert browser.js("return document.querySelector('#pane .tool[data-tool-call-id=\"t1\"]')"
                      ".querySelectorAll('[data-seq]').length") == 2
    assert browser.js("return document.querySelectorAll('#pane .attention').length") >= 2
    shot = tmp_path / "pane.png"
    assert browser.driver.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    browser.collect_logs()
    assert not [e for e in browser.console if e["level"] == "SEVERE"], browser.console
    # The browser spoke what the door was meant to give it.
    protocols = set(browser.js("return performance.getEntriesByType('navigation')"
                               ".concat(performance.getEntriesByType('resource'))"
                               ".map(e => e.nextHopProtocol);"))
    assert protocols == {"h2" if web.tls else "http/1.1"}, protocols
    # The token stays in this tab's sessionStorage and off every URL.
    assert browser.js("return sessionStorage.getItem('agenthub-token')") == "t-bob"
    assert browser.js("return localStorage.length") == 0
    assert browser.requests and not [u for _, u in browser.requests if "t-bob" in u]


def test_a_refused_token_signs_out_and_sign_out_forgets_the_token(web, browser):
    browser.driver.get(web.url)
    browser.wait(lambda: browser.status() == "signed out", "the sign-in form")
    browser.driver.find_element("css selector", "#token").send_keys("t-wrong")
    browser.driver.find_element("css selector", "#login").click()
    browser.wait(lambda: "refused" in (browser.text("#signin-error") or ""), "the refusal")
    assert browser.status() == "signed out"
    assert browser.js("return sessionStorage.getItem('agenthub-token')") is None
    browser.sign_in(web.url, "t-bob")
    assert browser.text("#whoami") in ("bob", "")
    browser.wait(lambda: browser.text("#whoami") == "bob", "WhoAmI")
    # A reload keeps the tab signed in; signing out forgets the token.
    browser.driver.refresh()
    browser.wait(lambda: browser.status() == "live", "signed in after a reload")
    browser.driver.find_element("css selector", "#logout").click()
    browser.wait(lambda: browser.status() == "signed out", "signed out")
    assert browser.js("return sessionStorage.getItem('agenthub-token')") is None


def test_an_ended_session_shows_as_ended(web, browser):
    browser.sign_in(web.url, "t-bob")
    browser.open("sess-1")
    browser.wait(lambda: browser.status() == "live", "the pane")
    web.runner("%s %s --script idle --exit-after-script" % (PY, AGENT))
    browser.wait(lambda: browser.status() == "ended", "the end", timeout=60)
    assert browser.text("#state") in ("stopped", "errored")
    browser.wait(lambda: ["sess-1", browser.text("#state")] in browser.sessions(),
                 "the list's state")
    # Opened afterwards, it replays what is retained and shows ended too.
    browser.open("")
    browser.open("sess-1")
    browser.wait(lambda: browser.status() == "ended", "ended on reopening")
    assert browser.frames()


def test_carol_sees_the_same_not_found_for_sess1_as_for_an_unknown_id(web, browser):
    web.runner("%s %s --script idle" % (PY, AGENT))
    browser.sign_in(web.url, "t-carol")
    for session_id in ("sess-1", "no-such-session"):
        browser.open(session_id)
        browser.wait(lambda: browser.status() == "not found", "not found for " + session_id)
        assert browser.frames() == []
        assert browser.text("#pane-title") == session_id
    assert all(s[0] != "sess-1" for s in browser.sessions())
    # The gRPC-Web answers themselves are the same bytes (the page cannot
    # tell them apart, nor can anyone else).
    browser.open("")
    bodies = browser.js_async("""
        const done = arguments[arguments.length - 1];
        const frame = (id) => { const s = new TextEncoder().encode(id);
            const b = new Uint8Array(7 + s.length); b[4] = 2 + s.length; b[5] = 10; b[6] = s.length;
            b.set(s, 7); return b; };
        const ask = (id) => fetch('/compass.v1.CompassService/SubscribeAgentSession', {method: 'POST',
            headers: {'content-type': 'application/grpc-web+proto', 'x-grpc-web': '1',
                      'authorization': 'Bearer t-carol'}, body: frame(id)})
            .then(r => r.arrayBuffer()).then(b => Array.from(new Uint8Array(b)));
        Promise.all([ask('sess-1'), ask('no-such-session')]).then(done, e => done(String(e)));
    """)
    assert isinstance(bodies, list) and bodies[0] == bodies[1], bodies
    assert b"grpc-status:5" in bytes(bodies[0])


def rpcs_sent(browser, method):
    """How many calls of METHOD this tab's page has made (Resource Timing
    records every fetch by its URL)."""
    return browser.js("return performance.getEntriesByType('resource')"
                      ".filter(e => e.name.endsWith('/compass.v1.CompassService/' + arguments[0]))"
                      ".length", method)


def test_alice_skips_the_batch_window_and_bob_never_sees_the_button(web, browser):
    web.runner("%s %s --script idle" % (PY, AGENT), "--batch-window-ms", "60000")
    alice = browser.driver.current_window_handle
    browser.sign_in(web.url, "t-alice")
    browser.open("sess-1")
    browser.wait(lambda: browser.text("#state") == "ready", "the idle agent")
    browser.wait(lambda: browser.js("return document.querySelector('#batch').dataset.mayControl")
                 == "true", "alice's control")
    bob = browser.new_tab()
    browser.sign_in(web.url, "t-bob")
    browser.open("sess-1")
    browser.wait(lambda: browser.js("return document.querySelector('#batch').dataset.mayControl")
                 == "false", "bob's lack of control")
    # Learning the role is read-only: no page calls SkipBatchWindow by itself.
    assert rpcs_sent(browser, "SkipBatchWindow") == 0
    assert rpcs_sent(browser, "GetAgentStatus") >= 1
    # Bob may not send: the server's refusal shows beside the box.
    browser.driver.find_element("css selector", "#send").send_keys("from bob")
    browser.driver.find_element("css selector", "#send-button").click()
    browser.wait(lambda: (browser.text("#send-result") or "").startswith("not sent"),
                 "bob's refusal")
    browser.tab(alice)
    browser.driver.find_element("css selector", "#send").send_keys("please also lint")
    browser.driver.find_element("css selector", "#send-button").click()
    browser.wait(lambda: browser.text("#send-result") == "sent", "alice's message")
    browser.tab(bob)
    browser.wait(lambda: browser.visible("#batch") and browser.text("#batch-count") == "1",
                 "bob sees the pending batch")
    assert not browser.visible("#skip-batch")
    browser.tab(alice)
    browser.wait(lambda: browser.visible("#skip-batch"), "alice's button")
    assert browser.text("#batch-count") == "1"
    assert "delivered in" in browser.text("#batch-countdown")
    assert rpcs_sent(browser, "SkipBatchWindow") == 0
    browser.driver.find_element("css selector", "#skip-batch").click()
    # The batch fires long before its 60 s window: the agent answers it.
    browser.wait(lambda: any(f[3].startswith("Got 1 message(s): please also lint")
                             for f in browser.frames()), "the agent's answer", timeout=20)
    assert not browser.visible("#batch")
    browser.wait(lambda: rpcs_sent(browser, "SkipBatchWindow") == 1, "the one click's call")
    browser.tab(bob)
    browser.wait(lambda: any(f[3].startswith("Got 1 message(s)") for f in browser.frames()),
                 "bob sees the answer")
    assert not browser.visible("#skip-batch") and not browser.visible("#batch")


HOSTILE_AGENT = r'''
import json, sys
HOSTILE = ["<img src=x onerror=\"window.__pwned='img'\">",
           "<script>window.__pwned='script'</script>",
           "<img src=\"https://example.invalid/pixel.png\">",
           "<a href=\"javascript:window.__pwned='link'\">x</a><b>bold</b>&amp;"]
def emit(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
emit({"state": "WORKING"})
for i, h in enumerate(HOSTILE):
    emit({"assistant_text": {"text": h, "message_id": "m%d" % i}})
    emit({"thinking": {"text": h, "message_id": "t%d" % i}})
    emit({"tool_call": {"tool_call_id": "c%d" % i, "title": h, "status": "IN_PROGRESS"}})
    emit({"tool_call_update": {"tool_call_id": "c%d" % i, "status": "COMPLETED", "output": h}})
    emit({"notice": {"text": h}})
    emit({"plan": {"entries": [{"content": h, "status": "PENDING"}]}})
emit({"record": {"type": "ask", "data": {"tool_name": HOSTILE[0]}}, "state": "BLOCKED"})
emit({"state": "READY"})
for line in sys.stdin:
    pass
'''


def test_html_in_frames_is_shown_as_text_and_runs_nothing(web, browser, tmp_path):
    from selenium.common.exceptions import NoAlertPresentException
    agent = tmp_path / "hostile_agent.py"
    agent.write_text(HOSTILE_AGENT)
    web.runner("%s %s" % (PY, agent))
    browser.sign_in(web.url, "t-alice")
    browser.open("sess-1")
    browser.wait(lambda: len(browser.frames()) >= 4 * 6 + 3, "every hostile frame")
    texts = [f[3] for f in browser.frames()]
    for needle in ("<img src=x onerror=\"window.__pwned='img'\">",
                   "<script>window.__pwned='script'</script>",
                   "<img src=\"https://example.invalid/pixel.png\">",
                   "<a href=\"javascript:window.__pwned='link'\">x</a><b>bold</b>&amp;"):
        assert sum(needle in t for t in texts) >= 5, (needle, texts)
    assert browser.js("return document.querySelectorAll('#pane img, #pane script, #pane a, "
                      "#pane b, #pane iframe').length") == 0
    assert browser.js("return window.__pwned === undefined")
    try:
        browser.driver.switch_to.alert
        raise AssertionError("a dialog opened")
    except NoAlertPresentException:
        pass
    browser.collect_logs()
    origin = urlsplit(web.url)
    ours = [url for document, url in browser.requests
            if urlsplit(document)[:2] == origin[:2]]
    assert ours, browser.requests
    for url in ours:
        assert urlsplit(url)[:2] == origin[:2], url
    assert not [e for e in browser.console if "Content Security Policy" in e["message"]], \
        browser.console


# Emits "frame N" as assistant text while the file GO exists; while it does
# not, it says how many it has written in the file PAUSED.
GATED_AGENT = r'''
import json, os, sys, time
go, paused = sys.argv[1], sys.argv[2]
n = 0
print(json.dumps({"state": "WORKING"}), flush=True)
while True:
    if os.path.exists(go):
        if os.path.exists(paused):
            os.unlink(paused)
        n += 1
        print(json.dumps({"assistant_text": {"text": "frame %d" % n, "message_id": "m%d" % n}}),
              flush=True)
        time.sleep(0.005)
    else:
        if not os.path.exists(paused):
            with open(paused + ".tmp", "w") as f:
                f.write(str(n))
            os.replace(paused + ".tmp", paused)
        time.sleep(0.01)
'''


class Gated:
    """GATED_AGENT under a Runner, and the page's view of its frames."""

    def __init__(self, web, browser, tmp_path):
        self.browser = browser
        self.go, self.paused = tmp_path / "go", tmp_path / "paused"
        agent = tmp_path / "gated_agent.py"
        agent.write_text(GATED_AGENT)
        self.go.touch()
        web.runner("%s %s %s %s" % (PY, agent, self.go, self.paused))

    def shown(self):
        return [f[3] for f in self.browser.frames() if f[1] == "assistant_text"]

    def pause(self):
        """Stops the agent; returns how many frames it wrote."""
        self.go.unlink()
        wait_for(self.paused.exists, WAIT, 0.02, what="the agent to pause")
        return int(self.paused.read_text())

    def resume(self):
        self.go.touch()
        wait_for(lambda: not self.paused.exists(), WAIT, 0.02, what="the agent to resume")


def test_a_network_drop_resumes_from_the_last_frame_shown(web, browser, tmp_path, cutter_for):
    gated = Gated(web, browser, tmp_path)
    net = cutter_for(web)
    browser.sign_in("%s://%s/" % (web.scheme, net.address), "t-bob")
    browser.open("sess-1")
    browser.wait(lambda: len(gated.shown()) >= 30, "frames before the drop")
    net.cut()
    browser.wait(lambda: browser.status() == "reconnecting", "the page to notice")
    net.restore()
    browser.wait(lambda: len(gated.shown()) >= 200, "frames after the drop")
    last = gated.pause()
    browser.wait(lambda: gated.shown()[-1:] == ["frame %d" % last], "frame %d" % last)
    assert gated.shown() == ["frame %d" % n for n in range(1, last + 1)]
    frames = browser.frames()
    assert_consecutive(frames)
    assert len({f[2] for f in frames}) == 1
    assert browser.js("return document.querySelectorAll('#pane [data-marker]').length") == 0


def test_frames_evicted_while_away_get_a_marker_then_a_fresh_tail(make_web, browser, tmp_path,
                                                                  cutter_for):
    # Memory alone: on disk the frames would be served from disk instead.
    web = make_web("--agent-log-bytes", "65536", "--session-log-budget-bytes", "65536",
                   "--log", "memory")
    gated = Gated(web, browser, tmp_path)
    net = cutter_for(web)
    browser.sign_in("%s://%s/" % (web.scheme, net.address), "t-bob")
    browser.open("sess-1")
    browser.wait(lambda: len(gated.shown()) >= 30, "frames before the drop")
    before = gated.pause()
    browser.wait(lambda: gated.shown()[-1:] == ["frame %d" % before], "frame %d" % before)
    net.cut()
    browser.wait(lambda: browser.status() == "reconnecting", "the page to notice")
    gated.resume()
    # Far more than the 64 KiB log holds, so what came after the page's
    # last frame is gone by the time it is back.
    wait_for(lambda: web.server.metric("agenthub_frames_accepted_total") >= before + 3000, WAIT,
             0.1, what="frames while the page is away")
    after = gated.pause()
    net.restore()
    browser.wait(lambda: gated.shown()[-1:] == ["frame %d" % after], "frame %d" % after)
    marker = browser.js("const m = document.querySelector('#pane [data-marker=evicted]');"
                        "return m && m.textContent;")
    assert marker and "frames were evicted" in marker
    shown = gated.shown()
    first_after = int(shown[before].split()[1])
    assert shown[:before] == ["frame %d" % n for n in range(1, before + 1)]
    assert first_after > before + 1
    assert shown[before:] == ["frame %d" % n for n in range(first_after, after + 1)]
    assert_consecutive(browser.frames()[:before + 1])


def restart_mid_session(web, browser, tmp_path):
    """The pane of sess-1 across a server restart: every frame once, in
    order.  Returns (the pane's logs, its "restarted" markers)."""
    gated = Gated(web, browser, tmp_path)
    go, shown, pause = gated.go, gated.shown, gated.pause
    paused = gated.paused
    browser.sign_in(web.url, "t-bob")
    browser.open("sess-1")

    browser.wait(lambda: len(shown()) >= 30, "frames before the restart")
    before = pause()
    browser.wait(lambda: shown()[-1:] == ["frame %d" % before], "frame %d" % before)
    web.server.stop()
    browser.wait(lambda: browser.status() == "reconnecting", "the page to notice")
    go.touch()  # the agent goes on while the server is down: its Runner holds the frames
    wait_for(lambda: not paused.exists(), WAIT, 0.02, what="the agent to resume")
    web.server.start()
    browser.wait(lambda: browser.status() == "live", "the page to reconnect")
    browser.wait(lambda: len(shown()) >= before + 50, "frames after the restart")
    after = pause()
    browser.wait(lambda: shown()[-1:] == ["frame %d" % after], "frame %d" % after)
    assert shown() == ["frame %d" % n for n in range(1, after + 1)]
    frames = browser.frames()
    assert_consecutive(frames)
    return len({f[2] for f in frames}), browser.js(
        "return document.querySelectorAll('#pane [data-marker=restarted]').length")


def test_a_server_restart_mid_session_resumes_without_duplicate_or_gap(web_both, browser,
                                                                       tmp_path):
    # The session log is on disk: one log across the restart, and no marker.
    assert restart_mid_session(web_both, browser, tmp_path) == (1, 0)


def test_a_restart_of_a_server_whose_log_is_in_memory_shows_a_new_log(make_web, browser,
                                                                      tmp_path):
    # --log memory: the restarted server's log starts again, once marked.
    assert restart_mid_session(make_web("--log", "memory"), browser, tmp_path) == (2, 1)


# 5,000 frames at about 1,000 a second, then as fast as the pipe takes them
# up to TOTAL; then it waits.
FLOOD_AGENT = r'''
import json, sys, time
total = int(sys.argv[1])
out = sys.stdout
print(json.dumps({"state": "WORKING"}), flush=True)
start = time.monotonic()
for n in range(1, total + 1):
    out.write(json.dumps({"assistant_text": {"text": "frame %d" % n, "message_id": "m%d" % (n // 50)}}) + "\n")
    if n <= 5000 and n % 10 == 0:
        out.flush()
        time.sleep(max(0.0, start + n / 1000.0 - time.monotonic()))
out.flush()
for line in sys.stdin:
    pass
'''


def test_the_pane_keeps_up_with_a_100000_frame_session_and_caps_its_dom(web, browser, tmp_path):
    total = 100000
    agent = tmp_path / "flood_agent.py"
    agent.write_text(FLOOD_AGENT)
    browser.sign_in(web.url, "t-bob")
    browser.open("sess-1")
    browser.wait(lambda: browser.status() == "live", "the pane")
    web.runner("%s %s %d" % (PY, agent, total))
    started = time.monotonic()
    browser.wait(lambda: "frame %d" % total in (browser.text("#pane") or ""),
                 "the last frame", timeout=240)
    took = time.monotonic() - started
    count = browser.js("return document.querySelectorAll('#pane [data-seq]').length")
    assert 0 < count <= 2000, count
    frames = browser.frames()
    # Whatever is shown is in order; frames skipped for speed or evicted by
    # the server are said so by a marker, never silently.
    seqs = [f[0] for f in frames]
    assert seqs == sorted(set(seqs))
    if seqs != list(range(seqs[0], seqs[0] + len(seqs))):
        assert browser.js("return document.querySelectorAll('#pane [data-marker]').length") > 0
    print("100000 frames shown in %.1f s (%.0f frames/s)" % (took, total / took))


# --- The board -------------------------------------------------------------------

# The page's columns, by the state names `agenthub list --json` prints.
COLUMN_OF = {"blocked": "needs", "starting": "working", "working": "working", "ready": "idle",
             "idle": "idle", "done": "idle"}


def board(browser):
    """{session id: (column, state)} of the board's cards."""
    return {sid: (col, state) for sid, col, state in browser.js(
        "return [...document.querySelectorAll('#sessions [data-session-id]')]"
        ".map(e => [e.dataset.sessionId, e.dataset.column, e.dataset.state]);")}


def header_counts(browser):
    return browser.js("const o = {}; for (const e of document.querySelectorAll("
                      "'#counts [data-count]')) o[e.dataset.count] = +e.textContent; return o;")


def listed_counts(web, token):
    """The board's columns counted from what `agenthub list --json` says."""
    from harness import AGENTHUB
    out = subprocess.run([str(AGENTHUB), "list", "--json"], capture_output=True, text=True,
                         timeout=30, env=dict(os.environ, AGENTHUB_ADDR=web.server.public,
                                              AGENTHUB_TOKEN=token), check=True).stdout
    counts = {"needs": 0, "working": 0, "idle": 0, "stopped": 0}
    for line in out.splitlines():
        counts[COLUMN_OF.get(json.loads(line)["state"], "stopped")] += 1
    return counts


def column_of(browser, sid):
    return board(browser).get(sid, (None, None))[0]


def test_cards_move_through_the_columns_as_the_agent_works(make_web, browser):
    web = make_web(world=harness.world_with(
        sessions=[{"id": "sess-3", "container": "ctr-1", "owner": "bob"}]))
    browser.sign_in(web.url, "t-alice")
    browser.wait(lambda: set(board(browser)) == {"sess-1", "sess-3"}, "alice's two sessions")
    # Nothing runs yet: both sit in Stopped, and the counts are `agenthub list`'s.
    assert header_counts(browser) == listed_counts(web, "t-alice") == \
        {"needs": 0, "working": 0, "idle": 0, "stopped": 2}
    web.runner("%s %s --speed 1" % (PY, AGENT))
    seen = []

    def moved():
        col = column_of(browser, "sess-1")
        if col and (not seen or seen[-1] != col):
            seen.append(col)
        return seen[-1:] == ["idle"] and "needs" in seen

    browser.wait(moved, "sess-1 through its states", timeout=60)
    # WORKING, then the permission wait, then WORKING again, then READY.
    assert seen[seen.index("working"):] == ["working", "needs", "working", "idle"], seen
    assert column_of(browser, "sess-3") == "stopped"
    assert header_counts(browser) == listed_counts(web, "t-alice") == \
        {"needs": 0, "working": 0, "idle": 1, "stopped": 1}
    card = '#sessions [data-session-id="sess-1"]'
    assert browser.text(card + " .card-id") == "sess-1"
    assert "agent-1" in browser.text(card + " .card-meta")
    # Its container and owner, as GetAgentStatus gives them, as text only.
    assert browser.text(card + " .card-where") == "in ctr-1 · owner alice"
    assert browser.text('#sessions [data-session-id="sess-3"] .card-where') == \
        "in ctr-1 · owner bob"
    assert browser.js("return document.querySelector(arguments[0]).childElementCount",
                      card + " .card-where") == 0
    # The latest activity: the agent's last words.
    browser.wait(lambda: "unit suite passes." in browser.text(card + " .card-activity"),
                 "the latest activity")
    # Time in state goes on without asking the server.
    calls = rpcs_sent(browser, "GetAgentStatus")
    first = browser.text(card + " .card-since")
    assert first.startswith("ready ")
    browser.wait(lambda: browser.text(card + " .card-since") != first, "time in state advancing")
    assert rpcs_sent(browser, "GetAgentStatus") == calls


def test_the_needs_you_column_shows_the_ask_as_words(web, browser):
    browser.sign_in(web.url, "t-alice")
    web.runner("%s %s --speed 1" % (PY, AGENT))
    card = '#sessions [data-session-id="sess-1"]'
    browser.wait(lambda: column_of(browser, "sess-1") == "needs", "the permission wait",
                 timeout=60)
    browser.wait(lambda: browser.text(card + " .card-activity") ==
                 "Waiting for permission to run Bash", "the ask in words")
    assert browser.js("return document.querySelector(arguments[0]).classList.contains('needs')",
                      card)
    assert header_counts(browser)["needs"] == 1


# Reports WORKING; with the file BLOCK present, asks for Bash and waits
# (BLOCKED), saying "still waiting N" once; without it, works again.
ASKING_AGENT = r'''
import json, os, sys, time
block = sys.argv[1]
def emit(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
emit({"state": "WORKING"})
blocked, n = False, 0
while True:
    if os.path.exists(block) and not blocked:
        blocked, n = True, n + 1
        emit({"record": {"type": "ask", "data": {"tool_name": "Bash"}}, "state": "BLOCKED"})
        emit({"assistant_text": {"text": "still waiting %d" % n, "message_id": "w%d" % n}})
    elif not os.path.exists(block) and blocked:
        blocked = False
        emit({"state": "WORKING"})
    time.sleep(0.02)
'''

# Records every Notification the page makes (and whether it was closed).
NOTIFICATION_SPY = r'''
(() => {
  const Real = window.Notification;
  if (!Real) return;
  window.__notes = [];
  class Spy extends Real {
    constructor(title, options) {
      const rec = {title, body: options && options.body, closed: false};
      window.__notes.push(rec);
      super(title, options);
      const close = this.close.bind(this);
      this.close = () => { rec.closed = true; close(); };
    }
  }
  window.Notification = Spy;
})();
'''


# Holds every GetAgentStatus answer until window.__releaseStatus() is called;
# window.__statusAnswered says the server has answered (its state is fixed).
HOLD_STATUS = r'''
(() => {
  const real = window.fetch.bind(window);
  let release;
  const held = new Promise((r) => { release = r; });
  window.__releaseStatus = () => release();
  window.__statusAnswered = false;
  window.fetch = async (input, init) => {
    const url = typeof input === "string" ? input : input.url;
    const response = await real(input, init);
    if (!url.includes("/GetAgentStatus")) return response;
    const body = await response.arrayBuffer();
    window.__statusAnswered = true;
    await held;
    return new Response(body, {status: response.status, statusText: response.statusText,
                               headers: response.headers});
  };
})();
'''


def test_a_snapshot_answered_before_a_status_event_does_not_undo_it(web, browser, tmp_path):
    """The board asks GetAgentStatus once its events stream is open; a status
    event newer than that answer can arrive first.  The older answer must not
    move the card back (here: Needs you back to Working for good)."""
    agent = tmp_path / "asking_agent.py"
    agent.write_text(ASKING_AGENT)
    block = tmp_path / "block"
    web.runner("%s %s %s" % (PY, agent, block))
    harness.wait_for(lambda: listed_counts(web, "t-alice")["working"] == 1,
                     what="sess-1 working on the server")
    browser.driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument",
                                   {"source": HOLD_STATUS})
    browser.sign_in(web.url, "t-alice")
    browser.wait(lambda: browser.js("return window.__statusAnswered"), "the held snapshot")
    block.touch()
    browser.wait(lambda: column_of(browser, "sess-1") == "needs", "the BLOCKED event")
    browser.js("window.__releaseStatus()")
    deadline = time.time() + 1.5
    while time.time() < deadline:
        assert column_of(browser, "sess-1") == "needs", board(browser)
        time.sleep(0.05)


def test_a_blocked_session_sets_the_title_favicon_and_one_notification(web, browser, tmp_path):
    agent = tmp_path / "asking_agent.py"
    agent.write_text(ASKING_AGENT)
    block = tmp_path / "block"
    web.runner("%s %s %s" % (PY, agent, block))
    browser.driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument",
                                   {"source": NOTIFICATION_SPY})
    browser.driver.execute_cdp_cmd("Browser.grantPermissions", {
        "origin": web.url.rstrip("/"), "permissions": ["notifications"]})
    browser.sign_in(web.url, "t-alice")
    browser.wait(lambda: column_of(browser, "sess-1") == "working", "sess-1 working")
    icon = lambda: browser.js("return document.querySelector('link[rel=icon]')"  # noqa: E731
                              ".getAttribute('href')")
    notes = lambda: browser.js("return window.__notes")  # noqa: E731
    assert browser.driver.title == "agenthub" and icon() == "/favicon.svg"
    assert browser.js("return document.documentElement.dataset.notifications") == "granted"
    assert not browser.visible("#notify")  # allowed already: no button to ask
    card = '#sessions [data-session-id="sess-1"]'
    for n in (1, 2):
        block.touch()
        browser.wait(lambda: browser.driver.title == "(1) agenthub", "the title count")
        assert icon() == "/favicon-alert.svg"
        assert browser.js("return document.querySelector(arguments[0]).classList"
                          ".contains('needs')", card)
        # A later event of the same wait (the card's latest activity) makes
        # no second notification.
        browser.wait(lambda: browser.js("return document.querySelector(arguments[0])"
                                        ".title", card + " .card-activity") ==
                     "still waiting %d" % n, "the wait's next event")
        assert [(x["title"], x["body"]) for x in notes()] == \
            [("sess-1 needs you", "Waiting for permission to run Bash")] * n
        block.unlink()
        browser.wait(lambda: browser.driver.title == "agenthub", "the title cleared")
        assert icon() == "/favicon.svg"
        assert column_of(browser, "sess-1") == "working"
        assert notes()[-1]["closed"]  # leaving Needs you takes it away
        assert len(notes()) == n
    # A session already blocked when the page loads is counted, not announced.
    block.touch()
    browser.wait(lambda: browser.driver.title == "(1) agenthub", "blocked again")
    browser.driver.refresh()
    browser.wait(lambda: browser.status() == "live", "signed in after a reload")
    browser.wait(lambda: column_of(browser, "sess-1") == "needs", "the board after the reload")
    browser.wait(lambda: browser.driver.title == "(1) agenthub", "the count after the reload")
    assert icon() == "/favicon-alert.svg"
    assert notes() == []


def three_sessions():
    return harness.world_with(sessions=[{"id": "sess-3", "container": "ctr-1", "owner": "bob"},
                                        {"id": "sess-4", "container": "ctr-1", "owner": "alice"}])


def focused_card(browser):
    return browser.js("const c = document.activeElement && document.activeElement"
                      ".closest('[data-session-id]'); return c && c.dataset.sessionId;")


def press(browser, *keys):
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(browser.driver).send_keys(*keys).perform()


def test_keys_move_between_cards_enter_opens_and_escape_comes_back(make_web, browser):
    from selenium.webdriver.common.keys import Keys
    web = make_web(world=three_sessions())
    browser.sign_in(web.url, "t-alice")
    browser.wait(lambda: len(board(browser)) == 3, "three cards")
    assert browser.js("return location.hash") in ("", "#board")
    press(browser, "j")
    assert focused_card(browser) == "sess-1"
    press(browser, "j")
    assert focused_card(browser) == "sess-3"
    press(browser, Keys.ARROW_DOWN)
    assert focused_card(browser) == "sess-4"
    press(browser, "k")
    assert focused_card(browser) == "sess-3"
    press(browser, Keys.ARROW_UP)
    assert focused_card(browser) == "sess-1"
    press(browser, Keys.ENTER)
    browser.wait(lambda: browser.js("return location.hash") == "#session=sess-1", "the pane")
    assert browser.visible("#pane") and not browser.visible("#board")
    assert browser.text("#pane-title") == "sess-1"
    press(browser, Keys.ESCAPE)
    browser.wait(lambda: browser.js("return location.hash") == "#board", "back on the board")
    assert browser.visible("#board") and not browser.visible("#view")
    assert focused_card(browser) == "sess-1"  # on the card just left


def test_the_filter_keeps_the_cards_that_match_by_text_and_state(make_web, browser):
    from selenium.webdriver.support.ui import Select
    web = make_web(world=three_sessions())
    web.runner("%s %s --script idle" % (PY, AGENT))
    browser.sign_in(web.url, "t-alice")
    browser.wait(lambda: column_of(browser, "sess-1") == "idle" and len(board(browser)) == 3,
                 "the board")
    shown = lambda: sorted(browser.js(  # noqa: E731
        "return [...document.querySelectorAll('#sessions [data-session-id]')]"
        ".filter(e => e.offsetParent !== null).map(e => e.dataset.sessionId)"))
    assert shown() == ["sess-1", "sess-3", "sess-4"]
    box = browser.driver.find_element("css selector", "#filter")
    box.send_keys("SESS-4")
    assert shown() == ["sess-4"]
    box.clear()
    box.send_keys("ready")  # the state's name matches too
    assert shown() == ["sess-1"]
    box.clear()
    box.send_keys("bob")  # the owner matches too
    assert shown() == ["sess-3"]
    box.clear()
    box.send_keys("s")
    state = Select(browser.driver.find_element("css selector", "#state-filter"))
    state.select_by_value("stopped")
    assert shown() == ["sess-3", "sess-4"]
    state.select_by_value("needs")
    assert shown() == []
    state.select_by_value("")
    assert shown() == ["sess-1", "sess-3", "sess-4"]


PHONE = {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True}


def small_targets(browser, scope):
    """Visible controls under SCOPE smaller than 44x44 px."""
    return browser.js("""
        const out = [];
        for (const e of document.querySelectorAll(arguments[0])) {
            if (e.offsetParent === null) continue;
            const r = e.getBoundingClientRect();
            if (r.width < 44 || r.height < 44) out.push([e.id || e.className || e.tagName,
                                                         r.width, r.height]);
        }
        return out;""", ", ".join("%s %s" % (scope, t) for t in (
            "button", "a", "input", "select", "summary")))


def no_horizontal_scroll(browser):
    return browser.js("return document.documentElement.scrollWidth <= window.innerWidth")


def test_on_a_phone_the_board_is_one_column_and_the_pane_full_screen(make_web, browser):
    web = make_web(world=three_sessions())
    web.runner("%s %s --speed 10" % (PY, AGENT))
    browser.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", PHONE)
    browser.sign_in(web.url, "t-alice")
    browser.wait(lambda: len(board(browser)) == 3, "the board")
    assert browser.js("return window.innerWidth") == 390
    assert no_horizontal_scroll(browser)
    # One column: every column starts at the same x, one below the other,
    # under the counts.
    boxes = browser.js("return [...document.querySelectorAll('#sessions .column')]"
                       ".map(c => { const r = c.getBoundingClientRect(); return [r.left, r.top]; })")
    assert len({round(x) for x, _ in boxes}) == 1, boxes
    assert [y for _, y in boxes] == sorted(y for _, y in boxes)
    assert browser.js("return document.querySelector('#counts').getBoundingClientRect().bottom"
                      " <= document.querySelector('#sessions').getBoundingClientRect().top")
    assert small_targets(browser, "#board") == []
    assert small_targets(browser, "header") == []
    # Each card names its container and owner inside the phone's width.
    where = '#sessions [data-session-id="sess-1"] .card-where'
    assert browser.text(where) == "in ctr-1 · owner alice"
    assert browser.visible(where)
    assert browser.js("return document.querySelector(arguments[0]).getBoundingClientRect()"
                      ".right <= window.innerWidth", where)
    browser.open("sess-1")
    browser.wait(lambda: "and the unit suite passes." in (browser.text("#pane") or ""),
                 "the script's last words", timeout=60)
    assert browser.visible("#back") and not browser.visible("#board")
    assert no_horizontal_scroll(browser)
    pane = browser.js("const r = document.querySelector('#view').getBoundingClientRect();"
                      "return [r.left, r.right];")
    assert pane[0] < 20 and pane[1] > 370, pane
    assert small_targets(browser, "#view") == []
    browser.driver.find_element("css selector", "#back").click()
    browser.wait(lambda: browser.visible("#board"), "back on the board")


def test_the_pane_reads_plans_asks_tools_and_thinking(web, browser):
    browser.sign_in(web.url, "t-alice")
    browser.open("sess-1")
    web.runner("%s %s --speed 10" % (PY, AGENT))
    browser.wait(lambda: "and the unit suite passes." in (browser.text("#pane") or ""),
                 "the script's last words", timeout=60)
    # The latest plan is a checklist with its progress.
    plan = browser.js("const p = document.querySelector('#pane .plan.current'); return [p.dataset"
                      ".done, p.dataset.total, p.querySelector('.plan-progress').textContent,"
                      " p.querySelectorAll('li[data-status=done]').length];")
    assert plan == ["3", "3", "Plan: 3 of 3 done", 3]
    assert "Plan: 1 of 3 done" in browser.text("#pane")
    # The ask reads as a sentence; its raw record is folded away.
    ask = browser.js("const r = document.querySelector('#pane [data-record-type=ask]');"
                     "return [r.querySelector('.record-text').textContent,"
                     " r.querySelector('details.record-raw').open,"
                     " r.querySelector('details.record-raw pre').textContent];")
    assert ask[0] == "Waiting for permission to run Bash"
    assert "{" not in ask[0] and ask[1] is False and '"tool_name": "Bash"' in ask[2]
    # A tool call is one folded line with its status and duration.
    tool = browser.js("const t = document.querySelector('#pane .tool[data-tool-call-id=t1]');"
                      "return [t.tagName, t.open, t.querySelector('.tool-status').textContent,"
                      " t.querySelector('.tool-title').textContent, t.dataset.durationMs,"
                      " t.querySelector('.tool-duration').textContent];")
    assert tool[:4] == ["DETAILS", False, "done", "Read tests/unit/test_ring.c"]
    assert int(tool[4]) >= 0 and tool[5].endswith(" s")
    # Thinking is set apart and folds.
    assert browser.js("return [...document.querySelectorAll('#pane p.thinking')]"
                      ".every(p => p.parentElement.matches('details.thinking-block'))")
    # The sticky head says the state and how long it has lasted.
    assert browser.text("#state") == "ready"
    assert browser.text("#state-since").startswith("for ")
    assert browser.js("return getComputedStyle(document.querySelector('.pane-head')).position")\
        == "sticky"


def test_scrolled_up_the_pane_stays_put_and_offers_a_jump_to_latest(web, browser, tmp_path):
    gated = Gated(web, browser, tmp_path)
    browser.sign_in(web.url, "t-bob")
    browser.open("sess-1")
    browser.wait(lambda: len(gated.shown()) >= 300, "a pane taller than its box")
    last = gated.pause()
    browser.wait(lambda: gated.shown()[-1:] == ["frame %d" % last], "frame %d" % last)
    assert not browser.visible("#jump")
    assert browser.js("const p = document.querySelector('#pane');"
                      "return p.scrollHeight > p.clientHeight")
    browser.js("document.querySelector('#pane').scrollTop = 100")
    browser.wait(lambda: browser.visible("#jump"), "the jump control")
    top = lambda: browser.js(  # noqa: E731
        "const p = document.querySelector('#pane'); const r = p.getBoundingClientRect();"
        "return document.elementFromPoint(r.left + 20, r.top + 5).textContent;")
    first = top()
    gated.resume()
    browser.wait(lambda: len(gated.shown()) >= last + 100, "more frames meanwhile")
    last = gated.pause()
    browser.wait(lambda: gated.shown()[-1:] == ["frame %d" % last], "frame %d" % last)
    assert browser.visible("#jump")
    assert top() == first  # what the reader was reading has not moved
    browser.driver.find_element("css selector", "#jump").click()
    browser.wait(lambda: not browser.visible("#jump"), "following again")
    assert browser.js("const p = document.querySelector('#pane');"
                      "return p.scrollTop + p.clientHeight >= p.scrollHeight - 24")


def test_a_thousand_sessions_at_200_state_changes_a_second(make_web, browser):
    import random
    import rpc_harness
    n = 1000
    ids = ["sess-%04d" % i for i in range(n)]
    web = make_web(world=harness.world_with(
        sessions=[{"id": sid, "container": "ctr-1", "owner": "alice"} for sid in ids]))
    runner = rpc_harness.Runner(web.server, "runner-1", "t-runner-1")
    web.server.runners = [runner]  # what Runner.open_sessions looks at
    runner.enroll()
    runner.open_sessions(live_sessions=ids)
    browser.sign_in(web.url, "t-alice")
    browser.wait(lambda: browser.js("return document.querySelectorAll("
                                    "'#sessions [data-session-id]').length") == n + 1,
                 "every card")
    names = ["WORKING", "BLOCKED", "READY", "IDLE", "DONE"]
    rng = random.Random(7)
    seconds, rate = 5, 200

    # Every session gets a state, then random sessions change theirs.
    order = ids + [rng.choice(ids) for _ in range(seconds * rate)]

    def paced():
        start = time.monotonic()
        for k, sid in enumerate(order):
            left = start + k / rate - time.monotonic()
            if left > 0:
                time.sleep(left)
            yield runner.request(sid, rpc_harness.state_frame(rng.choice(names)))

    browser.js("performance.clearMeasures('agenthub-board-render');"
               "window.__long = [];"
               "new PerformanceObserver(l => window.__long.push(...l.getEntries().map("
               "e => e.duration))).observe({type: 'longtask'});")
    runner.publish_raw(paced())
    # The board ends where the server is: its counts are `agenthub list`'s.
    want = listed_counts(web, "t-alice")
    browser.wait(lambda: header_counts(browser) == want, "the board to settle")
    runner.close()
    batches = browser.js("return performance.getEntriesByName('agenthub-board-render')"
                         ".map(e => [e.duration, e.detail])")
    assert batches and sum(changed for _, changed in batches) >= 1
    took = sorted(d for d, _ in batches)
    p50, p99 = took[len(took) // 2], took[min(len(took) - 1, len(took) * 99 // 100)]
    print("board: %d sessions, %d state changes/s: %d render batches, p50 %.2f ms, "
          "p99 %.2f ms, max %.2f ms" % (n, rate, len(took), p50, p99, took[-1]))
    biggest = sorted(batches, reverse=True)[:5]
    long_tasks = sorted(browser.js("return window.__long"), reverse=True)
    print("board: slowest batches (ms, cards changed) %s; %d long tasks (> 50 ms), "
          "longest %s" % ([(round(d, 1), c) for d, c in biggest], len(long_tasks),
                          [round(d) for d in long_tasks[:5]]))


def pane_texts(browser, pane):
    return browser.js("return [...document.querySelectorAll(arguments[0] + ' p.assistant')]"
                      ".map(p => p.textContent)", pane)


def focus_card(browser, sid):
    """Moves the focus down the board with j to SID's card."""
    for _ in range(len(board(browser))):
        if focused_card(browser) == sid:
            return
        press(browser, "j")
    assert focused_card(browser) == sid


def test_split_view_shows_two_panes_each_on_its_own_stream(make_web, browser):
    import rpc_harness
    from selenium.webdriver.common.keys import Keys
    web = make_web(world=three_sessions())
    runner = rpc_harness.Runner(web.server, "runner-1", "t-runner-1")
    web.server.runners = [runner]
    runner.enroll()
    runner.open_sessions(live_sessions=["sess-1", "sess-4"])
    browser.sign_in(web.url, "t-alice")
    browser.wait(lambda: len(board(browser)) == 3, "three cards")
    press(browser, "j")
    press(browser, Keys.ENTER)
    browser.wait(lambda: browser.status() == "live", "sess-1's pane")
    # The split control, from the keyboard: the board, to pick the second.
    browser.driver.find_element("css selector", "#split").send_keys(Keys.ENTER)
    browser.wait(lambda: browser.js("return location.hash") == "#pick=sess-1", "the pick")
    assert browser.visible("#pick") and browser.text("#pick-for") == "sess-1"
    assert focused_card(browser) == "sess-1"
    focus_card(browser, "sess-4")
    press(browser, Keys.ENTER)
    browser.wait(lambda: browser.js("return location.hash") == "#split=sess-1,sess-4",
                 "split view")
    view_status = lambda v: browser.js(  # noqa: E731
        "return document.querySelector(arguments[0]).dataset.status", v)
    browser.wait(lambda: view_status("#view") == view_status("#view-2") == "live",
                 "both panes live")
    assert not browser.visible("#board")
    assert browser.text("#pane-title") == "sess-1" and browser.text("#pane-title-2") == "sess-4"
    # Side by side: the same top, the second to the right of the first.
    boxes = browser.js("return ['#view', '#view-2'].map(s => {"
                       "const r = document.querySelector(s).getBoundingClientRect();"
                       "return [r.left, r.right, r.top]; })")
    assert boxes[0][1] <= boxes[1][0] + 1 and abs(boxes[0][2] - boxes[1][2]) < 2, boxes
    # Each pane gets its own session's frames, live, as they are published.
    for k in range(3):
        runner.publish("sess-1", rpc_harness.text("one %d" % k, "a%d" % k))
        runner.publish("sess-4", rpc_harness.text("four %d" % k, "b%d" % k))
        browser.wait(lambda: pane_texts(browser, "#pane")[-1:] == ["one %d" % k] and
                     pane_texts(browser, "#pane-2")[-1:] == ["four %d" % k], "frame %d" % k)
    assert pane_texts(browser, "#pane") == ["one 0", "one 1", "one 2"]
    assert pane_texts(browser, "#pane-2") == ["four 0", "four 1", "four 2"]
    # Closing the second leaves the first, still on its stream.
    browser.driver.find_element("css selector", "#close-2").click()
    browser.wait(lambda: browser.js("return location.hash") == "#session=sess-1", "one pane")
    assert not browser.visible("#view-2") and view_status("#view-2") == ""
    runner.publish("sess-1", rpc_harness.text("one 3", "a3"))
    browser.wait(lambda: pane_texts(browser, "#pane")[-1:] == ["one 3"], "sess-1 goes on")
    # Shift+Enter on a card opens it beside the pane left last.
    press(browser, Keys.ESCAPE)
    browser.wait(lambda: browser.visible("#board"), "the board")
    focus_card(browser, "sess-4")
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(browser.driver).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT)\
        .perform()
    browser.wait(lambda: browser.js("return location.hash") == "#split=sess-1,sess-4",
                 "split view again")
    browser.wait(lambda: pane_texts(browser, "#pane-2") == ["four 0", "four 1", "four 2"],
                 "sess-4's frames")
    # A phone has room for one: the first pane alone, the second stream closed.
    browser.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", PHONE)
    browser.wait(lambda: not browser.visible("#view-2") and view_status("#view-2") == "",
                 "one pane on a phone")
    assert browser.visible("#pane") and not browser.visible("#split")
    assert no_horizontal_scroll(browser)
    runner.close()


AXE = os.path.join(REPO, "tests", "node", "node_modules", "axe-core", "axe.min.js")


def axe_violations(browser, scope="document"):
    """axe-core's serious and critical violations on what the page shows
    now: [(rule, impact, [selector of each node])].  axe is injected by the
    driver, never served: the page's CSP stays as it is."""
    if not browser.js("return !!window.axe"):
        with open(AXE) as f:
            browser.js(f.read())
    found = browser.js_async("""
        const done = arguments[arguments.length - 1];
        axe.run(document, {resultTypes: ['violations']})
            .then(r => done(r.violations.map(v => [v.id, v.impact,
                                                   v.nodes.map(n => n.target.join(' '))])),
                  e => done(String(e)));""")
    assert isinstance(found, list), found
    return [v for v in found if v[1] in ("serious", "critical")]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_nothing_serious_on_sign_in_the_board_and_the_panes(make_web, browser, scheme):
    assert os.path.exists(AXE), "axe-core is not installed: run `make deps`"
    browser.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {
        "features": [{"name": "prefers-color-scheme", "value": scheme}]})
    web = make_web(world=three_sessions())
    agent = AGENT
    web.runner("%s %s --speed 10" % (PY, agent), sessions=("sess-1", "sess-4"))
    browser.driver.get(web.url)
    browser.wait(lambda: browser.status() == "signed out", "the sign-in form")
    assert axe_violations(browser) == []
    browser.driver.find_element("css selector", "#token").send_keys("t-alice")
    browser.driver.find_element("css selector", "#login").click()
    browser.wait(lambda: browser.status() == "live", "the board")
    browser.wait(lambda: len(board(browser)) == 3 and
                 {column_of(browser, s) for s in ("sess-1", "sess-4")} == {"idle"},
                 "the agents done", timeout=60)
    browser.js("document.querySelector('#ended-fold').open = true")
    assert axe_violations(browser) == []
    browser.open("sess-1")
    browser.wait(lambda: "and the unit suite passes." in (browser.text("#pane") or ""),
                 "the script's last words", timeout=60)
    # Folded parts open too, so axe sees them.
    browser.js("document.querySelectorAll('#pane details').forEach(d => d.open = true)")
    assert axe_violations(browser) == []
    browser.js("location.hash = '#split=sess-1,sess-4'")
    browser.wait(lambda: "and the unit suite passes." in (browser.text("#pane-2") or ""),
                 "the second pane")
    assert axe_violations(browser) == []


def test_claude_code_hooks_through_the_shim_drive_the_attention(web, browser, tmp_path):
    """`agenthub hook claude`, the real binary, fed Claude Code's own hook
    payloads: a permission request puts the session in Needs you with the
    title count and the favicon badge, the tool's PostToolUse clears them;
    the same for a permission_prompt notification."""
    import uuid
    from harness import AGENTHUB
    payloads = os.path.join(REPO, "tests", "hooks", "claude")
    native = str(uuid.uuid4())

    def cli(*args, token="t-agent-1", stdin=None, **env):
        full = dict(os.environ, AGENTHUB_ADDR=web.server.public,
                    AGENTHUB_RUNNER_ADDR=web.server.runner_addr, AGENTHUB_TOKEN=token,
                    XDG_STATE_HOME=str(tmp_path / "state"))
        for name in ("AGENTHUB_TERMINAL_ID", "AGENTHUB_EMIT_RAW", "AGENTHUB_SPOOL",
                     "AGENTHUB_TLS", "AGENTHUB_CA"):
            full.pop(name, None)
        full.update(env)
        r = subprocess.run([str(AGENTHUB), *args], env=full, input=stdin, capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 0, (args, r.stderr)
        return r.stdout

    terminal = cli("terminal", "open", "ctr-1", token="t-admin").strip()

    def fire(event, **overrides):
        with open(os.path.join(payloads, event + ".json")) as f:
            hook = json.load(f)
        hook.update(session_id=native, **overrides)
        assert cli("hook", "claude", stdin=json.dumps(hook), AGENTHUB_TERMINAL_ID=terminal,
                   AGENTHUB_SPOOL=str(tmp_path / "spool.jsonl")) == ""

    fire("SessionStart")
    fire("UserPromptSubmit")
    sid = json.loads(cli("show", "claude:" + native, "--json"))["session_id"]
    browser.sign_in(web.url, "t-admin")
    browser.wait(lambda: column_of(browser, sid) == "working", "the Claude Code session working")
    assert browser.driver.title == "agenthub"
    card = '#sessions [data-session-id="%s"]' % sid
    highlighted = lambda: browser.js(  # noqa: E731
        "const c = document.querySelector(arguments[0]); return c.classList.contains('needs')",
        card)
    icon = lambda: browser.js("return document.querySelector('link[rel=icon]')"  # noqa: E731
                              ".getAttribute('href')")
    assert not highlighted()
    for ask, overrides in [("PermissionRequest", {}),
                           ("Notification", {"notification_type": "permission_prompt"})]:
        fire("PreToolUse")
        fire(ask, **overrides)
        browser.wait(lambda: browser.driver.title == "(1) agenthub", "the title count on " + ask)
        assert column_of(browser, sid) == "needs" and highlighted()
        assert icon() == "/favicon-alert.svg"
        assert header_counts(browser)["needs"] == 1
        fire("PostToolUse")
        browser.wait(lambda: browser.driver.title == "agenthub", "the title cleared after " + ask)
        assert column_of(browser, sid) == "working" and not highlighted()
        assert icon() == "/favicon.svg"
        assert header_counts(browser)["needs"] == 0
