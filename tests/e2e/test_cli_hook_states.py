"""The states a watcher sees while `agenthub hook claude` follows a Claude Code
session: realistic sessions run hook by hook through the real binary against
a real server, with the state `show` reports after each one; what the events
stream (the board's feed) says as a session enters and leaves BLOCKED; and
every event Claude Code's hook types define, each exiting 0 in time with
nothing private recorded, its payload type-checked against the hook input
types the Claude agent SDK publishes."""

import json
import os
import re
import shutil
import subprocess
import threading
import time
import uuid

import pytest

from cli_harness import ROOT, pb, server  # noqa: F401  (fixture)

PAYLOADS = ROOT / "tests/hooks/claude"
SDK_DIR = ROOT / "tests/node/claude-sdk"


def payload(event, sid, **overrides):
    """tests/hooks/claude/EVENT.json for session SID, with OVERRIDES."""
    hook = json.loads((PAYLOADS / f"{event}.json").read_text())
    hook.update(session_id=sid, **overrides)
    return hook


class Session:
    """One Claude Code session's hooks, fired through the real shim."""

    def __init__(self, server, terminal, spool):
        self.server = server
        self.terminal = terminal
        self.spool = spool
        self.sid = str(uuid.uuid4())

    def fire(self, event, **overrides):
        text = json.dumps(payload(event, self.sid, **overrides))
        start = time.monotonic()
        r = self.server.cli("hook", "claude", input=text, AGENTHUB_TERMINAL_ID=self.terminal,
                            AGENTHUB_SPOOL=self.spool)
        elapsed = time.monotonic() - start
        assert r.returncode == 0 and r.stdout == "", r.stderr
        assert elapsed < 2.0, f"{event} took {elapsed:.2f} s"

    def state(self):
        return json.loads(self.server.ok("show", f"claude:{self.sid}", "--json"))["state"]

    def session_id(self):
        return json.loads(self.server.ok("show", f"claude:{self.sid}", "--json"))["session_id"]

    def log(self):
        return self.server.log_json(f"claude:{self.sid}")

    def run(self, steps):
        """Fires each (event, overrides, state) of STEPS; after each, the
        state `show` reports must be STATE."""
        seen = []
        for event, overrides, want in steps:
            self.fire(event, **overrides)
            seen.append((event, self.state()))
            assert seen[-1][1] == want, f"after {event}: {seen}"


@pytest.fixture
def session(server, tmp_path):
    s = Session(server, server.terminal(), tmp_path / "spool.jsonl")
    s.fire("SessionStart")
    return s


START = ("UserPromptSubmit", {}, "working")
TOOL = [("PreToolUse", {}, "working"), ("PostToolUse", {}, "working")]
ASK = ("PermissionRequest", {}, "blocked")

# Realistic sessions, hook by hook, with the state a watcher expects after each.
SESSIONS = {
    "a tool, then one that needs a permission, approved": [
        START, *TOOL,
        ("PreToolUse", {"tool_name": "Write"}, "working"),
        ASK,
        ("Notification", {}, "blocked"),
        ("PostToolUse", {"tool_name": "Write"}, "working"),
        ("Stop", {}, "done"),
    ],
    "the approved tool fails": [
        START, ("PreToolUse", {}, "working"), ASK,
        ("PostToolUseFailure", {}, "working"),
        ("Stop", {}, "done"),
    ],
    "a permission denied without asking": [
        START, ("PreToolUse", {}, "working"),
        ("PermissionDenied", {}, "working"),
        ("Stop", {}, "done"),
    ],
    "an MCP elicitation, answered": [
        START, ("PreToolUse", {"tool_name": "mcp__forms__ask"}, "working"),
        ("Elicitation", {}, "blocked"),
        ("Notification", {"notification_type": "elicitation_dialog"}, "blocked"),
        ("ElicitationResult", {}, "working"),
        ("PostToolUse", {"tool_name": "mcp__forms__ask"}, "working"),
        ("Stop", {}, "done"),
    ],
    "a URL elicitation and a subagent's permission prompt block": [
        START,
        ("Notification", {"notification_type": "elicitation_url_dialog"}, "blocked"),
        ("ElicitationResult", {"mode": "url"}, "working"),
        ("SubagentStart", {}, "working"),
        ("Notification", {"notification_type": "worker_permission_prompt"}, "blocked"),
        ("PostToolUse", {"agent_id": "agent-7"}, "working"),
        ("SubagentStop", {}, "working"),
        ("Stop", {}, "done"),
    ],
    "the turn ends on an API error": [
        START, *TOOL, ("StopFailure", {}, "done"),
    ],
    "an API error while a permission waits": [
        START, ASK, ("StopFailure", {"error": "server_error"}, "done"),
    ],
    "the user presses Esc during a tool": [
        START, ("PreToolUse", {}, "working"),
        ("PostToolUseFailure", {"error": "Interrupted by user", "is_interrupt": True}, "done"),
    ],
    "Esc at a permission prompt": [
        START, ("PreToolUse", {}, "working"), ASK,
        ("PostToolUseFailure", {"is_interrupt": True}, "done"),
    ],
    "idle_prompt ends a stale working (Esc while the model streams sends no hook)": [
        START,
        ("Notification", {"notification_type": "idle_prompt",
                          "message": "Claude is waiting for your input"}, "done"),
    ],
    "idle_prompt ends a stale blocked": [
        START, ASK,
        ("Notification", {"notification_type": "idle_prompt",
                          "message": "Claude is waiting for your input"}, "done"),
    ],
    "a manual compaction between turns": [
        START, ("Stop", {}, "done"),
        ("PreCompact", {}, "working"),
        ("PostCompact", {}, "done"),
        ("SessionStart", {"source": "compact"}, "done"),
        START,
    ],
    "an automatic compaction inside a turn": [
        START, *TOOL,
        ("PreCompact", {"trigger": "auto"}, "working"),
        ("PostCompact", {"trigger": "auto"}, "working"),
        ("Stop", {}, "done"),
    ],
    "events that change nothing leave the state alone": [
        START, ASK,
        ("PostToolBatch", {}, "blocked"),
        ("CwdChanged", {}, "blocked"),
        ("MessageDisplay", {}, "blocked"),
        ("PostToolUse", {}, "working"),
        ("TaskCompleted", {}, "working"),
        ("Stop", {}, "done"),
        ("FileChanged", {}, "done"),
    ],
    "the end": [
        START, ("Stop", {}, "done"), ("SessionEnd", {}, "stopped"),
    ],
}


@pytest.mark.parametrize("name", list(SESSIONS))
def test_the_state_after_each_hook_is_what_a_watcher_expects(session, name):
    assert session.state() in ("starting", "ready")
    session.run(SESSIONS[name])
    out = json.dumps(session.log())
    assert "s3cr3t" not in out


def test_session_end_is_stopped_in_show_and_in_the_logs_last_state(session):
    session.run([START, ("Stop", {}, "done"), ("SessionEnd", {}, "stopped")])
    states = [f["data"]["state"] for f in session.log() if f["type"] == "state"]
    assert states[-1] == "stopped"
    assert "starting" not in states[1:], states
    listed = [json.loads(line) for line in session.server.ok("list", "--json").splitlines()]
    assert [r["state"] for r in listed if r["native_id"] == session.sid] == ["stopped"]


def test_the_error_of_a_failed_turn_is_recorded_as_its_kind_only(session):
    session.fire("UserPromptSubmit")
    session.fire("StopFailure")
    session.fire("StopFailure", error="Request failed: s3cr3t text from the API")
    session.fire("PostToolUseFailure")
    stops = [f["data"] for f in session.log() if f["type"] in ("stop", "tool_end")]
    assert stops == [{"error": "rate_limit"}, {"error": "other"},
                     {"tool_name": "Bash", "failed": True}]
    assert "s3cr3t" not in json.dumps(session.log())


class Events:
    """SubscribeEvents (the board's feed) in the background: the states of
    one session's status events, in order."""

    def __init__(self, server, token="t-admin"):
        import grpc
        _, services = pb()
        self.channel = grpc.insecure_channel(server.public)
        call = self.channel.unary_stream(
            "/compass.v1.CompassService/SubscribeEvents",
            request_serializer=services.SubscribeEventsRequest.SerializeToString,
            response_deserializer=services.SubscribeEventsResponse.FromString)
        self.stream = call(services.SubscribeEventsRequest(),
                           metadata=[("authorization", f"Bearer {token}")], timeout=60)
        self.items = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            for event in self.stream:
                if event.HasField("agent_session_status"):
                    self.items.append(event.agent_session_status)
        except Exception:  # noqa: BLE001  (cancelled at the end)
            pass

    def states(self, session_id):
        frames, _ = pb()
        return [frames.AgentSessionState.Name(s.state)[len("AGENT_SESSION_STATE_"):].lower()
                for s in self.items if s.session_id == session_id]

    def close(self):
        self.stream.cancel()
        self.channel.close()


def test_the_events_stream_says_when_a_session_enters_and_leaves_blocked(session):
    """What a board's attention (a count in the title, a notification) is
    driven by: a status event as the session enters BLOCKED and one as it
    leaves it, for every way Claude Code asks and every way it goes on."""
    events = Events(session.server)
    try:
        time.sleep(0.3)
        session.fire("UserPromptSubmit")
        for ask, answer in [("PermissionRequest", ("PostToolUse", {})),
                            ("Elicitation", ("ElicitationResult", {})),
                            ("PermissionRequest", ("PostToolUseFailure", {})),
                            ("PermissionRequest", ("StopFailure", {}))]:
            session.fire(ask)
            session.fire(answer[0], **answer[1])
            if answer[0] == "StopFailure":
                session.fire("UserPromptSubmit")
        want = ["working", "blocked", "working", "blocked", "working", "blocked", "working",
                "blocked", "done", "working"]
        sid = session.session_id()

        def since_the_prompt():
            got = events.states(sid)
            return got[got.index("working"):] if "working" in got else got
        deadline = time.monotonic() + 10
        while since_the_prompt() != want and time.monotonic() < deadline:
            time.sleep(0.05)
        assert since_the_prompt() == want
    finally:
        events.close()


def test_every_event_exits_zero_in_time_and_records_nothing_private(session):
    """Every event Claude Code defines, and one it may add, known to the
    shim or not."""
    events = sorted(p.stem for p in PAYLOADS.glob("*.json"))
    assert len(events) >= 34
    for event in events + ["SomeEventClaudeCodeAddsLater"]:
        if event in ("SessionStart", "SessionEnd"):
            continue
        if event == "SomeEventClaudeCodeAddsLater":
            hook = dict(payload("Stop", session.sid), hook_event_name=event, secret="s3cr3t")
            text = json.dumps(hook)
        else:
            text = json.dumps(payload(event, session.sid))
        start = time.monotonic()
        r = session.server.cli("hook", "claude", input=text,
                               AGENTHUB_TERMINAL_ID=session.terminal,
                               AGENTHUB_SPOOL=session.spool)
        assert r.returncode == 0 and r.stdout == "", (event, r.stderr)
        assert time.monotonic() - start < 2.0, event
    assert not session.spool.exists() or session.spool.read_text() == ""
    out = json.dumps(session.log())
    assert "s3cr3t" not in out
    for name in ("Bash", "Write", "forms", "general-purpose", "manual", "rate_limit"):
        assert name in out


# --- The payloads are Claude Code's own shapes --------------------------------------

def sdk_modules(tmp_path):
    """node_modules holding the SDK's declarations and tsc: tests/node/claude-sdk's,
    installed from its lock file when missing or stale; with
    AGENTHUB_CLAUDE_SDK=latest, the newest SDK release in a scratch folder
    (the way to see which events a new release adds)."""
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed (make deps)")
    if os.environ.get("AGENTHUB_CLAUDE_SDK") == "latest":
        where = tmp_path / "sdk"
        where.mkdir()
        (where / "package.json").write_text('{"private": true}')
        subprocess.run(["npm", "install", "--omit=optional", "--no-audit", "--no-fund",
                        "@anthropic-ai/claude-agent-sdk@latest", "typescript@5.9.3"],
                       cwd=where, check=True, capture_output=True, timeout=300)
        return where / "node_modules"
    stamp = SDK_DIR / "node_modules/.package-lock.json"
    if not stamp.exists() or stamp.stat().st_mtime < (SDK_DIR / "package-lock.json").stat().st_mtime:
        r = subprocess.run(["npm", "ci", "--omit=optional", "--no-audit", "--no-fund"],
                           cwd=SDK_DIR, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
    return SDK_DIR / "node_modules"


def ts_literal(value):
    return json.dumps(value, indent=2, ensure_ascii=False)


def test_every_payload_type_checks_against_the_sdks_hook_types(tmp_path):
    """tests/hooks/claude holds one payload per hook event the SDK defines,
    each exactly of that event's input type (tsc's excess-property check:
    no field the type lacks, none it requires missing).  An event the SDK
    adds and no payload covers fails the Record<HookEvent, true> below."""
    modules = sdk_modules(tmp_path)
    (tmp_path / "node_modules").symlink_to(modules)
    events = sorted(p.stem for p in PAYLOADS.glob("*.json"))
    lines = ["import type { HookEvent, HookInput } from '@anthropic-ai/claude-agent-sdk';",
             "type Input<E extends HookEvent> = Extract<HookInput, { hook_event_name: E }>;"]
    for event in events:
        hook = json.loads((PAYLOADS / f"{event}.json").read_text())
        assert hook["hook_event_name"] == event
        lines.append(f"export const {event}: Input<'{event}'> = {ts_literal(hook)};")
    lines.append("export const covered: Record<HookEvent, true> = {%s};" %
                 ", ".join(f"{e}: true" for e in events))
    (tmp_path / "hooks.mts").write_text("\n".join(lines) + "\n")
    r = subprocess.run([str(modules / ".bin/tsc"), "--noEmit", "--strict", "--skipLibCheck",
                        "--module", "nodenext", "--moduleResolution", "nodenext",
                        "--target", "es2022", "hooks.mts"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    declared = (modules / "@anthropic-ai/claude-agent-sdk/sdk.d.ts").read_text()
    listed = re.search(r"HOOK_EVENTS: readonly \[([^\]]*)\]", declared)
    assert listed, "the SDK no longer declares HOOK_EVENTS"
    assert sorted(re.findall(r"'(\w+)'", listed[1])) == events


def test_the_settings_register_every_mapped_event_and_the_readme_names_all():
    settings = json.loads((ROOT / "deploy/claude/settings.json").read_text())
    mapped = re.findall(r'\{\.event = "(\w+)"', (ROOT / "src/cli/hook_map.c").read_text())
    assert sorted(settings["hooks"]) == sorted(mapped)
    for arms in settings["hooks"].values():
        assert [h["command"] for a in arms for h in a["hooks"]] == ["agenthub hook claude"]
    readme = (ROOT / "deploy/claude/README.md").read_text()
    first_cells = re.findall(r"^\| ([^|]+) \|", readme, re.M)
    named = {e for cell in first_cells for e in re.split(r"[ /,]+", cell)}
    for event in (p.stem for p in PAYLOADS.glob("*.json")):
        assert event in named, f"deploy/claude/README.md's tables lack {event}"


def test_every_payload_seeds_the_hook_fuzz_target():
    corpus = ROOT / "tests/fuzz/corpus/fuzz_hook_map"
    for p in PAYLOADS.glob("*.json"):
        seed = corpus / f"claude-{p.stem}"
        assert seed.exists(), f"no fuzz seed for {p.stem} (tests/fuzz/make_corpus.py)"
        assert json.loads(seed.read_bytes()[1:]) == json.loads(p.read_text())
