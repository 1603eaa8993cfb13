"""The session log on disk (the default of a single node, --log-db): a
restart, clean (SIGTERM) or not (kill -9), keeps every session's log with
its seqs, the bus's seq and instance epoch, and the Runners' marks; a file
that is not a sound log stops the start with exit 2 naming it; a disk that
refuses commits refuses appends (UNAVAILABLE, health NOT_SERVING with the
reason) and recovers by itself."""
import os
import random
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import grpc
import pytest

from rpc_harness import (F, Hub, S, fail, state_frame, subscribe, subscribe_events,  # noqa: F401
                         text, wait_for)

BIG_RING = ["--agent-log-bytes", str(64 << 20)]


def texts(frames):
    return [f.event.assistant_text.text for f in frames if f.event.HasField("assistant_text")]


def log_of(hub, sid, until_text, token="t-alice"):
    """Every retained frame of SID, read until the frame whose text is
    UNTIL_TEXT (the newest, published by the caller)."""
    pane = subscribe(hub, sid, token=token, tail=1 << 30)
    # Only the newest frames are looked at: the predicate runs per frame.
    pane.wait(lambda items: until_text in texts(items[-3:]), timeout=60, what=until_text)
    frames = list(pane.items)
    pane.cancel()
    return frames


def upto(frames, until_text):
    out = []
    for f in frames:
        out.append(f)
        if f.event.HasField("assistant_text") and f.event.assistant_text.text == until_text:
            return out
    raise AssertionError("no %r" % until_text)


def healthz(hub):
    url = "http://%s/healthz" % hub.addr["metrics"]
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_a_sigterm_restart_keeps_logs_seqs_bus_epoch_and_runner_marks():
    hub = Hub(flags=BIG_RING)
    try:
        bus = subscribe_events(hub)
        r = hub.runner("runner-1")
        assert r.enroll(resume=False).last_runner_seq == 0
        r.publish("sess-1", *[text("a%d" % i) for i in range(50)])
        pane = subscribe(hub, "sess-1", tail=1 << 30)
        before = pane.wait(lambda items: "a49" in texts(items) and items)
        pane.cancel()
        events = bus.wait(lambda items: len(items) >= 50 and items)
        bus.cancel()
        epoch, last_event = events[0].instance_epoch, events[-1].seq
        # A stopped agent's log is retained; its panes replay it and end.
        r2 = hub.runner("runner-2")
        r2.publish("sess-2", text("b0"), state_frame("STOPPED"))
        hub.stop()
        hub.start()
        for rr in (r, r2):
            rr.channel = grpc.insecure_channel(hub.runner_addr)

        # The Runner's mark is every frame it sent: it resends nothing.
        assert r.enroll(resume=True).last_runner_seq == 50
        # since_seq from before the restart: no gap, no duplicate.
        mid = before[19].seq
        resumed = subscribe(hub, "sess-1", since_seq=mid)
        r.publish("sess-1", text("after"))
        got = resumed.wait(lambda items: "after" in texts(items) and items)
        resumed.cancel()
        assert [f.SerializeToString() for f in got[:len(before) - 20]] == \
            [f.SerializeToString() for f in before[20:]]
        assert [f.seq for f in got] == list(range(mid + 1, mid + 1 + len(got)))
        # The bus resumes in the same epoch, from the cursor it had.
        events_after = subscribe_events(hub, since_seq=last_event - 2, epoch=epoch)
        r.publish("sess-1", text("after2"))
        ev = events_after.wait(lambda items: any(
            e.agent_message_chunk.text == "after2" for e in items) and items)
        events_after.cancel()
        assert not any(e.HasField("resync_required") for e in ev)
        assert [e.seq for e in ev[:2]] == [last_event - 1, last_event]
        assert all(e.instance_epoch == epoch for e in ev)
        assert [e.seq for e in ev] == list(range(last_event - 1, last_event - 1 + len(ev)))
        # The stopped agent's log is still there, and its pane still ends.
        ended = subscribe(hub, "sess-2", token="t-carol", tail=100)
        code, _ = ended.finish()
        assert code == grpc.StatusCode.OK and texts(ended.items) == ["b0"]
    finally:
        hub.stop()


def test_a_log_in_memory_forgets_on_restart_and_takes_a_new_epoch():
    hub = Hub(flags=["--log", "memory"])
    try:
        bus = subscribe_events(hub)
        r = hub.runner("runner-1")
        r.publish("sess-1", text("x"))
        epoch = bus.wait_count(1)[0].instance_epoch
        bus.cancel()
        hub.restart()
        assert not (hub.tmp / "hub-log.db").exists()
        stale = subscribe_events(hub, since_seq=1, epoch=epoch)
        stale.finish()
        assert stale.items[0].HasField("resync_required")
        assert stale.items[0].instance_epoch != epoch
    finally:
        hub.stop()


class Publisher(threading.Thread):
    """Publishes f<runner_seq> frames to sess-1 in small PublishEvents calls
    until the server goes away."""

    def __init__(self, runner):
        super().__init__(daemon=True)
        self.runner = runner
        self.stop_flag = threading.Event()

    def run(self):
        r = self.runner
        while not self.stop_flag.is_set():
            with r.lock:
                start = r.seq
                reqs = [F.PublishEventsRequest(runner_seq=start + i + 1, session_id="sess-1",
                                               frame=text("f%d" % (start + i + 1)))
                        for i in range(20)]
            try:
                r.publish_raw(reqs)
            except grpc.RpcError:
                return
            with r.lock:
                r.seq = start + 20


def test_kill_9_under_load_loses_nothing_the_runner_was_told_is_stored():
    """Twenty rounds: a Runner publishes, a pane follows, agenthubd is
    killed at a random moment.  After each restart every frame up to the
    Runner's Enroll mark is in the log exactly once, in order, with
    contiguous seqs; every frame the pane saw before the kill has the same
    seq and bytes; the Runner resends from its mark and loses nothing."""
    rng = random.Random(21)
    hub = Hub(flags=BIG_RING)
    seen = {}
    try:
        r = hub.runner("runner-1")
        r.enroll(resume=False)
        for round_ in range(20):
            pane = subscribe(hub, "sess-1", tail=1 << 30)
            pub = Publisher(r)
            pub.start()
            time.sleep(rng.uniform(0.05, 0.6))
            hub.kill()
            hub._reader.join(10)  # its end of stderr is not the next start's
            pub.stop_flag.set()
            pub.join(10)
            pane.done.wait(10)
            for f in pane.items:
                seen[f.seq] = f.SerializeToString()
            hub.start()
            r.channel = grpc.insecure_channel(hub.runner_addr)
            mark = r.enroll(resume=True).last_runner_seq
            with r.lock:
                r.seq = mark  # resend what the server does not have
            r.publish("sess-1", text("f%d" % (mark + 1)))
            log = upto(log_of(hub, "sess-1", "f%d" % (mark + 1)), "f%d" % (mark + 1))
            assert texts(log) == ["f%d" % i for i in range(1, mark + 2)], round_
            seqs = [f.seq for f in log]
            assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), round_
            for f in log:
                if f.seq in seen:
                    assert seen[f.seq] == f.SerializeToString(), (round_, f.seq)
        assert mark > 20
    finally:
        hub.stop()


def run_start(hub, timeout=30):
    """Starts agenthubd on HUB's files in the foreground: (rc, stderr)."""
    p = subprocess.run(hub.args(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, timeout=timeout, cwd=str(hub.tmp))
    return p.returncode, p.stderr


def test_a_garbage_or_foreign_log_file_at_start_exits_2_naming_it():
    hub = Hub(start=False)
    path = hub.tmp / "hub-log.db"
    path.write_bytes(b"this is not a database" * 500)
    rc, err = run_start(hub)
    assert rc == 2 and str(path) in err and "not an agenthub session log" in err, err
    assert path.read_bytes() == b"this is not a database" * 500  # never a fresh start
    # Another program's SQLite database.
    path.unlink()
    subprocess.run(["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]);"
                    "c.execute('create table t(x)'); c.commit()", str(path)], check=True)
    rc, err = run_start(hub)
    assert rc == 2 and str(path) in err and "another program" in err, err


def test_a_truncated_log_file_at_start_exits_2_naming_it():
    hub = Hub(flags=BIG_RING)
    r = hub.runner("runner-1")
    for i in range(10):
        r.publish("sess-1", *[text("%d-%d-" % (i, j) + "x" * 300) for j in range(200)])
    hub.stop()
    path = hub.tmp / "hub-log.db"
    size = path.stat().st_size
    assert size > 300000
    with open(path, "r+b") as f:
        f.truncate(size // 2)
    rc, err = run_start(hub)
    assert rc == 2 and str(path) in err and "damaged" in err, err
    assert path.stat().st_size == size // 2


def test_a_read_only_directory_at_start_exits_2_naming_the_file():
    hub = Hub(start=False)
    ro = Path(tempfile.mkdtemp(prefix="agenthub-ro-"))
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        hub.flags = ["--log-db", str(ro / "log.db")]
        rc, err = run_start(hub)
        assert rc == 2 and str(ro / "log.db") in err, err
    finally:
        subprocess.run(["umount", str(ro)])
        ro.rmdir()


def test_a_full_disk_refuses_appends_until_space_returns_and_loses_nothing():
    mnt = Path(tempfile.mkdtemp(prefix="agenthub-full-"))
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    hub = None
    try:
        hub = Hub(flags=["--log-db", str(mnt / "log.db")])
        r = hub.runner("runner-1")
        r.enroll(resume=False)
        r.publish("sess-1", text("before"))
        pane = subscribe(hub, "sess-1", tail=100)
        pane.wait(lambda items: "before" in texts(items))
        filler = mnt / "filler"
        with open(filler, "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass
        # Frames the disk cannot take: the producer hears UNAVAILABLE.
        def refused():
            try:
                r.publish("sess-1", *[text("full-%d" % i + "y" * 2000) for i in range(50)])
            except grpc.RpcError as err:
                return err.code() == grpc.StatusCode.UNAVAILABLE
            return False
        wait_for(refused, timeout=20, what="UNAVAILABLE while the disk is full")
        status, body = healthz(hub)
        assert status == 503 and "cannot commit" in body and "full" in body, body
        m = hub.metrics()
        assert m["agenthub_log_faults_total"] >= 1 and m["agenthub_log_writable"] == 0
        # Space returns: it recovers by itself, and what was taken is kept.
        filler.unlink()
        wait_for(lambda: healthz(hub)[0] == 200, timeout=20, what="healthy again")
        mark = r.enroll(resume=True).last_runner_seq
        with r.lock:
            r.seq = mark
        r.publish("sess-1", text("after"))
        pane.wait(lambda items: "after" in texts(items))
        hub.restart()
        log = log_of(hub, "sess-1", "after")
        got = texts(log)
        assert got[0] == "before" and got[-1] == "after"
        seqs = [f.seq for f in log]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
        assert len(got) == len(set(got))
    finally:
        if hub:
            hub.stop()
        subprocess.run(["umount", str(mnt)])
        shutil.rmtree(mnt, ignore_errors=True)


def test_records_appendresourceoutput_answered_ok_survive_kill_9():
    from test_session_end import append, spawn
    hub = Hub(flags=BIG_RING)
    try:
        sid = spawn(hub).session_id
        answered = []
        for i in range(30):
            answered.append(append(hub, sid, {"type": "prompt", "data": {"length": i}}).last_seq)
        hub.kill()
        hub._reader.join(10)
        hub.start()
        # A channel of its own: grpcio would reuse the killed server's socket.
        fresh = hub.channel(options=[("grpc.use_local_subchannel_pool", 1)])
        pane = subscribe(hub, sid, token="t-bob", tail=1 << 30, channel=fresh)
        got = pane.wait(lambda items: items and items[-1].seq >= answered[-1] and items)
        pane.cancel()
        held = {f.seq for f in got}
        assert all(seq in held for seq in answered)
        assert [f.seq for f in got] == list(range(got[0].seq, got[0].seq + len(got)))
    finally:
        hub.stop()
