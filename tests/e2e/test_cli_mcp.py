"""`agenthub mcp`: an MCP session scripted over pipes against a live agenthubd:
handshake with version negotiation, ping, tools/list, both tools, tool
failures, malformed JSON, unknown methods and tools, bad arguments, and
nothing but protocol on stdout."""

import json
import subprocess
from pathlib import Path

import pytest

from cli_harness import AGENTHUB, server  # noqa: F401  (fixture)


class Mcp:
    def __init__(self, server, token="t-agent-1"):
        self.proc = subprocess.Popen([str(AGENTHUB), "mcp"], env=server.env(token),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1)
        self.next_id = 0

    def send_line(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def read(self):
        line = self.proc.stdout.readline()
        assert line.endswith("\n"), "no reply"
        return json.loads(line)

    def call(self, method, params=None):
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send_line(json.dumps(message))
        reply = self.read()
        assert reply["jsonrpc"] == "2.0" and reply["id"] == self.next_id, reply
        return reply

    def notify(self, method):
        self.send_line(json.dumps({"jsonrpc": "2.0", "method": method}))

    def tool(self, name, arguments):
        return self.call("tools/call", {"name": name, "arguments": arguments})

    def close(self):
        self.proc.stdin.close()
        rest = self.proc.stdout.read()
        err = self.proc.stderr.read()
        rc = self.proc.wait(10)
        return rc, rest, err


@pytest.fixture
def session(server):
    terminal = server.terminal()
    return server.ok("session", "open", f"@{terminal}", "--provider", "claude",
                     "--native-id", "mcp-1").strip()


def initialize(mcp, version):
    return mcp.call("initialize", {"protocolVersion": version, "capabilities": {},
                                   "clientInfo": {"name": "pytest", "version": "1"}})


@pytest.mark.parametrize("asked,expected", [
    ("2025-11-25", "2025-11-25"), ("2025-06-18", "2025-06-18"), ("2025-03-26", "2025-03-26"),
    ("2024-11-05", "2024-11-05"), ("2023-01-01", "2025-11-25"), ("2099-12-31", "2025-11-25"),
])
def test_version_negotiation(server, asked, expected):
    mcp = Mcp(server)
    reply = initialize(mcp, asked)
    result = reply["result"]
    assert result["protocolVersion"] == expected
    assert "tools" in result["capabilities"]
    assert result["serverInfo"]["name"] == "agenthub"
    rc, rest, _ = mcp.close()
    assert rc == 0 and rest == ""


def test_scripted_session(server, session):
    mcp = Mcp(server)
    initialize(mcp, "2025-06-18")
    mcp.notify("notifications/initialized")
    assert mcp.call("ping")["result"] == {}

    tools = mcp.call("tools/list")["result"]["tools"]
    assert sorted(t["name"] for t in tools) == ["agenthub_agent_emit", "agenthub_agent_log"]
    for t in tools:
        assert t["inputSchema"]["type"] == "object" and "session" in t["inputSchema"]["required"]

    r = mcp.tool("agenthub_agent_emit", {"session": session, "type": "prompt",
                                         "data": {"length": 12}})["result"]
    assert r["isError"] is False and r["content"][0]["type"] == "text"
    r = mcp.tool("agenthub_agent_emit", {"session": "claude:mcp-1", "type": "stop"})["result"]
    assert r["isError"] is False

    r = mcp.tool("agenthub_agent_log", {"session": "claude:mcp-1", "tail": 10})["result"]
    assert r["isError"] is False
    frames = [json.loads(line) for line in r["content"][0]["text"].splitlines()]
    assert [(f["type"], f["data"]) for f in frames if f["type"] != "state"] == \
        [("prompt", {"length": 12}), ("stop", {})]
    assert frames == server.log_json(session)[-len(frames):]
    r = mcp.tool("agenthub_agent_log", {"session": session, "tail": 1})["result"]
    assert len(r["content"][0]["text"].splitlines()) == 1

    # Tool failures are results with isError.
    r = mcp.tool("agenthub_agent_emit", {"session": session, "type": "bogus"})["result"]
    assert r["isError"] is True and "RECORD_INVALID" in r["content"][0]["text"]
    r = mcp.tool("agenthub_agent_log", {"session": "no-such-session"})["result"]
    assert r["isError"] is True

    # Malformed JSON: -32700 with no id to echo (so none in the reply); the
    # session goes on.
    mcp.send_line('{"jsonrpc": "2.0", "id": 99, "method": ')
    reply = mcp.read()
    assert reply["error"]["code"] == -32700 and "id" not in reply
    # A null or invalid id is not echoed either.
    for bad in ('null', '{"x": 1}', '1.5'):
        mcp.send_line('{"jsonrpc": "2.0", "id": %s, "method": "ping"}' % bad)
        reply = mcp.read()
        assert reply["error"]["code"] == -32600 and "id" not in reply, (bad, reply)
    # Arguments the inputSchema does not declare are refused.
    err = mcp.tool("agenthub_agent_log", {"session": session, "tial": 5})["error"]
    assert err["code"] == -32602 and "tial" in err["message"]
    assert mcp.tool("agenthub_agent_emit", {"session": session, "type": "stop",
                                            "extra": 1})["error"]["code"] == -32602
    # Unknown method: -32601.
    assert mcp.call("resources/list")["error"]["code"] == -32601
    assert mcp.call("no/such/method", {})["error"]["code"] == -32601
    # Unknown tool and bad arguments: -32602.
    assert mcp.tool("agenthub_nope", {})["error"]["code"] == -32602
    assert mcp.tool("agenthub_agent_log", {})["error"]["code"] == -32602
    assert mcp.tool("agenthub_agent_log", {"session": session, "tail": "ten"})["error"]["code"] \
        == -32602
    assert mcp.tool("agenthub_agent_log", {"session": session, "tail": 0})["error"]["code"] \
        == -32602
    assert mcp.tool("agenthub_agent_emit", {"session": session})["error"]["code"] == -32602
    assert mcp.tool("agenthub_agent_emit", {"session": session, "type": "stop",
                                            "data": [1]})["error"]["code"] == -32602
    assert mcp.call("tools/call", {"arguments": {}})["error"]["code"] == -32602
    # Notifications (known or not) get no reply: the next reply is the ping's.
    mcp.notify("notifications/cancelled")
    mcp.notify("notifications/whatever")
    mcp.send_line("")
    assert mcp.call("ping")["result"] == {}

    rc, rest, _ = mcp.close()
    assert rc == 0
    assert rest == ""  # only protocol on stdout, and nothing unanswered


def test_unreachable_server_is_a_tool_error(server):
    env = server.env("t-agent-1")
    env["AGENTHUB_ADDR"] = "127.0.0.1:1"
    proc = subprocess.run(
        [str(AGENTHUB), "mcp"], env=env, capture_output=True, text=True, timeout=30,
        input="\n".join([
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                        "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                                   "clientInfo": {"name": "t", "version": "1"}}}),
            json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                        "params": {"name": "agenthub_agent_log",
                                   "arguments": {"session": "sess-1"}}}),
        ]) + "\n")
    assert proc.returncode == 0
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["id"] for r in replies] == [1, 2]
    assert replies[1]["result"]["isError"] is True
    assert "UNAVAILABLE" in replies[1]["result"]["content"][0]["text"]


NODE_TESTS = Path(__file__).resolve().parents[1] / "node"


def test_official_mcp_sdks_accept_every_reply(server, session):
    """The MCP TypeScript SDK (current release, protocol 2025-11-25, and the
    last release on 2025-06-18) drives `agenthub mcp` over stdio, and every
    reply shape is parsed by each release's own schemas
    (tests/node/mcp_conformance.mjs)."""
    assert (NODE_TESTS / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir(), \
        "tests/node has no node_modules: run make deps"
    out = subprocess.run(["node", str(NODE_TESTS / "mcp_conformance.mjs"), str(AGENTHUB), session],
                         env=server.env("t-agent-1"), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("ok: "), out.stdout
