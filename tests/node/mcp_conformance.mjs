// `agenthub mcp` against the official MCP TypeScript SDK, two releases: the
// current one (protocol 2025-11-25) and the last one on 2025-06-18.
//
// 1. Each SDK's stdio Client connects (initialize, version negotiation),
//    lists the tools, calls both, and sees an undeclared argument refused.
// 2. Every reply shape agenthub can produce, provoked with raw lines, is
//    parsed by each release's own schemas (JSON-RPC envelope and the
//    method's result type).  Errors that have no id to echo (unparsable
//    JSON, a null or invalid id) carry no "id" member: 2025-11-25 allows
//    that; 2025-06-18's envelope requires an id and has no shape for them,
//    so those replies are checked against 2025-11-25 only.
//
// Usage: node mcp_conformance.mjs AGENTHUB_BINARY SESSION_ID
// (AGENTHUB_ADDR and AGENTHUB_TOKEN in the environment).  Exits 0 and prints
// "ok: ..." when every check passed; otherwise prints the failure, exits 1.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import * as current from "@modelcontextprotocol/sdk/types.js";
import { Client as OldClient } from "mcp-sdk-2025-06-18/client/index.js";
import { StdioClientTransport as OldStdioClientTransport } from "mcp-sdk-2025-06-18/client/stdio.js";
import * as old from "mcp-sdk-2025-06-18/types.js";

const [binary, session] = process.argv.slice(2);
const checks = [];

function check(condition, what) {
  if (!condition) throw new Error("check failed: " + what);
  checks.push(what);
}

async function sdkSession(ClientClass, TransportClass, types, expectedVersion) {
  const transport = new TransportClass({ command: binary, args: ["mcp"], env: process.env,
                                         stderr: "pipe" });
  const client = new ClientClass({ name: "agenthub-conformance", version: "1" });
  await client.connect(transport);
  check(client.getServerVersion().name === "agenthub", `${expectedVersion}: serverInfo`);
  check(transport._process !== undefined, `${expectedVersion}: stdio transport started`);
  const tools = await client.listTools();
  const names = tools.tools.map((t) => t.name).sort();
  check(JSON.stringify(names) === '["agenthub_agent_emit","agenthub_agent_log"]',
        `${expectedVersion}: tools/list names`);
  const emitted = await client.callTool({ name: "agenthub_agent_emit",
                                          arguments: { session, type: "prompt",
                                                       data: { length: 3 } } });
  check(emitted.isError === false, `${expectedVersion}: emit succeeds`);
  const log = await client.callTool({ name: "agenthub_agent_log",
                                      arguments: { session, tail: 5 } });
  check(log.isError === false && log.content[0].type === "text" &&
        log.content[0].text.includes('"prompt"'), `${expectedVersion}: log shows the record`);
  let refused = null;
  try {
    await client.callTool({ name: "agenthub_agent_log", arguments: { session, tial: 5 } });
  } catch (e) {
    refused = e;
  }
  check(refused && refused.code === types.ErrorCode.InvalidParams,
        `${expectedVersion}: undeclared argument refused with -32602`);
  await client.close();
}

// Sends LINES to a fresh `agenthub mcp`; returns its replies, one per line.
async function rawReplies(lines) {
  const child = spawn(binary, ["mcp"], { env: process.env, stdio: ["pipe", "pipe", "inherit"] });
  const replies = [];
  const reader = createInterface({ input: child.stdout });
  reader.on("line", (line) => replies.push(JSON.parse(line)));
  for (const line of lines) child.stdin.write(line + "\n");
  child.stdin.end();
  await new Promise((resolve) => child.on("close", resolve));
  return replies;
}

function parses(schema, value) {
  return schema.safeParse(value).success;
}

async function replyShapes() {
  const init = (id, version) => JSON.stringify({
    jsonrpc: "2.0", id, method: "initialize",
    params: { protocolVersion: version, capabilities: {},
              clientInfo: { name: "raw", version: "1" } } });
  const request = (id, method, params) =>
    JSON.stringify(params === undefined ? { jsonrpc: "2.0", id, method }
                                        : { jsonrpc: "2.0", id, method, params });
  const cases = [
    // [line, result schema name or "error", has an id to echo]
    [init(1, "2025-11-25"), "InitializeResultSchema", true],
    [init("two", "2025-06-18"), "InitializeResultSchema", true],
    [request(3, "ping"), "EmptyResultSchema", true],
    [request(4, "tools/list"), "ListToolsResultSchema", true],
    [request(5, "tools/call", { name: "agenthub_agent_log", arguments: { session, tail: 2 } }),
     "CallToolResultSchema", true],
    [request(6, "tools/call", { name: "agenthub_agent_log",
                                arguments: { session: "no-such-session" } }),
     "CallToolResultSchema", true],
    [request(7, "resources/list"), "error", true],
    [request(8, "tools/call", { name: "agenthub_nope" }), "error", true],
    [request(9, "tools/call", { name: "agenthub_agent_log", arguments: { session, x: 1 } }),
     "error", true],
    [JSON.stringify({ jsonrpc: "1.0", id: 10, method: "ping" }), "error", true],
    ['{"jsonrpc": "2.0", "id": 11, "method": ', "error", false],
    ['{"jsonrpc": "2.0", "id": null, "method": "ping"}', "error", false],
    ['{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', "error", false],
    ['{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', "error", false],
    ["[]", "error", false],
    ['"just a string"', "error", false],
  ];
  const replies = await rawReplies(cases.map((c) => c[0]));
  check(replies.length === cases.length, `one reply per request (${replies.length})`);
  cases.forEach(([line, kind, hasId], i) => {
    const reply = replies[i];
    const what = `reply to ${line.slice(0, 60)}`;
    check(parses(current.JSONRPCMessageSchema, reply), `${what}: 2025-11-25 envelope`);
    if (hasId) {
      check(parses(old.JSONRPCMessageSchema, reply), `${what}: 2025-06-18 envelope`);
    } else {
      check(!("id" in reply), `${what}: no id member`);
    }
    if (kind === "error") {
      check(reply.error && Number.isInteger(reply.error.code), `${what}: an error`);
    } else {
      check(parses(current[kind], reply.result), `${what}: 2025-11-25 ${kind}`);
      check(parses(old[kind], reply.result), `${what}: 2025-06-18 ${kind}`);
    }
  });
  check(replies[0].result.protocolVersion === "2025-11-25", "2025-11-25 negotiated");
  check(replies[1].result.protocolVersion === "2025-06-18", "2025-06-18 negotiated");
}

try {
  await sdkSession(Client, StdioClientTransport, current, "2025-11-25");
  await sdkSession(OldClient, OldStdioClientTransport, old, "2025-06-18");
  await replyShapes();
  console.log(`ok: ${checks.length} checks`);
} catch (e) {
  console.log(String(e && e.stack ? e.stack : e));
  process.exit(1);
}
