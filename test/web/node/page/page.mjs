// A page calling grpc.testing.TestService from the browser with Connect-ES
// (@connectrpc/connect-web, fetch-based) and with grpc-web's own client
// (XMLHttpRequest, base64 bodies), bundled by esbuild at test time.
// The service comes from a FileDescriptorSet fetched beside the page (no
// generated code). Query parameters:
//   base_url    where the service is (another origin: CORS applies)
//   protocols   comma list of grpc-web, connect, grpc-web-text (default
//               grpc-web)
//   expect      "ok": every call succeeds; "refused": every call fails
// Writes one JSON line per call into #results, then sets the title to
// "done" (every call as expected) or "failed".
import { create, fromBinary, toBinary, createFileRegistry } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { GrpcWebClientBase, MethodDescriptor, MethodType } from "grpc-web";

const params = new URLSearchParams(location.search);
const baseUrl = params.get("base_url") ?? location.origin;
const protocols = (params.get("protocols") ?? "grpc-web").split(",");
const expectOk = (params.get("expect") ?? "ok") === "ok";

const makeClient = {
  "grpc-web": (service) => createClient(service, createGrpcWebTransport({ baseUrl, useBinaryFormat: true })),
  connect: (service) => createClient(service, createConnectTransport({ baseUrl, useBinaryFormat: true })),
  "grpc-web-text": (service) => createGrpcWebTextClient(service),
};

// grpc-web fails with an RpcError (code, message), or for some failures
// with a plain { code, message }.
const asError = (e) => (e instanceof Error ? e : new Error(`code ${e.code}: ${e.message}`));

// grpc-web's client (format "text": application/grpc-web-text), shaped
// like a Connect client for the two methods the cases call. Messages are
// serialized with the method's schemas from the registry. A stream's
// messages are collected, then iterated.
function createGrpcWebTextClient(service) {
  const web = new GrpcWebClientBase({ format: "text" });
  // grpc-web calls the URL less the descriptor's name plus the name, so the
  // name is the path. The message types (3rd, 4th) are unused by grpc-web.
  const prepare = (method, type) => {
    const path = `/${service.typeName}/${method.name}`;
    const descriptor = new MethodDescriptor(path, type, method.input, method.output,
        (req) => toBinary(method.input, req), (bytes) => fromBinary(method.output, bytes));
    return (init) => [baseUrl + path, create(method.input, init), {}, descriptor];
  };
  const unary = prepare(service.method.unaryCall, MethodType.UNARY);
  const streaming = prepare(service.method.streamingOutputCall, MethodType.SERVER_STREAMING);
  return {
    unaryCall: (init) => web.unaryCall(...unary(init)).catch((e) => { throw asError(e); }),
    async *streamingOutputCall(init) {
      yield* await new Promise((resolve, reject) => {
        const messages = [];
        web.serverStreaming(...streaming(init))
          .on("data", (m) => messages.push(m))
          .on("error", (e) => reject(asError(e)))
          .on("end", () => resolve(messages));
      });
    },
  };
}

const cases = {
  async unary(client) {
    const res = await client.unaryCall({ responseSize: 1000, payload: { body: new Uint8Array(1024) } });
    if (res.payload?.body.length !== 1000) throw new Error(`got ${res.payload?.body.length} bytes`);
    return "1000 bytes";
  },
  async server_streaming(client) {
    const sizes = [];
    for await (const r of client.streamingOutputCall({
      responseParameters: [{ size: 10 }, { size: 20 }, { size: 30, intervalUs: 200000 }],
    })) sizes.push(r.payload?.body.length);
    if (sizes.join() !== "10,20,30") throw new Error(`got ${sizes.join()}`);
    return "3 messages";
  },
};

async function run() {
  const bytes = new Uint8Array(await (await fetch("testing.binpb")).arrayBuffer());
  const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, bytes));
  const service = registry.getService("grpc.testing.TestService");
  const results = [];
  for (const protocol of protocols) {
    const client = makeClient[protocol](service);
    for (const [name, fn] of Object.entries(cases)) {
      let ok, detail;
      try { detail = await fn(client); ok = true; }
      catch (e) { detail = String(e); ok = false; }
      results.push({ protocol, case: name, ok, detail, as_expected: ok === expectOk });
    }
  }
  return results;
}

run().then(
  (results) => {
    document.getElementById("results").textContent = results.map((r) => JSON.stringify(r)).join("\n");
    document.title = results.every((r) => r.as_expected) ? "done" : "failed";
  },
  (e) => {
    document.getElementById("results").textContent = `error: ${e}`;
    document.title = "failed";
  });
