// The Connect protocol against agenthubd with connect-node's own client
// (createConnectTransport), driven by tests/e2e/test_connect.py.
//
// Usage: node connect_client.mjs DESCRIPTOR_SET PUBLIC RUNNER HTTP_VERSION FORMAT
//   HTTP_VERSION is "1.1" or "2"; FORMAT is "binary" or "json".
// The services come from the descriptor set at run time (no generated code).
// Prints "ok NAME" per check passed; exits 1 at the first failure.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { createFileRegistry, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";

const [setPath, publicAddr, runnerAddr, httpVersion, format] = process.argv.slice(2);
const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, readFileSync(setPath)));

function client(service, addr) {
  const transport = createConnectTransport({
    baseUrl: `http://${addr}`,
    httpVersion,
    useBinaryFormat: format === "binary",
  });
  return createClient(registry.getService(service), transport);
}

const compass = client("compass.v1.CompassService", publicAddr);
const runner = client("compass.v1.RunnerService", runnerAddr);
const as = (token) => ({ headers: { authorization: `Bearer ${token}` } });

function ok(name) {
  console.log(`ok ${name}`);
}

async function refused(promise) {
  try {
    await promise;
  } catch (err) {
    return ConnectError.from(err);
  }
  assert.fail("the call succeeded");
}

// A PublishEvents request carrying one frame of the session's pane.
let runnerSeq = 0;
function frame(sessionId, text, state = 0) {
  runnerSeq += 1;
  const value = text
    ? { state, typedEvent: { eventId: `e${runnerSeq}`, event: { case: "assistantText", value: { text } } } }
    : { state };
  return { runnerSeq: BigInt(runnerSeq), sessionId, frame: { frame: { case: "session", value } } };
}

async function* items(list) {
  for (const x of list) yield x;
}

async function main() {
  // Unary.
  const me = await compass.whoAmI({}, as("t-bob"));
  assert.equal(me.accountId, "bob");
  const info = await compass.getServerInfo({}, as("t-bob"));
  assert.ok(info.version.length > 0);
  ok("unary");

  // Errors, with the codes a gRPC client would get.
  let err = await refused(compass.whoAmI({}));
  assert.equal(err.code, Code.Unauthenticated);
  const hidden = await refused(compass.getAgentStatus({ sessionId: "sess-1" }, as("t-carol")));
  const unknown = await refused(compass.getAgentStatus({ sessionId: "sess-nope" }, as("t-carol")));
  assert.equal(hidden.code, Code.NotFound);
  assert.equal(hidden.rawMessage, unknown.rawMessage);
  err = await refused(compass.startAgentSession({ containerName: "ctr-1" }, as("t-carol")));
  assert.ok([Code.PermissionDenied, Code.NotFound].includes(err.code), String(err.code));
  ok("errors");

  // A Runner: Enroll, then Sessions (bidi; HTTP/2 only).
  const enrolled = await runner.enroll({ runnerId: "runner-1" }, as("t-runner-1"));
  assert.equal(enrolled.reattached, false);
  const abortSessions = new AbortController();
  let sessions = null;
  if (httpVersion === "2") {
    const requests = [];
    let wake = null;
    const outbox = (async function* () {
      yield {};
      for (;;) {
        while (requests.length) yield requests.shift();
        await new Promise((resolve) => (wake = resolve));
      }
    })();
    const stream = runner.sessions(outbox, { ...as("t-runner-1"), signal: abortSessions.signal });
    const iter = stream[Symbol.asyncIterator]();
    const first = await iter.next();
    assert.equal(first.value.command.case, "status");
    requests.push({
      requestId: first.value.requestId,
      result: {
        case: "status",
        value: { statuses: [{ sessionId: "sess-1", state: 2 }] },
      },
    });
    wake();
    sessions = iter;
    ok("bidi");
  }
  // Over HTTP/1.1 there is no bidi: the spec leaves it to HTTP/2, and the
  // server's refusal (unimplemented) is checked with curl, which does not
  // race the server's answer with its own request body.

  // Server streaming: bob's pane of sess-1 while the Runner publishes (client
  // streaming); the agent stops, the pane ends OK with agenthub-last-seq.
  const trailers = new Headers();
  const pane = compass.subscribeAgentSession(
    { sessionId: "sess-1", tail: 10 },
    { ...as("t-bob"), onTrailer: (t) => t.forEach((v, k) => trailers.set(k, v)) },
  );
  const texts = [];
  let lastSeq = 0n;
  const reading = (async () => {
    for await (const f of pane) {
      if (f.event?.event.case === "assistantText") texts.push(f.event.event.value.text);
      lastSeq = f.seq;
    }
  })();
  const published = await runner.publishEvents(
    items([frame("sess-1", "one"), frame("sess-1", "two <b>&</b>"), frame("sess-1", "", 4)]),
    as("t-runner-1"),
  );
  assert.ok(published);
  ok("client streaming");
  await reading;
  assert.deepEqual(texts.slice(-2), ["one", "two <b>&</b>"]);
  assert.equal(trailers.get("agenthub-last-seq"), String(lastSeq));
  ok("server streaming with trailers");

  abortSessions.abort();
  if (sessions) await sessions.return?.().catch(() => {});
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
