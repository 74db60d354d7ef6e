// Interop test client for grpc.testing.TestService using Connect-ES (no
// generated code: the service comes from a FileDescriptorSet at runtime).
//   node client.mjs --descriptor_set=testing.binpb --base_url=http://127.0.0.1:8080 \
//     --protocol=connect|grpc-web|grpc --http_version=1.1|2 [--json] \
//     --case=unary|server_streaming|client_streaming|bidi|error|deadline|all
// Prints one JSON line {case, ok, detail} per case; exits 1 if any failed.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import {
  createConnectTransport, createGrpcTransport, createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { loadTestService, parseFlags } from "./descriptors.mjs";

const flags = parseFlags(process.argv.slice(2));
const { service } = loadTestService(flags.descriptor_set ?? "testing.binpb");
const protocol = flags.protocol ?? "connect";
const httpVersion = flags.http_version ?? "2";
const json = flags.json === "true";

function makeTransport() {
  const common = { baseUrl: flags.base_url, useBinaryFormat: !json };
  switch (protocol) {
    case "connect": return createConnectTransport({ ...common, httpVersion });
    case "grpc-web": return createGrpcWebTransport({ ...common, httpVersion });
    case "grpc":  // gRPC over HTTP/2 only; the transport has no httpVersion option
      if (httpVersion !== "2") throw new Error("grpc requires --http_version=2");
      return createGrpcTransport(common);
    default: throw new Error(`unknown --protocol=${protocol}`);
  }
}
const client = createClient(service, makeTransport());

function check(cond, msg) { if (!cond) throw new Error(msg); }

async function expectError(promise, code, message) {
  try {
    await promise;
  } catch (e) {
    const err = ConnectError.from(e);
    check(err.code === code,
          `want code ${Code[code]}, got ${Code[err.code]}: ${err.rawMessage}`);
    if (message !== undefined)
      check(err.rawMessage === message, `want message "${message}", got "${err.rawMessage}"`);
    return `${Code[err.code]}: ${err.rawMessage}`;
  }
  throw new Error(`want ${Code[code]}, call succeeded`);
}

const cases = {
  async unary() {
    const res = await client.unaryCall({
      responseSize: 314159,
      payload: { body: new Uint8Array(1024) },
    });
    check(res.payload?.body.length === 314159,
          `response payload ${res.payload?.body.length} bytes, want 314159`);
    return "payload 1024 -> 314159 bytes";
  },
  async server_streaming() {
    const sizes = [31415, 9, 2653, 58979];
    const got = [];
    for await (const res of client.streamingOutputCall({
      responseParameters: sizes.map((size) => ({ size })),
    })) got.push(res.payload?.body.length ?? 0);
    check(JSON.stringify(got) === JSON.stringify(sizes),
          `got sizes ${JSON.stringify(got)}, want ${JSON.stringify(sizes)}`);
    return `${got.length} messages`;
  },
  // Client streaming and bidi need a transport that streams requests:
  // gRPC, or Connect over HTTP/2.
  async client_streaming() {
    const sizes = [27182, 8, 1828, 45904];
    const res = await client.streamingInputCall((async function* () {
      for (const size of sizes) yield { payload: { body: new Uint8Array(size) } };
    })());
    const want = sizes.reduce((a, b) => a + b, 0);
    check(res.aggregatedPayloadSize === want,
          `aggregated ${res.aggregatedPayloadSize}, want ${want}`);
    return `${sizes.length} messages, ${want} bytes`;
  },
  async bidi() {
    const sizes = [31415, 9, 2653, 58979];
    const got = [];
    for await (const res of client.fullDuplexCall((async function* () {
      for (const size of sizes) yield { responseParameters: [{ size }] };
    })())) got.push(res.payload?.body.length ?? 0);
    check(JSON.stringify(got) === JSON.stringify(sizes),
          `got sizes ${JSON.stringify(got)}, want ${JSON.stringify(sizes)}`);
    return `${got.length} round trips`;
  },
  async error() {
    return expectError(client.unaryCall({ responseStatus: { code: 3, message: "bad" } }),
                       Code.InvalidArgument, "bad");
  },
  async deadline() {
    const start = Date.now();
    const detail = await expectError((async () => {
      for await (const _ of client.streamingOutputCall(
        { responseParameters: [{ size: 1, intervalUs: 5_000_000 }] },
        { timeoutMs: 200 })) { /* drain */ }
    })(), Code.DeadlineExceeded);
    const ms = Date.now() - start;
    check(ms < 4000, `deadline took ${ms} ms`);
    return `${detail} after ${ms} ms`;
  },
  // Same, but the timeout travels only as a header (no client-side timer), so
  // DeadlineExceeded must come from the server.
  async server_deadline() {
    const headers = protocol === "connect" ? { "connect-timeout-ms": "200" }
                                           : { "grpc-timeout": "200m" };
    const start = Date.now();
    const detail = await expectError((async () => {
      for await (const _ of client.streamingOutputCall(
        { responseParameters: [{ size: 1, intervalUs: 5_000_000 }] },
        { headers, timeoutMs: 0 })) { /* drain */ }
    })(), Code.DeadlineExceeded);
    const ms = Date.now() - start;
    check(ms < 4000, `deadline took ${ms} ms`);
    return `${detail} after ${ms} ms`;
  },
};

const names = flags.case === "all" || !flags.case ? Object.keys(cases) : flags.case.split(",");
let failed = 0;
for (const name of names) {
  let ok = false, detail;
  try {
    if (!cases[name]) throw new Error(`unknown case ${name}`);
    detail = await cases[name]();
    ok = true;
  } catch (e) {
    detail = e instanceof Error ? e.message : String(e);
    failed++;
  }
  console.log(JSON.stringify({ case: name, protocol, http_version: httpVersion, json, ok, detail }));
}
process.exit(failed ? 1 : 0);
