#!/usr/bin/python3
"""screenshots.py BUILD OUT_DIR: PNGs of the page against a demo world.

Starts agenthubd (BUILD/agenthubd) on the demo world plus three sessions
of ctr-1, and the reference Runner hosting four of them with a posing
agent (below) that leaves each session in a telling state: one waiting for
permission, one working, one idle with a pending message, one stopped.
Then headless Chromium signs in as alice and writes into OUT_DIR:

  board-desktop-light.png, board-desktop-dark.png   (1280x800)
  board-phone-light.png, board-phone-dark.png       (390x844)
  pane-desktop.png, pane-phone.png                   (sess-1's pane)
  split-desktop.png                                  (sess-1 and sess-3 side by side)

Needs python3-selenium, chromium and chromium-driver (`make deps`).
"""
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

POSER = r'''
import json, os, sys, time
sid = os.environ.get("AGENTHUB_SESSION_ID", "")
def emit(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
def plan(*st):
    items = ["Read the failing test", "Fix the off-by-one in ring.c", "Run the unit suite"]
    emit({"plan": {"entries": [{"content": c, "status": s} for c, s in zip(items, st)]}})
emit({"state": "WORKING"})
if sid == "sess-1":
    emit({"thinking": {"text": "The user wants the ring buffer test fixed. Let me look at the failing assertion first.", "message_id": "m1"}})
    plan("IN_PROGRESS", "PENDING", "PENDING")
    emit({"tool_call": {"tool_call_id": "t1", "title": "Read tests/unit/test_ring.c", "status": "IN_PROGRESS"}})
    time.sleep(0.4)
    emit({"tool_call_update": {"tool_call_id": "t1", "status": "COMPLETED", "output": "212 lines"}})
    emit({"assistant_text": {"text": "The test expects the oldest frame to be evicted once the ring is full, but the eviction happens one frame late.", "message_id": "m2"}})
    plan("COMPLETED", "COMPLETED", "IN_PROGRESS")
    emit({"tool_call": {"tool_call_id": "t2", "title": "Edit src/core/ring.c", "status": "IN_PROGRESS"}})
    time.sleep(0.3)
    emit({"tool_call_update": {"tool_call_id": "t2", "status": "COMPLETED", "output": "1 line changed"}})
    emit({"record": {"type": "ask", "data": {"tool_name": "Bash", "tool_input": {"command": "make unit"}}}, "state": "BLOCKED"})
    emit({"notice": {"text": "Waiting for permission to run: make unit"}})
elif sid == "sess-3":
    plan("COMPLETED", "IN_PROGRESS", "PENDING")
    emit({"tool_call": {"tool_call_id": "t1", "title": "Bash: make -j2 test", "status": "IN_PROGRESS"}})
elif sid == "sess-4":
    emit({"assistant_text": {"text": "Done: the docs now describe the batch window.", "message_id": "m1"}})
    emit({"state": "READY"})
else:
    emit({"assistant_text": {"text": "Nothing left to do here.", "message_id": "m1"}})
    emit({"state": "READY"})
    sys.exit(0)
for line in sys.stdin:
    pass
'''


def main():
    build, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    os.environ["AGENTHUB_BUILD"] = str(build)
    import harness
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(subprocess.check_output(["mktemp", "-d", "/tmp/agenthub-shots.XXXXXX"], text=True).strip())
    extra = [{"id": "sess-%d" % n, "container": "ctr-1", "owner": "alice"} for n in (3, 4, 5)]
    server = harness.Server(world=harness.world_with(sessions=extra), workdir=tmp / "agenthubd")
    agent = tmp / "poser.py"
    agent.write_text(POSER)
    runner = subprocess.Popen(
        [str(build / "agenthub-runner"), "--addr", server.runner_addr, "--token", "t-runner-1",
         "--agent", "/usr/bin/python3 %s" % agent, "--batch-window-ms", "600000",
         "--session", "sess-1", "--session", "sess-3", "--session", "sess-4",
         "--session", "sess-5"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=open(tmp / "runner.log", "w"))
    opts = Options()
    opts.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,800", "--no-first-run", "--hide-scrollbars",
                "--user-data-dir=%s" % (tmp / "profile")):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    try:
        url = "http://%s/" % server.public

        def wait(what, predicate, timeout=30):
            deadline = time.monotonic() + timeout
            while not predicate():
                if time.monotonic() > deadline:
                    raise SystemExit("screenshots: timed out waiting for " + what)
                time.sleep(0.1)

        def js(script, *args):
            return driver.execute_script(script, *args)

        driver.get(url)
        wait("the sign-in form", lambda: js("return !!document.querySelector('#token')"))
        driver.find_element("css selector", "#token").send_keys("t-alice")
        driver.find_element("css selector", "#login").click()
        wait("the board", lambda: js("return document.querySelectorAll('[data-column=needs] "
                                     "[data-session-id]').length") == 1 and
             js("return document.querySelectorAll('[data-column=working] [data-session-id]')"
                ".length") == 1)
        # A message waiting in sess-4's batch window (600 s long).
        driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const s = new TextEncoder().encode('sess-4'), t = new TextEncoder().encode('please also update the README');
            const body = new Uint8Array(5 + 2 + s.length + 2 + t.length);
            body[4] = 2 + s.length + 2 + t.length; body[5] = 10; body[6] = s.length; body.set(s, 7);
            body[7 + s.length] = 18; body[8 + s.length] = t.length; body.set(t, 9 + s.length);
            fetch('/compass.v1.CompassService/SendAgentMessage', {method: 'POST', headers: {
                'content-type': 'application/grpc-web+proto', 'x-grpc-web': '1',
                'authorization': 'Bearer t-alice'}, body}).then(() => done(), () => done());""")
        wait("the pending batch", lambda: js("const c = document.querySelector("
                                             "'[data-session-id=\"sess-4\"]');"
                                             "return c && c.dataset.batch") == "1")
        js("document.querySelector('#ended-fold').open = true")

        def shot(name, width, height, dark, mobile):
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
                "width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})
            driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [
                {"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]})
            time.sleep(0.5)
            driver.save_screenshot(str(out / name))
            print("screenshots: wrote", out / name)

        for dark in (False, True):
            scheme = "dark" if dark else "light"
            shot("board-desktop-%s.png" % scheme, 1280, 800, dark, False)
            shot("board-phone-%s.png" % scheme, 390, 844, dark, True)
        js("location.hash = '#session=sess-1'")
        wait("the pane", lambda: js("return document.querySelectorAll('#pane [data-seq]')"
                                    ".length") >= 10)
        js("for (const d of document.querySelectorAll('#pane details.tool')) d.open = true;")
        shot("pane-desktop.png", 1280, 800, False, False)
        shot("pane-phone.png", 390, 844, False, True)
        # The split view (#split=A,B), on a desktop: a phone shows A alone and
        # does not open B's stream, so the viewport is wide before the hash.
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False})
        js("location.hash = '#split=sess-1,sess-3'")
        wait("the second pane", lambda: js("return document.querySelectorAll('#pane-2 [data-seq]')"
                                           ".length") >= 2)
        shot("split-desktop.png", 1280, 800, False, False)
    finally:
        driver.quit()
        runner.terminate()
        runner.wait(timeout=15)
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
