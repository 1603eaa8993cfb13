"""The faults and their seeded schedule.

schedule(seed, seconds) draws, from random.Random(seed) alone, a list of
faults to apply one after another, each held for a few seconds and
followed by a quiet spell, until SECONDS of faults are planned.  The same
seed always plans the same faults; what a leader-aimed fault hits (the
JetStream meta leader, the frames stream's leader) is looked up when it
starts, and logged.

  partition-node      one node cut from every NATS server
  partition-nats      one NATS server cut from the other two
  partition-majority  one NATS server and one node cut from the rest
  pause-node          SIGSTOP a node, SIGCONT when healed
  pause-meta-leader   SIGSTOP the JetStream meta leader
  pause-stream-leader SIGSTOP the leader of the frames stream
  kill-node           kill -9 a node, started again when healed
  kill-nats           kill -9 a NATS server, started again when healed
"""
import random
import time

from procs import NATS_ADDRS, NODE_ADDRS

KINDS = ("partition-node", "partition-nats", "partition-majority", "pause-node",
         "pause-meta-leader", "pause-stream-leader", "kill-node", "kill-nats")


def schedule(seed, seconds):
    rng = random.Random(seed)
    plan, t = [], 0.0
    while t < seconds:
        fault = {"kind": rng.choice(KINDS), "node": rng.randrange(3), "nats": rng.randrange(3),
                 "hold": round(rng.uniform(2.0, 6.0), 1), "quiet": round(rng.uniform(1.0, 4.0), 1)}
        plan.append(fault)
        t += fault["hold"] + fault["quiet"]
    return plan


def describe(fault):
    kind = fault["kind"]
    if kind in ("partition-node", "pause-node", "kill-node"):
        what = "%s node-%d" % (kind, fault["node"] + 1)
    elif kind in ("partition-nats", "kill-nats"):
        what = "%s n%d" % (kind, fault["nats"] + 1)
    elif kind == "partition-majority":
        what = "%s: n%d and node-%d cut from the rest" % (kind, fault["nats"] + 1,
                                                           fault["node"] + 1)
    else:
        what = kind
    return "%s for %.1f s, then %.1f s quiet" % (what, fault["hold"], fault["quiet"])


class Nemesis:
    """Applies a schedule to a procs.Cluster, recording what it did."""

    def __init__(self, cluster, partitions, log):
        self.cluster = cluster
        self.partitions = partitions
        self.log = log
        self.applied = []
        self.heal_steps = []

    def say(self, text):
        self.log("nemesis: %s" % text)

    def start(self, fault):
        kind, c = fault["kind"], self.cluster
        node, nats = c.nodes[fault["node"]], c.nats[fault["nats"]]
        if kind == "partition-node":
            self.partitions.cut([(NODE_ADDRS[fault["node"]], a) for a in NATS_ADDRS])
            target = node.name
        elif kind == "partition-nats":
            self.partitions.cut([(NATS_ADDRS[fault["nats"]], a) for a in NATS_ADDRS
                                 if a != NATS_ADDRS[fault["nats"]]])
            target = nats.name
        elif kind == "partition-majority":
            minority = [NATS_ADDRS[fault["nats"]], NODE_ADDRS[fault["node"]]]
            majority = [a for a in NATS_ADDRS + NODE_ADDRS if a not in minority]
            self.partitions.cut([(a, b) for a in minority for b in majority])
            target = "%s+%s" % (nats.name, node.name)
        elif kind == "pause-node":
            node.pause()
            self.heal_steps.append(node.resume)
            target = node.name
        elif kind in ("pause-meta-leader", "pause-stream-leader"):
            meta, stream = c.leaders()
            index = meta if kind == "pause-meta-leader" else stream
            if index is None:
                index = fault["nats"]
                target = "n%d (no leader found)" % (index + 1)
            else:
                target = "n%d" % (index + 1)
            c.nats[index].pause()
            self.heal_steps.append(c.nats[index].resume)
        elif kind == "kill-node":
            node.kill()
            self.heal_steps.append(node.start)
            target = node.name
        elif kind == "kill-nats":
            nats.kill()
            self.heal_steps.append(nats.start)
            target = nats.name
        else:
            raise ValueError(kind)
        return target

    def heal(self):
        self.partitions.heal()
        steps, self.heal_steps = self.heal_steps, []
        for step in steps:
            step()

    def run(self, plan, started):
        """Applies PLAN in order; STARTED is the monotonic time of the run's
        start (for the log)."""
        for i, fault in enumerate(plan):
            target = self.start(fault)
            at = time.monotonic() - started
            self.say("[%5.1f s] fault %d/%d: %s -> %s" % (at, i + 1, len(plan),
                                                          describe(fault), target))
            self.applied.append(dict(fault, target=target, at=round(at, 1)))
            time.sleep(fault["hold"])
            self.heal()
            time.sleep(fault["quiet"])
