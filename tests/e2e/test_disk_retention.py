"""The disk keeps more than memory (docs/durability.md, "Retention"): a
tail or a since_seq older than a session's ring is served from disk, then
from the ring and live, in one stream with contiguous seqs; the disk gives
up a session's oldest frames past --disk-log-bytes (OUT_OF_RANGE then only
when neither has them); a restart reads back only what memory holds and
still serves the rest from disk."""
import grpc

from rpc_harness import Hub, S, fail, subscribe, text

# A ring of 64 KiB holds about 200 of these frames; the disk keeps them all.
SMALL_RING = ["--agent-log-bytes", str(64 << 10)]
FRAME_TEXT = "x" * 300


def publish(r, first, last):
    """Frames FIRST..LAST (texts f<i>) in calls of 200."""
    for start in range(first, last + 1, 200):
        r.publish("sess-1", *[text("f%d:%s" % (i, FRAME_TEXT))
                              for i in range(start, min(start + 200, last + 1))])


def number(frame):
    return int(frame.event.assistant_text.text.split(":")[0][1:])


def read_until(hub, last, **kwargs):
    """The pane from KWARGS (tail or since_seq) up to frame LAST."""
    pane = subscribe(hub, "sess-1", **kwargs)
    got = pane.wait(lambda items: items if items and number(items[-1]) == last else None,
                    timeout=60, what="frame f%d" % last)
    return pane, list(got)


def assert_contiguous(frames, first_seq, first_number):
    assert [f.seq for f in frames] == list(range(first_seq, first_seq + len(frames)))
    assert [number(f) for f in frames] == list(range(first_number,
                                                     first_number + len(frames)))


def test_a_tail_past_the_ring_is_read_from_disk_then_goes_on_live():
    hub = Hub(flags=SMALL_RING)
    try:
        r = hub.runner("runner-1")
        r.enroll(resume=False)
        publish(r, 1, 2000)
        pane, got = read_until(hub, 2000, tail=1 << 30)
        assert_contiguous(got, 1, 1)
        assert hub.metric("agenthub_log_frames_read_total") >= 1500
        # The same stream goes on with new frames.
        publish(r, 2001, 2010)
        more = pane.wait(lambda items: items if number(items[-1]) == 2010 else None)
        assert_contiguous(more, 1, 1)
        pane.cancel()
        # A since_seq the ring gave up long ago resumes right after it.
        pane, got = read_until(hub, 2010, since_seq=10)
        assert_contiguous(got, 11, 11)
        pane.cancel()
        # A tail of N from disk is the last N.
        pane, got = read_until(hub, 2010, tail=1000)
        assert_contiguous(got, 1011, 1011)
        pane.cancel()
    finally:
        hub.stop()


def test_the_disk_gives_up_the_oldest_frames_past_its_bound():
    hub = Hub(flags=SMALL_RING + ["--disk-log-bytes", str(256 << 10)])
    try:
        r = hub.runner("runner-1")
        r.enroll(resume=False)
        publish(r, 1, 4000)
        # Retention runs once a second: the oldest chunks go.
        hub.wait_metric("agenthub_log_disk_trims_total", lambda v: v >= 1, timeout=20)
        # Whole chunks (64 KiB here) go: the bound less at most one is kept.
        on_disk = hub.wait_metric("agenthub_log_frame_bytes_on_disk",
                                  lambda v: v <= 256 << 10, timeout=20)
        assert on_disk > (256 - 64 - 1) << 10
        err = fail(hub.call, "SubscribeAgentSession",
                   S.SubscribeAgentSessionRequest(session_id="sess-1", since_seq=1),
                   token="t-alice")
        assert err.code() == grpc.StatusCode.OUT_OF_RANGE
        # A tail of everything starts at the oldest frame the disk kept.
        pane, got = read_until(hub, 4000, tail=1 << 30)
        assert got[0].seq > 1 and 4000 - got[0].seq > 600
        assert_contiguous(got, got[0].seq, got[0].seq)
        pane.cancel()
    finally:
        hub.stop()


def test_a_restart_reads_back_what_memory_holds_and_serves_the_rest_from_disk():
    # 2 MiB on disk: chunks of 64 KiB, the start reads back whole chunks.
    hub = Hub(flags=SMALL_RING + ["--disk-log-bytes", str(2 << 20)])
    try:
        r = hub.runner("runner-1")
        r.enroll(resume=False)
        publish(r, 1, 3000)
        pane, before = read_until(hub, 3000, tail=1 << 30)
        pane.cancel()
        hub.kill()
        hub.start()
        loaded = hub.metric("agenthub_log_frames_loaded")
        assert 0 < loaded < 1000  # about a ring's worth, not all 3000
        # Channels of their own: grpcio would reuse the killed server's socket.
        fresh = [("grpc.use_local_subchannel_pool", 1)]
        pane, after = read_until(hub, 3000, tail=1 << 30, channel=hub.channel(options=fresh))
        pane.cancel()
        assert [(f.seq, f.SerializeToString()) for f in after] == \
            [(f.seq, f.SerializeToString()) for f in before]
        # New frames carry on the seq.
        r.channel = hub.channel("runner", options=fresh)
        assert r.enroll(resume=True).last_runner_seq == 3000
        publish(r, 3001, 3001)
        pane, got = read_until(hub, 3001, since_seq=2999, channel=hub.channel(options=fresh))
        assert [f.seq for f in got] == [3000, 3001]
        pane.cancel()
    finally:
        hub.stop()
