// @grpc/grpc-js with compression on (the channel option
// grpc.default_compression_algorithm), against agenthubd: every call kind
// works with compressed requests, and compressed responses are read back.
//
// Usage: node grpc_compression.mjs HOST:PORT PROTO_DIR ALGORITHM TOKEN
// (ALGORITHM: gzip or deflate).  Prints "ok: ..." and exits 0, or prints the
// failure and exits 1.
import grpc from "@grpc/grpc-js";
import protoLoader from "@grpc/proto-loader";

const [address, protoDir, algorithm, token] = process.argv.slice(2);
const algorithms = { deflate: 1, gzip: 2 };
const options = { "grpc.default_compression_algorithm": algorithms[algorithm] };

function load(file) {
  return grpc.loadPackageDefinition(protoLoader.loadSync(file, {
    includeDirs: [protoDir], keepCase: true, longs: String, enums: String, defaults: true }));
}

function unary(client, method, request, metadata = new grpc.Metadata()) {
  return new Promise((resolve, reject) =>
    client[method](request, metadata, { deadline: Date.now() + 10000 },
                   (err, reply) => (err ? reject(err) : resolve(reply))));
}

function collect(stream) {
  return new Promise((resolve, reject) => {
    const got = [];
    stream.on("data", (m) => got.push(m));
    stream.on("error", reject);
    stream.on("end", () => resolve(got));
  });
}

function check(condition, what) {
  if (!condition) throw new Error("check failed: " + what);
}

const echoPkg = load("agenthub/testing/v1/echo.proto");
const healthPkg = load("grpc/health/v1/health.proto");
const compassPkg = load("compass/v1/services.proto");
const echo = new echoPkg.agenthub.testing.v1.EchoService(address, grpc.credentials.createInsecure(),
                                                          options);
const health = new healthPkg.grpc.health.v1.Health(address, grpc.credentials.createInsecure(),
                                                   options);
const compass = new compassPkg.compass.v1.CompassService(address,
                                                         grpc.credentials.createInsecure(),
                                                         options);

try {
  const status = await unary(health, "Check", { service: "" });
  check(status.status === "SERVING", "health Check answers SERVING");

  // Compressible and incompressible payloads, small and large.
  const text = Buffer.from("the agent is working on the tests. ".repeat(3000));
  const noise = Buffer.alloc(50000);
  for (let i = 0; i < noise.length; i++) noise[i] = (i * 2654435761) >>> 24;
  for (const payload of [Buffer.from("hi"), text, noise]) {
    const reply = await unary(echo, "Unary", { payload });
    check(Buffer.compare(reply.payload, payload) === 0, `Unary echoes ${payload.length} bytes`);
  }

  const streamed = await collect(echo.ServerStream({ response_count: 3, response_size: 8192 },
                                                   { deadline: Date.now() + 10000 }));
  check(streamed.length === 3 && streamed.every((m) => m.payload.length === 8192),
        "ServerStream sends 3 responses of 8192 bytes");

  const total = await new Promise((resolve, reject) => {
    const call = echo.ClientStream({ deadline: Date.now() + 10000 },
                                   (err, reply) => (err ? reject(err) : resolve(reply)));
    for (let i = 0; i < 5; i++) call.write({ payload: text });
    call.end();
  });
  check(Number(total.total_bytes) === 5 * text.length, "ClientStream counts every byte");

  const metadata = new grpc.Metadata();
  metadata.set("authorization", "Bearer " + token);
  const who = await unary(compass, "WhoAmI", {}, metadata);
  check(who.account_id.length > 0, "an authenticated CompassService call");

  console.log(`ok: ${algorithm}`);
  process.exit(0);
} catch (e) {
  console.log(String(e && e.stack ? e.stack : e));
  process.exit(1);
}
