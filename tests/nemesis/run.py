#!/usr/bin/env python3
"""The nemesis suite: a cluster under partitions, pauses and kills, its
clients' acknowledgements checked against what every node holds.

  /usr/bin/python3 tests/nemesis/run.py

Environment:
  NEMESIS_SEED     the (first) seed; a random one, printed, by default
  NEMESIS_SEEDS    how many seeds to run, NEMESIS_SEED, NEMESIS_SEED+1, ...
                   (default 1)
  NEMESIS_SECONDS  seconds of faults per seed (default 60)
  NEMESIS_KEEP     set: keep each seed's folder (logs, history.json)
  NEMESIS_CLUSTER_READ  all, on-demand, or mixed (default: node-1 reads every
                   session, the others read sessions on demand)
  AGENTHUB_BUILD   the binaries (default build/, else build-asan/)

Each seed runs in a network namespace of its own (this script runs itself
again under `unshare --net`): PostgreSQL, three nats-servers and three
agenthubd nodes on loopback addresses of their own, a Runner client and
two hook-shim clients, and a seeded schedule of faults (faults.py).  Then
every fault is healed, the clients drain, every session is read whole from
every node, and checker.py compares.  Exit status: 0 when no seed found a
violation, 1 when one did, 2 when a run could not be carried out, 77 when
this machine cannot run the suite (not root, no network namespaces).
"""
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import netns  # noqa: E402

SKIP = 77
SESSIONS = ["nem-a", "nem-b", "nem-c"]
RECOVERY_SECONDS = 60.0   # a node not serving this long after the heal is a defect
DRAIN_SECONDS = 60.0
SETTLE_SECONDS = 20.0
# Each node's counters printed with the summary, for debugging.
METRICS = ("apply_gaps_total", "writer_changes_total", "publish_retries_total",
           "disconnects_total", "appends_unstored_total", "bus_events_lost_total",
           "bus_events_published_total", "bus_retries_total", "bus_copies_dropped_total")


def log(text):
    print(text, flush=True)


def world():
    with open(HERE.parents[1] / "deploy" / "demo-world.json") as f:
        w = json.load(f)
    w["sessions"] += [{"id": s, "container": "ctr-1", "owner": "alice"} for s in SESSIONS]
    return w


# --- Inside the namespace: one seed -----------------------------------------

def wait_until(predicate, timeout, interval=0.2):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def retry(fn, timeout=30.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def one_seed(seed, seconds, workdir):
    import checker
    import clients
    import faults
    import procs

    build = procs.build_dir()
    plan = faults.schedule(seed, seconds)
    log("nemesis: seed %d, %d s of faults, %d faults planned, binaries in %s" % (
        seed, seconds, len(plan), build))
    for i, f in enumerate(plan):
        log("nemesis:   plan %d: %s" % (i + 1, faults.describe(f)))
    netns.setup_loopback(procs.source_addresses())
    parts = netns.Partitions()
    cluster = procs.Cluster(workdir, build)
    started_clients = []
    result = {"seed": seed, "seconds": seconds, "plan": plan}
    try:
        cluster.start(world())
        n0 = cluster.nodes[0]
        rid, sid = retry(lambda: clients.spawn_agent_session(n0.public, n0.runner_addr))
        runner = clients.RunnerClient(seed, [n.runner_addr for n in cluster.nodes],
                                      "runner-1", "t-runner-1", SESSIONS)
        hooks = [clients.HookClient(seed, [n.public for n in cluster.nodes], "hook-%d" % i,
                                    "t-agent-1", rid, sid) for i in (1, 2)]
        started_clients = [runner] + hooks
        for c in started_clients:
            c.start()
        time.sleep(2.0)
        nem = faults.Nemesis(cluster, parts, log)
        t0 = time.monotonic()
        nem.run(plan, t0)
        fault_seconds = time.monotonic() - t0
        nem.heal()
        observations, engine_notes = [], []
        for p in cluster.nats + cluster.nodes:
            if not p.running() and p.proc is not None:
                observations.append({"node": p.name, "detail": "%s exited by itself (status "
                                     "%s); last lines:\n%s" % (p.name, p.proc.returncode,
                                                              p.log(20))})
        cluster.heal_processes()
        log("nemesis: [%5.1f s] healed; waiting for the cluster to be whole" % (
            time.monotonic() - t0))
        healed_at = time.monotonic()
        # nats-server's own health check can fail for minutes on a consumer
        # assignment it has not cleaned up after leader changes, while its
        # streams serve: that alone is a note on the engine; our promise is
        # that every node serves again (below) and that the data holds.
        nats_unhealthy = None
        if not wait_until(lambda: all(n.healthy() for n in cluster.nats), RECOVERY_SECONDS):
            nats_unhealthy = "NATS not healthy %.0f s after the heal:\n%s" % (
                RECOVERY_SECONDS, "\n".join(n.log(10) for n in cluster.nats))
        nodes_stuck = len(observations)
        for node in cluster.nodes:
            left = max(1.0, RECOVERY_SECONDS - (time.monotonic() - healed_at))
            if not wait_until(node.serving, left):
                status, body = node.healthz()
                m = node.metrics()
                observations.append({"node": node.name, "detail": "%s not serving %.0f s after "
                                     "the heal (/healthz %s %r, connected %s, caught_up %s); last "
                                     "lines:\n%s" % (node.name, RECOVERY_SECONDS, status,
                                                     body.strip()[:200],
                                                     m.get("agenthub_cluster_connected"),
                                                     m.get("agenthub_cluster_caught_up"),
                                                     node.log(15))})
        if nats_unhealthy and len(observations) > nodes_stuck:
            observations.append({"node": None, "detail": nats_unhealthy})
        elif nats_unhealthy:
            engine_notes.append({"kind": "nats-health", "node": None,
                                 "detail": "every node serves, but " + nats_unhealthy})
        log("nemesis: [%5.1f s] whole again after %.1f s; draining the clients" % (
            time.monotonic() - t0, time.monotonic() - healed_at))
        for c in started_clients:
            c.stop(DRAIN_SECONDS)
        for c in started_clients:
            c.join(DRAIN_SECONDS + 30)
        history = {"runners": [runner.history()], "hooks": [h.history() for h in hooks]}
        for c in started_clients:
            if c.is_alive():
                observations.append({"node": None, "detail": "client %s did not finish its "
                                     "drain" % c.name})
            if c.crash:
                observations.append({"node": None, "detail": "client %s crashed:\n%s" % (
                    c.name, c.crash)})
        # Read every session whole from every node, once their copies agree
        # on where each session ends (or the settle time is over).
        every = SESSIONS + [sid]
        serving = [n for n in cluster.nodes if n.serving()]

        def ends():
            out = {}
            for s in every:
                seen = set()
                for n in serving:
                    try:
                        seen.add(clients.last_seq(n.public, s))
                    except Exception:
                        seen.add(-1)
                out[s] = seen
            return out
        agreed = wait_until(lambda: all(len(v) == 1 and -1 not in v for v in ends().values()),
                            SETTLE_SECONDS, 0.5)
        last = {s: max(v) for s, v in ends().items()}
        if not agreed:
            log("nemesis: the nodes do not agree on where the sessions end: %r" % ends())
        reads = {}
        for node in cluster.nodes:
            reads[node.name] = {}
            for s in every:
                if not node.serving():
                    reads[node.name][s] = {"frames": [], "error": "the node is not serving"}
                    continue
                reads[node.name][s] = clients.read_session(node.public, s, max(1, last[s]))
        for p in cluster.nodes:
            text = p.log_text()
            for marker in procs.SANITIZER_MARKERS:
                if marker in text:
                    i = text.index(marker)
                    observations.append({"node": p.name, "detail": "sanitizer report in %s's "
                                         "log:\n%s" % (p.name, text[max(0, i - 200):i + 2000])})
                    break
        if runner.unacked_at_end:
            observations.append({"node": None, "detail": "%d Runner frames still past every "
                                 "Enroll mark %.0f s after the cluster was whole: runner_seq "
                                 "%s" % (len(runner.unacked_at_end), DRAIN_SECONDS,
                                         checker.ranges(runner.unacked_at_end))})
        pending = [r["marker"] for h in hooks for r in h.records if not r["ok"]]
        if pending:
            observations.append({"node": None, "detail": "records never answered OK %.0f s "
                                 "after the cluster was whole: %s" % (DRAIN_SECONDS,
                                                                      ", ".join(pending))})
        violations, notes = checker.check(history, reads, observations)
        # Every node's bus copy, read whole; read again (a copy may still
        # be taking the stream's last batches) until they agree, or 3 times.
        bus_reads = {}
        for attempt in range(3):
            bus_reads = {n.name: clients.read_bus(n.public) for n in cluster.nodes
                         if n.serving()}
            bus_violations = checker.check_bus(bus_reads)
            if not bus_violations:
                break
            time.sleep(2.0)
        violations += bus_violations
        result["bus_events"] = {n: len(r["events"]) for n, r in bus_reads.items()}
        notes = engine_notes + notes
        gone = {n.name: n.log_text().count("is gone from the stream") for n in cluster.nodes}
        result["metrics"] = {}
        for n in cluster.nodes:
            m = n.metrics()
            result["metrics"][n.name] = {k: int(m.get("agenthub_cluster_" + k, -1))
                                         for k in METRICS}
        result.update(summarize(seed, fault_seconds, nem.applied, history, reads, violations))
        result["notes"] = notes
        result["log_counts"] = {"is gone from the stream": gone}
        if os.environ.get("NEMESIS_KEEP"):
            with open(Path(workdir) / "history.json", "w") as f:
                json.dump({"history": history, "reads": {
                    n: {s: {"frames": [r.hex() for r in v["frames"]], "error": v["error"]}
                        for s, v in by.items()} for n, by in reads.items()},
                    "violations": violations, "notes": notes}, f)
        return result
    finally:
        for c in started_clients:
            c.stop(0)
        try:
            parts.heal()
        except Exception:
            pass
        cluster.stop()


def summarize(seed, fault_seconds, applied, history, reads, violations):
    runner = history["runners"][0]
    hooks = history["hooks"]
    frames_acked = set()
    top_mark = max([m["mark"] for m in runner["marks"]] or [0])
    frames_acked |= {int(k) for k in runner["sent"] if int(k) <= top_mark}
    for ok in runner["stream_oks"]:
        frames_acked |= set(ok["seqs"])
    records = sum(len(h["records"]) for h in hooks)
    records_ok = sum(1 for h in hooks for r in h["records"] if r["ok"])
    out = {
        "fault_seconds": round(fault_seconds, 1),
        "faults": applied,
        "ops": {"runner_calls": runner["ops"], "frames_sent": runner["max_sent"],
                "hook_calls": sum(h["ops"] for h in hooks), "records": records,
                "errors": len(runner["errors"]) + sum(len(h["errors"]) for h in hooks)},
        "acks": {"enroll_marks": len(runner["marks"]), "highest_mark": top_mark,
                 "streams_ok": len(runner["stream_oks"]), "frames_acked": len(frames_acked),
                 "records_ok": records_ok},
        "frames_read": {n: sum(len(v["frames"]) for v in by.values())
                        for n, by in reads.items()},
        "violations": violations,
    }
    return out


def print_summary(r):
    o, a = r["ops"], r["acks"]
    log("nemesis: ---- seed %d ----" % r["seed"])
    log("nemesis: %.1f s of faults, %d applied: %s" % (
        r["fault_seconds"], len(r["faults"]), ", ".join(
            "%s(%s)" % (f["kind"], f["target"]) for f in r["faults"])))
    log("nemesis: operations: Runner %d calls, %d frames sent; hook shims %d calls, %d records; "
        "%d errors" % (o["runner_calls"], o["frames_sent"], o["hook_calls"], o["records"],
                       o["errors"]))
    log("nemesis: acknowledgements: %d Enroll marks (highest %d), %d PublishEvents OK, %d frames "
        "acknowledged; %d records OK" % (a["enroll_marks"], a["highest_mark"], a["streams_ok"],
                                         a["frames_acked"], a["records_ok"]))
    log("nemesis: frames read per node: %s" % ", ".join(
        "%s %d" % kv for kv in sorted(r["frames_read"].items())))
    if r.get("bus_events"):
        log("nemesis: bus events read per node: %s" % ", ".join(
            "%s %d" % kv for kv in sorted(r["bus_events"].items())))
    for node, m in sorted(r.get("metrics", {}).items()):
        log("nemesis: %s at the end: %s" % (node, ", ".join("%s %d" % kv for kv in m.items())))
    gone = r.get("log_counts", {}).get("is gone from the stream", {})
    if any(gone.values()):
        log("nemesis: 'is gone from the stream' logged: %s" % ", ".join(
            "%s %d" % kv for kv in sorted(gone.items())))
    for x in r.get("notes", []):
        log("nemesis:   note [%s] %s: %s" % (x["kind"], x["node"] or "-", x["detail"]))
    v = r["violations"]
    kinds = {}
    for x in v:
        kinds[x["kind"]] = kinds.get(x["kind"], 0) + 1
    log("nemesis: violations: %d%s" % (len(v), (" (" + ", ".join(
        "%s %d" % kv for kv in sorted(kinds.items())) + ")") if v else ""))
    # The same finding on several nodes is printed once, naming them all.
    grouped = {}
    for x in v:
        nodes = grouped.setdefault((x["kind"], x["session"] or "", x["detail"]), [])
        if x["node"]:
            nodes.append(x["node"])
    for (kind, session, detail), nodes in grouped.items():
        where = " ".join(w for w in (",".join(nodes), session) if w)
        log("nemesis:   [%s] %s: %s" % (kind, where or "-", detail))


def inner():
    seed = int(os.environ["NEMESIS_SEED"])
    seconds = float(os.environ.get("NEMESIS_SECONDS", "60"))
    workdir = Path(os.environ["NEMESIS_DIR"])
    (workdir / "netns").write_text(os.readlink("/proc/self/ns/net"))
    # SIGTERM from the outer process: unwind through the finally blocks.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(2))
    try:
        result = one_seed(seed, seconds, workdir / "run")
    except Exception:
        import traceback
        log("nemesis: the run failed:\n" + traceback.format_exc())
        return 2
    (workdir / "result.json").write_text(json.dumps(result))
    return 0


# --- Outside: a namespace per seed ------------------------------------------

def sweep(workdir):
    """SIGKILLs whatever still lives in the seed's namespace (only this
    run's processes can be there)."""
    try:
        ns = (workdir / "netns").read_text().strip()
    except OSError:
        return 0
    killed = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            if os.readlink("/proc/%s/ns/net" % pid) == ns:
                os.kill(int(pid), signal.SIGKILL)
                killed += 1
        except OSError:
            pass
    return killed


def run_seed(seed, seconds):
    workdir = Path(tempfile.mkdtemp(prefix="nemesis-%d-" % seed))
    os.chmod(workdir, 0o755)   # the postgres user and the nodes' uids enter it
    (workdir / "tmp").mkdir()
    # TMPDIR: the generated protos and anything else temporary go with the
    # seed's folder.
    env = dict(os.environ, NEMESIS_INNER="1", NEMESIS_SEED=str(seed),
               NEMESIS_SECONDS=str(seconds), NEMESIS_DIR=str(workdir),
               TMPDIR=str(workdir / "tmp"))
    proc = subprocess.Popen(["unshare", "--net", "--", sys.executable, str(Path(__file__))],
                            env=env)
    try:
        rc = proc.wait(timeout=seconds + 600)
    except subprocess.TimeoutExpired:
        log("nemesis: seed %d: the run did not end; stopping it" % seed)
        proc.terminate()
        try:
            rc = proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
    except BaseException:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        raise
    finally:
        if sweep(workdir):
            log("nemesis: seed %d: killed processes left in its namespace" % seed)
        result = None
        try:
            result = json.loads((workdir / "result.json").read_text())
        except (OSError, ValueError):
            pass
        if os.environ.get("NEMESIS_KEEP"):
            log("nemesis: seed %d: kept %s" % (seed, workdir))
        else:
            subprocess.run(["rm", "-rf", str(workdir)])
    return rc, result


def outer():
    why = netns.probe()
    if why:
        log("nemesis: skipped: " + why)
        return SKIP
    seconds = float(os.environ.get("NEMESIS_SECONDS", "60"))
    count = int(os.environ.get("NEMESIS_SEEDS", "1"))
    first = os.environ.get("NEMESIS_SEED")
    first = int(first) if first else random.SystemRandom().randrange(1, 1 << 31)
    seeds = [first + i for i in range(count)]
    log("nemesis: seeds %s, %g s of faults each (replay one with NEMESIS_SEED=%d)" % (
        ", ".join(map(str, seeds)), seconds, first))
    results, failed = [], False
    for seed in seeds:
        rc, result = run_seed(seed, seconds)
        if result is None:
            log("nemesis: seed %d: the run failed (status %s)" % (seed, rc))
            failed = True
            results.append({"seed": seed, "failed": True})
            continue
        print_summary(result)
        results.append(result)
    log("nemesis: ==== %d seeds ====" % len(seeds))
    bad = 0
    for r in results:
        if r.get("failed"):
            log("nemesis: seed %d: run failed" % r["seed"])
            continue
        v = r["violations"]
        bad += bool(v)
        log("nemesis: seed %d: %d ops, %d acks, %d faults, %d violations%s" % (
            r["seed"], r["ops"]["runner_calls"] + r["ops"]["hook_calls"],
            r["acks"]["enroll_marks"] + r["acks"]["streams_ok"] + r["acks"]["records_ok"],
            len(r["faults"]), len(v),
            (" (" + ", ".join(sorted({x["kind"] for x in v})) + ")") if v else ""))
    if failed:
        return 2
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(inner() if os.environ.get("NEMESIS_INNER") else outer())
