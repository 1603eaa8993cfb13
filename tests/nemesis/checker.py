"""The nemesis checker: what the clients were told against what every node
holds at the end.  It shares no code with the server or the harness: its
input is plain data (what each client sent and was acknowledged, see
clients.py) and the raw bytes of every frame each node served, which it
decodes itself (a few protobuf wire-format fields, and the identity each
client wrote into its frames' bytes).

check(history, reads) returns a list of violations, each a dict with
"kind", "node", "session" and "detail".  The kinds:

  lost               an acknowledged frame or record is not in a node's copy
  duplicate          one frame or record is in a node's copy more than once
  seq-gap            a session's seqs on a node are not contiguous (a jump
                     forward, or a seq repeated or going back)
  starts-late        a session's copy on a node does not start at seq 1
                     (nothing is evicted in these runs)
  divergent          the same seq holds different bytes on two nodes
  missing-seq        a seq some node holds is not on this node
  out-of-order       a Runner's frames are not in runner_seq order in a
                     session; a shim's record stored before one it was
                     told OK for before sending it
  unknown-frame      a frame no client sent (or in another session); a
                     frame carrying only a state (no event) is the
                     server's own, derived from what clients sent, and
                     allowed
  record-misplaced   a record is not at the seq its OK answered
  mark-above-sent    an Enroll mark above the highest runner_seq sent
  read-failed        a session could not be read whole from a node
  cluster            something the run itself observed (passed in)

Notes (reported, not violations: nothing acknowledged is broken by them
alone, the Runner resends and the log must drop what it holds):

  mark-behind-ack    an Enroll mark below a runner_seq a PublishEvents OK
                     or an earlier mark had already acknowledged
"""
import re

RUNNER_ID = re.compile(rb"NMS\|([^|]{1,64})\|([^|]{1,128})\|(\d{1,12})\|")
RECORD_ID = re.compile(rb"NMH\|([^|]{1,64})\|(\d{1,12})\|")
EXAMPLES = 8


def varint(buf, i):
    shift = value = 0
    while True:
        if i >= len(buf):
            raise ValueError("truncated varint")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def top_fields(buf):
    """{field number: last value} of a protobuf message's top level (varints
    as ints, length-delimited as bytes)."""
    out, i = {}, 0
    while i < len(buf):
        key, i = varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            out[number], i = varint(buf, i)
        elif wire == 2:
            n, i = varint(buf, i)
            out[number] = bytes(buf[i:i + n])
            i += n
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ValueError("wire type %d" % wire)
    return out


class Frame:
    """One AgentSessionFrame as served (session_id 1, event 2, state 3, seq 100)."""

    def __init__(self, raw, pos):
        self.raw = raw
        self.pos = pos
        try:
            fields = top_fields(raw)
            self.seq = fields.get(100, 0)
            self.session = fields.get(1, b"").decode(errors="replace")
            self.state_only = 2 not in fields and 3 in fields
            self.bad = None
        except ValueError as e:
            self.seq, self.session, self.bad = 0, "", str(e)
            self.state_only = False
        m = RUNNER_ID.search(raw)
        self.runner = (m.group(1).decode(), m.group(2).decode(), int(m.group(3))) if m else None
        m = RECORD_ID.search(raw)
        self.record = (m.group(1).decode(), int(m.group(2))) if m else None

    def ident(self):
        if self.runner:
            return "runner %s runner_seq %d" % (self.runner[0], self.runner[2])
        if self.record:
            return "record %s #%d" % self.record
        return "no client id (%r)" % printable(self.raw)


def printable(raw, n=80):
    text = "".join(chr(b) if 32 <= b < 127 else "." for b in raw[:n])
    return text + ("..." if len(raw) > n else "")


def ranges(numbers):
    """[1, 2, 3, 7] -> "1-3, 7"."""
    numbers = sorted(set(numbers))
    out, start, prev = [], None, None
    for n in numbers:
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            out.append((start, prev))
            start = prev = n
    if start is not None:
        out.append((start, prev))
    parts = ["%d" % a if a == b else "%d-%d" % (a, b) for a, b in out]
    if len(parts) > 12:
        parts = parts[:12] + ["... (%d ranges)" % len(parts)]
    return ", ".join(parts)


class Checker:
    def __init__(self, history, reads):
        self.history = history
        self.reads = reads
        self.violations = []
        self.notes = []
        self.nodes = sorted(reads)

    def add(self, kind, node, session, detail, note=False):
        (self.notes if note else self.violations).append(
            {"kind": kind, "node": node, "session": session, "detail": detail})

    # -- what the clients were told

    def runner_acks(self, runner):
        """runner_seq -> why it is acknowledged ("mark N on node-x" or "stream
        OK on node-x"), over every runner_seq the Runner sent."""
        sent = {int(k): v for k, v in runner["sent"].items()}
        acked = {}
        best = None
        for m in runner["marks"]:
            if best is None or m["mark"] > best["mark"]:
                best = m
        if best:
            for seq in sent:
                if seq <= best["mark"]:
                    acked[seq] = "Enroll mark %d (node %d)" % (best["mark"], best["node"] + 1)
        for ok in runner["stream_oks"]:
            for seq in ok["seqs"]:
                acked.setdefault(seq, "PublishEvents OK (node %d)" % (ok["node"] + 1))
        return sent, acked

    def check_marks(self, runner):
        highest_ack = 0
        events = [("mark", m["t"], m) for m in runner["marks"]] + \
                 [("ok", s["t"], s) for s in runner["stream_oks"]]
        events.sort(key=lambda e: (e[1], e[0] == "mark"))
        for kind, _, e in events:
            if kind == "ok":
                highest_ack = max([highest_ack] + e["seqs"])
                continue
            node = "node-%d" % (e["node"] + 1)
            if e["mark"] > e["max_sent"]:
                self.add("mark-above-sent", node, None,
                         "Enroll (resume=%s) answered mark %d, but %s had sent only up to "
                         "runner_seq %d" % (e["resume"], e["mark"], runner["runner"],
                                            e["max_sent"]))
            if e["resume"] and e["mark"] < highest_ack:
                self.add("mark-behind-ack", node, None,
                         "Enroll (resume) answered mark %d after runner_seq %d was already "
                         "acknowledged: the Runner resends %d..%d" % (
                             e["mark"], highest_ack, e["mark"] + 1, highest_ack), note=True)
            if e["resume"]:
                highest_ack = max(highest_ack, min(e["mark"], e["max_sent"]))

    # -- what each node holds

    def check_node_session(self, node, session, frames, runners, hooks):
        if not frames:
            return
        seqs = [f.seq for f in frames]
        if seqs[0] != 1:
            self.add("starts-late", node, session, "the copy starts at seq %d" % seqs[0])
        jumps = [(a, b) for a, b in zip(seqs, seqs[1:]) if b != a + 1]
        if jumps:
            self.add("seq-gap", node, session, "%d breaks in the seqs, e.g. %s" % (
                len(jumps), ", ".join("%d->%d" % j for j in jumps[:EXAMPLES])))
        # Identity and ownership.
        for f in frames:
            if f.bad:
                self.add("unknown-frame", node, session,
                         "frame %d does not decode: %s" % (f.pos, f.bad))
                continue
            if f.session and f.session != session:
                self.add("unknown-frame", node, session,
                         "seq %d names session %s" % (f.seq, f.session))
            if f.state_only:
                continue
            owner = None
            if f.runner:
                r = runners.get(f.runner[0])
                sent = r and r["sent"].get(str(f.runner[2]))
                if sent and sent["session"] == session and sent["marker"].encode() in f.raw:
                    owner = r
            elif f.record:
                h = hooks.get(f.record[0])
                n = f.record[1]
                if h and h["session"] == session and 1 <= n <= len(h["records"]):
                    owner = h
            if owner is None:
                self.add("unknown-frame", node, session,
                         "seq %d: %s, which no client sent to this session" % (
                             f.seq, f.ident()))

    def check_runner(self, runner, copies):
        sent, acked = self.runner_acks(runner)
        by_session = {}
        for seq, info in sent.items():
            by_session.setdefault(info["session"], set()).add(seq)
        for node in self.nodes:
            for session in runner["sessions"]:
                frames = copies.get((node, session))
                if frames is None:
                    continue
                where = {}
                for f in frames:
                    if f.runner and f.runner[0] == runner["runner"] and \
                            f.runner[1] == session:
                        where.setdefault(f.runner[2], []).append(f.seq)
                dups = {rs: s for rs, s in where.items() if len(s) > 1}
                if dups:
                    ex = sorted(dups)[:EXAMPLES]
                    self.add("duplicate", node, session,
                             "%d runner frames stored more than once (%d extra copies), e.g. "
                             "%s" % (len(dups), sum(len(s) - 1 for s in dups.values()),
                                     "; ".join("runner_seq %d at seqs %s" % (
                                         rs, dups[rs]) for rs in ex)))
                lost = [rs for rs in by_session.get(session, ()) if rs in acked and
                        rs not in where]
                if lost:
                    reasons = sorted({acked[rs] for rs in lost})
                    self.add("lost", node, session,
                             "%d acknowledged runner frames missing: runner_seq %s "
                             "(acknowledged by %s)" % (len(lost), ranges(lost),
                                                       "; ".join(reasons[:4])))
                # Runner order: first copies, in log order.
                seen, top, inversions = set(), None, []
                for f in frames:
                    if not f.runner or f.runner[0] != runner["runner"]:
                        continue
                    rs = f.runner[2]
                    if rs in seen:
                        continue
                    seen.add(rs)
                    if top is not None and rs < top[0]:
                        inversions.append("runner_seq %d at seq %d after runner_seq %d at "
                                          "seq %d" % (rs, f.seq, top[0], top[1]))
                    if top is None or rs > top[0]:
                        top = (rs, f.seq)
                if inversions:
                    self.add("out-of-order", node, session,
                             "%d runner frames before an earlier runner_seq, e.g. %s" % (
                                 len(inversions), "; ".join(inversions[:EXAMPLES])))

    def check_hook(self, hook, copies):
        session = hook["session"]
        records = hook["records"]
        for node in self.nodes:
            frames = copies.get((node, session))
            if frames is None:
                continue
            where = {}
            for f in frames:
                if f.record and f.record[0] == hook["shim"]:
                    where.setdefault(f.record[1], []).append(f.seq)
            dups = {n: s for n, s in where.items() if len(s) > 1}
            if dups:
                ex = sorted(dups)[:EXAMPLES]
                self.add("duplicate", node, session,
                         "%d records of %s stored more than once (%d extra copies), e.g. %s" % (
                             len(dups), hook["shim"], sum(len(s) - 1 for s in dups.values()),
                             "; ".join("#%d at seqs %s (%d attempts)" % (
                                 n, dups[n], records[n - 1]["attempts"]) for n in ex)))
            lost = [r["n"] for r in records if r["ok"] and r["n"] not in where]
            if lost:
                self.add("lost", node, session,
                         "%d records of %s answered OK are missing: #%s" % (
                             len(lost), hook["shim"], ranges(lost)))
            misplaced = []
            for r in records:
                ok = r["ok"]
                if ok and r["n"] in where and not any(
                        ok["first_seq"] <= s <= ok["last_seq"] for s in where[r["n"]]):
                    misplaced.append("#%d answered seqs %d-%d, held at %s" % (
                        r["n"], ok["first_seq"], ok["last_seq"], where[r["n"]]))
            if misplaced:
                self.add("record-misplaced", node, session,
                         "%d records of %s not at the seqs their OK named, e.g. %s" % (
                             len(misplaced), hook["shim"], "; ".join(misplaced[:EXAMPLES])))
            # Record n+1 was sent only after n's OK: it must come after n.
            inversions = []
            for r in records:
                if not r["ok"] or r["n"] not in where:
                    continue
                first = min(where[r["n"]])
                later = [(m, min(s)) for m, s in where.items() if m > r["n"] and min(s) < first]
                if later:
                    m, s = min(later, key=lambda x: x[1])
                    inversions.append("#%d (told OK before #%d was sent) at seq %d, after #%d "
                                      "at seq %d" % (r["n"], m, first, m, s))
            if inversions:
                self.add("out-of-order", node, session,
                         "%d records of %s stored after a record sent later, e.g. %s" % (
                             len(inversions), hook["shim"], "; ".join(inversions[:EXAMPLES])))

    def check_copies_agree(self, sessions, copies):
        for session in sessions:
            held = {}
            for node in self.nodes:
                frames = copies.get((node, session))
                if frames is None:
                    continue
                held[node] = {}
                for f in frames:
                    held[node].setdefault(f.seq, f)
            if len(held) < 2:
                continue
            every = set()
            for by_seq in held.values():
                every |= set(by_seq)
            for node, by_seq in held.items():
                missing = every - set(by_seq)
                if missing:
                    self.add("missing-seq", node, session,
                             "%d seqs other nodes hold: %s" % (len(missing), ranges(missing)))
            differ = []
            for seq in sorted(every):
                versions = {node: by_seq[seq] for node, by_seq in held.items() if seq in by_seq}
                if len({f.raw for f in versions.values()}) > 1:
                    differ.append("seq %d: %s" % (seq, ", ".join(
                        "%s has %s" % (node, f.ident()) for node, f in sorted(versions.items()))))
            if differ:
                self.add("divergent", None, session,
                         "%d seqs hold different frames on different nodes, e.g. %s" % (
                             len(differ), "; ".join(differ[:EXAMPLES])))

    def run(self, observations=()):
        runners = {r["runner"]: r for r in self.history["runners"]}
        hooks = {h["shim"]: h for h in self.history["hooks"]}
        sessions = sorted({s for r in runners.values() for s in r["sessions"]} |
                          {h["session"] for h in hooks.values()})
        copies = {}
        for node in self.nodes:
            for session in sessions:
                got = self.reads[node].get(session)
                if got is None:
                    self.add("read-failed", node, session, "not read")
                    continue
                if got.get("error"):
                    self.add("read-failed", node, session, "read ended early (%s) after %d "
                             "frames" % (got["error"], len(got["frames"])))
                copies[(node, session)] = [Frame(raw, i) for i, raw in enumerate(got["frames"])]
                self.check_node_session(node, session, copies[(node, session)], runners, hooks)
        for r in runners.values():
            self.check_marks(r)
            self.check_runner(r, copies)
        for h in hooks.values():
            self.check_hook(h, copies)
        self.check_copies_agree(sessions, copies)
        for o in observations:
            self.add("cluster", o.get("node"), None, o["detail"])
        return self.violations


def check(history, reads, observations=()):
    """history: {"runners": [...], "hooks": [...]} (clients.py's history());
    reads: {node: {session: {"frames": [raw bytes], "error": str or None}}}.
    Returns (violations, notes)."""
    c = Checker(history, reads)
    return c.run(observations), c.notes


def check_bus(reads):
    """reads: {node: {"events": [raw SubscribeEventsResponse bytes], "error"}},
    each node's whole bus copy.  Violations:

      bus-read-failed  a node's bus could not be read
      bus-order        a node's bus seqs do not only grow, or one says
                       resync_required within the copy
      bus-divergent    two nodes' copies differ (every node reads the one
                       stream: the same events under the same seqs)
    """
    out = []
    copies = {}
    for node, got in sorted(reads.items()):
        if got["error"] is not None:
            out.append({"kind": "bus-read-failed", "node": node, "session": None,
                        "detail": got["error"]})
            continue
        seqs = []
        for raw in got["events"]:
            fields = top_fields(raw)
            seqs.append(fields.get(1, 0))
        bad = [i for i in range(1, len(seqs)) if seqs[i] <= seqs[i - 1]] + \
            [i for i, s in enumerate(seqs) if s == 0]
        if bad:
            out.append({"kind": "bus-order", "node": node, "session": None,
                        "detail": "seqs at %s: %s" % (bad[:EXAMPLES], [seqs[i] for i in
                                                                       bad[:EXAMPLES]])})
        copies[node] = got["events"]
    nodes = sorted(copies)
    for node in nodes[1:]:
        a, b = copies[nodes[0]], copies[node]
        if a != b:
            first = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]),
                         min(len(a), len(b)))
            what = ""
            if first < min(len(a), len(b)):
                fa, fb = top_fields(a[first]), top_fields(b[first])
                what = ": " + ", ".join(
                    "field %d %r against %r" % (k, fb.get(k), fa.get(k))
                    for k in sorted(set(fa) | set(fb)) if fa.get(k) != fb.get(k))[:600]
            out.append({"kind": "bus-divergent", "node": node, "session": None,
                        "detail": "%d events against %s's %d; first difference at event %d%s" % (
                            len(b), nodes[0], len(a), first, what)})
    return out
