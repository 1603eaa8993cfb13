"""The nemesis suite (tests/nemesis) on a few short seeds: partitions,
pauses and kills against three NATS servers and three nodes in a network
namespace of its own, then every acknowledged frame and record checked on
every node.  `make nemesis SEEDS=20` runs long schedules.

NEMESIS_CI_SEEDS (comma-separated, default 1,2) and NEMESIS_CI_SECONDS
(default 20) choose what runs here.  Skipped only where the suite cannot
run at all (not root, no network namespaces)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import harness

NEMESIS = Path(harness.REPO) / "tests" / "nemesis"
sys.path.insert(0, str(NEMESIS))
import netns  # noqa: E402

SEEDS = [int(s) for s in os.environ.get("NEMESIS_CI_SEEDS", "1,2").split(",") if s.strip()]
SECONDS = os.environ.get("NEMESIS_CI_SECONDS", "20")


@pytest.mark.parametrize("seed", SEEDS)
def test_nothing_acknowledged_is_lost_or_taken_twice_under_faults(seed):
    if not harness.AGENTHUBD.exists():
        pytest.skip("%s is not built" % harness.AGENTHUBD)
    why = netns.probe()
    if why:
        pytest.skip(why)
    env = dict(os.environ, NEMESIS_SEED=str(seed), NEMESIS_SEEDS="1", NEMESIS_SECONDS=SECONDS,
               AGENTHUB_BUILD=str(harness.BUILD))
    out = subprocess.run([sys.executable, str(NEMESIS / "run.py")], env=env,
                         capture_output=True, text=True, timeout=float(SECONDS) + 900)
    report = out.stdout + out.stderr
    if out.returncode == 77:
        pytest.skip(report.strip().splitlines()[-1])
    assert out.returncode != 2, "the nemesis run failed (seed %d):\n%s" % (seed, report[-12000:])
    assert out.returncode == 0, "violations under seed %d (replay: NEMESIS_SEED=%d make " \
        "nemesis):\n%s" % (seed, seed, report[-12000:])


# --- The checker on made-up histories (no cluster, no root) -----------------

import checker  # noqa: E402
from harness import protos  # noqa: E402

F = protos().frames


def runner_frame(session, seq, rs, runner="runner-1"):
    return F.AgentSessionFrame(
        session_id=session, seq=seq, at_unix_ms=1000 + seq, event=F.SessionEvent(
            assistant_text=F.SessionAssistantText(text="NMS|%s|%s|%d|" % (runner, session, rs))
        )).SerializeToString()


def record_frame(session, seq, shim, n):
    return F.AgentSessionFrame(
        session_id=session, seq=seq, at_unix_ms=1000 + seq, event=F.SessionEvent(
            record=F.AgentRecord(type="prompt", data_json='{"id":"NMH|%s|%d|"}' % (shim, n))
        )).SerializeToString()


def state_frame(session, seq):
    return F.AgentSessionFrame(session_id=session, seq=seq, at_unix_ms=1000 + seq,
                               state=F.AGENT_SESSION_STATE_WORKING).SerializeToString()


def made_up(sent=6, mark=6):
    """A Runner that sent runner_seq 1..SENT to session s-a, all acknowledged
    by an Enroll mark MARK; a shim with two records OK at seqs 2 and 3 of
    s-h (a state frame at 1); every node holding exactly that."""
    history = {
        "runners": [{"runner": "runner-1", "sessions": ["s-a"],
                     "sent": {str(i): {"session": "s-a", "marker": "NMS|runner-1|s-a|%d|" % i}
                              for i in range(1, sent + 1)},
                     "max_sent": sent,
                     "marks": [{"t": 1.0, "node": 0, "mark": 0, "resume": False, "max_sent": 0},
                               {"t": 9.0, "node": 1, "mark": mark, "resume": True,
                                "max_sent": sent}],
                     "stream_oks": []}],
        "hooks": [{"shim": "hook-1", "session": "s-h", "records": [
            {"n": 1, "marker": "NMH|hook-1|1|", "attempts": 1,
             "ok": {"node": 0, "first_seq": 2, "last_seq": 2, "t": 1.0}},
            {"n": 2, "marker": "NMH|hook-1|2|", "attempts": 1,
             "ok": {"node": 0, "first_seq": 3, "last_seq": 3, "t": 2.0}}]}],
    }
    frames_a = [runner_frame("s-a", i, i) for i in range(1, sent + 1)]
    frames_h = [state_frame("s-h", 1), record_frame("s-h", 2, "hook-1", 1),
                record_frame("s-h", 3, "hook-1", 2)]
    reads = {n: {"s-a": {"frames": list(frames_a), "error": None},
                 "s-h": {"frames": list(frames_h), "error": None}}
             for n in ("node-1", "node-2", "node-3")}
    return history, reads


def kinds(violations):
    return sorted({(v["kind"], v["node"]) for v in violations})


def test_the_checker_passes_a_clean_history():
    history, reads = made_up()
    assert checker.check(history, reads) == ([], [])


def test_the_checker_finds_a_duplicate_out_of_order_a_gap_and_a_lost_frame():
    history, reads = made_up()
    # node-2: runner_seq 3 again at seq 7 (renumbered after the others).
    reads["node-2"]["s-a"]["frames"].append(runner_frame("s-a", 7, 3))
    # node-3: runner_seq 5 missing, and seqs jumping from 4 to 6.
    del reads["node-3"]["s-a"]["frames"][4]
    found = kinds(checker.check(history, reads)[0])
    assert ("duplicate", "node-2") in found
    assert ("lost", "node-3") in found
    assert ("seq-gap", "node-3") in found
    assert ("missing-seq", "node-1") in found  # seq 7 is only on node-2
    assert ("divergent", None) not in found


def test_the_checker_finds_copies_that_differ_and_frames_no_client_sent():
    history, reads = made_up()
    frames = reads["node-1"]["s-a"]["frames"]
    frames[1], frames[2] = runner_frame("s-a", 2, 3), runner_frame("s-a", 3, 2)
    reads["node-3"]["s-a"]["frames"][5] = runner_frame("s-a", 6, 99)
    found = kinds(checker.check(history, reads)[0])
    assert ("divergent", None) in found
    assert ("out-of-order", "node-1") in found
    assert ("unknown-frame", "node-3") in found


def test_the_checker_finds_a_mark_above_what_was_sent_and_a_late_start():
    history, reads = made_up(mark=9)
    for n in reads.values():
        n["s-h"]["frames"] = n["s-h"]["frames"][1:]
    found = kinds(checker.check(history, reads)[0])
    assert ("mark-above-sent", "node-2") in found
    assert ("starts-late", "node-1") in found


def test_the_checker_finds_records_lost_doubled_and_misplaced():
    history, reads = made_up()
    reads["node-1"]["s-h"]["frames"][2] = record_frame("s-h", 3, "hook-1", 1)
    reads["node-2"]["s-h"]["frames"] = reads["node-2"]["s-h"]["frames"][:1] + [
        record_frame("s-h", 2, "hook-1", 2), record_frame("s-h", 3, "hook-1", 1)]
    found = kinds(checker.check(history, reads)[0])
    assert ("lost", "node-1") in found and ("duplicate", "node-1") in found
    assert ("record-misplaced", "node-2") in found and ("out-of-order", "node-2") in found


def bus_event(seq, text):
    """A raw SubscribeEventsResponse: seq (1), instance_epoch (3), a chunk."""
    from harness import protos
    S = protos().services
    return S.SubscribeEventsResponse(
        seq=seq, instance_epoch=7, session_id="s-a",
        agent_message_chunk=S.AgentMessageChunk(session_id="s-a", text=text)).SerializeToString()


def test_the_bus_checker_passes_identical_copies_with_gaps_between_seqs():
    events = [bus_event(s, "e%d" % s) for s in (1024, 1025, 3072)]
    reads = {n: {"events": list(events), "error": None} for n in ("node-1", "node-2")}
    assert checker.check_bus(reads) == []


def test_the_bus_checker_finds_copies_that_differ_seqs_going_back_and_failed_reads():
    events = [bus_event(s, "e%d" % s) for s in (1024, 1025, 3072)]
    reads = {"node-1": {"events": list(events), "error": None},
             "node-2": {"events": events[:1] + [bus_event(1025, "other")] + events[2:],
                        "error": None},
             "node-3": {"events": [events[1], events[0]], "error": None},
             "node-4": {"events": [], "error": "UNAVAILABLE: down"}}
    found = kinds(checker.check_bus(reads))
    assert ("bus-divergent", "node-2") in found
    assert ("bus-order", "node-3") in found
    assert ("bus-read-failed", "node-4") in found
    assert ("bus-order", "node-1") not in found
