// A page calling grpc.testing.TestService from the browser with Connect-ES
// (@connectrpc/connect-web, fetch-based), bundled by esbuild at test time.
// The service comes from a FileDescriptorSet fetched beside the page (no
// generated code). Query parameters:
//   base_url    where the service is (another origin: CORS applies)
//   protocols   comma list of grpc-web, connect (default grpc-web)
//   expect      "ok": every call succeeds; "refused": every call fails
// Writes one JSON line per call into #results, then sets the title to
// "done" (every call as expected) or "failed".
import { fromBinary, createFileRegistry } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";

const params = new URLSearchParams(location.search);
const baseUrl = params.get("base_url") ?? location.origin;
const protocols = (params.get("protocols") ?? "grpc-web").split(",");
const expectOk = (params.get("expect") ?? "ok") === "ok";

const makeTransport = {
  "grpc-web": () => createGrpcWebTransport({ baseUrl, useBinaryFormat: true }),
  connect: () => createConnectTransport({ baseUrl, useBinaryFormat: true }),
};

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
    const client = createClient(service, makeTransport[protocol]());
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
