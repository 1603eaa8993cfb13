// Connect's gRPC-Web transport for Node (@connectrpc/connect-node), over
// HTTP/1.1 and over HTTP/2 (h2c), against agenthubd's public door: unary
// and server-streaming calls with a bearer token, errors as codes, and a
// CORS preflight from an allowed and a refused origin.  Code for proto/ is
// protoc-gen-es's, committed in gen/.
//
// Usage: node grpc_web.mjs BASE_URL ALLOWED_ORIGIN
// (BASE_URL: http://HOST:PORT; the server runs with --cors-origin
// ALLOWED_ORIGIN, and sess-1 holds a frame whose text is "hello").
// Prints "ok: ..." and exits 0, or prints the failure and exits 1.
import http from "node:http";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-node";
import { EchoService } from "./gen/agenthub/testing/v1/echo_pb.js";
import { CompassService } from "./gen/compass/v1/services_pb.js";
import { Health, HealthCheckResponse_ServingStatus } from "./gen/grpc/health/v1/health_pb.js";

const [baseUrl, allowedOrigin] = process.argv.slice(2);

function check(condition, what) {
  if (!condition) throw new Error("check failed: " + what);
}

function bearer(token) {
  return { headers: { authorization: "Bearer " + token }, timeoutMs: 10000 };
}

async function refusal(promise) {
  try {
    await promise;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error("expected an error");
}

async function calls(httpVersion) {
  const transport = createGrpcWebTransport({ baseUrl, httpVersion });
  const health = createClient(Health, transport);
  const echo = createClient(EchoService, transport);
  const compass = createClient(CompassService, transport);

  const status = await health.check({ service: "" });
  check(status.status === HealthCheckResponse_ServingStatus.SERVING, "health Check SERVING");

  const reply = await echo.unary({ payload: new TextEncoder().encode("hi") });
  check(new TextDecoder().decode(reply.payload) === "hi", "Unary echoes");

  let count = 0;
  for await (const message of echo.serverStream({ responseCount: 5, responseSize: 7 })) {
    check(message.payload.length === 7, "server stream message size");
    count++;
  }
  check(count === 5, "server stream delivers 5 messages");

  const failed = await refusal(echo.unary({ statusCode: 5, statusMessage: "gone 100%" }));
  check(failed.code === Code.NotFound && failed.rawMessage === "gone 100%",
        "an error status and message arrive: " + failed.message);

  const who = await compass.whoAmI({}, bearer("t-alice"));
  check(who.accountId === "alice", "WhoAmI with a token: " + who.accountId);
  const anonymous = await refusal(compass.whoAmI({}));
  check(anonymous.code === Code.Unauthenticated, "WhoAmI without a token is UNAUTHENTICATED: " + anonymous.code + " " + anonymous.message);

  // A live stream with auth: the frame the test left in sess-1, then stop.
  const abort = new AbortController();
  const pane = compass.subscribeAgentSession({ sessionId: "sess-1", tail: 10 },
                                             { ...bearer("t-alice"), signal: abort.signal });
  for await (const frame of pane) {
    check(frame.event?.event?.case === "assistantText" && frame.event.event.value.text === "hello", "the first frame is sess-1's");
    abort.abort();
    break;
  }
  const hidden = compass.subscribeAgentSession({ sessionId: "sess-1" }, bearer("t-carol"));
  const notFound = await refusal((async () => { for await (const _ of hidden) { /* none */ } })());
  check(notFound.code === Code.NotFound, "carol's view of sess-1 is NOT_FOUND");
}

function preflight(origin) {
  return new Promise((resolve, reject) => {
    const req = http.request(baseUrl + "/compass.v1.CompassService/WhoAmI", {
      method: "OPTIONS",
      headers: {
        origin,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization,content-type,x-grpc-web,x-user-agent",
      },
    }, (res) => {
      res.resume();
      res.on("end", () => resolve(res));
    });
    req.on("error", reject);
    req.end();
  });
}

try {
  for (const httpVersion of ["1.1", "2"]) {
    await calls(httpVersion);
    console.log("ok: gRPC-Web over HTTP/" + httpVersion);
  }
  const allowed = await preflight(allowedOrigin);
  check(allowed.statusCode === 204, "allowed preflight is 204: " + allowed.statusCode);
  check(allowed.headers["access-control-allow-origin"] === allowedOrigin, "allow-origin echoed");
  const allowHeaders = allowed.headers["access-control-allow-headers"] || "";
  for (const name of ["authorization", "content-type", "x-grpc-web", "x-user-agent"])
    check(allowHeaders.includes(name), "preflight allows " + name);
  const refused = await preflight("https://elsewhere.example");
  check(refused.statusCode === 403, "refused preflight is 403: " + refused.statusCode);
  check(refused.headers["access-control-allow-origin"] === undefined, "no CORS headers refused");
  console.log("ok: CORS preflights");
  process.exit(0);
} catch (err) {
  console.log("FAILED: " + (err && err.stack ? err.stack : err));
  process.exit(1);
}
