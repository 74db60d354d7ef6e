// Interop test server for grpc.testing.TestService using connect-node, for
// testing h2rpc's Connect client against a real Connect implementation (no
// generated code: the service comes from a FileDescriptorSet at runtime).
//   node server.mjs --descriptor_set=testing.binpb [--port=0] [--http1]
// Serves the Connect, gRPC and gRPC-Web protocols on 127.0.0.1:PORT over
// HTTP/2 cleartext (prior knowledge), or with --http1 over HTTP/1.1 only. Prints "listening on port N" once
// listening (port 0 picks a free one); runs until killed.
//
// Behaviour (grpc.testing interop semantics):
//  - UnaryCall: a payload of response_size zero bytes; a non-zero
//    response_status is thrown as that error.
//  - EmptyCall: an empty message.
//  - Every call prints {"method": ..., "protocol": ..., "content_type": ...}
//    on a line of its own, so a test can tell which protocol (and which
//    message form) its client spoke.
import http from "node:http";
import http2 from "node:http2";
import { ConnectError } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { loadTestService, parseFlags } from "./descriptors.mjs";

const flags = parseFlags(process.argv.slice(2));
const { service } = loadTestService(flags.descriptor_set ?? "testing.binpb");
const port = Number(flags.port ?? "0");

function logCall(ctx) {
  console.log(JSON.stringify({
    method: ctx.method.name, protocol: ctx.protocolName,
    content_type: ctx.requestHeader.get("content-type"),
  }));
}

const impl = {
  emptyCall(_req, ctx) {
    logCall(ctx);
    return {};
  },
  unaryCall(req, ctx) {
    logCall(ctx);
    const status = req.responseStatus;
    // EchoStatus codes are gRPC status numbers, the same as Connect-ES's Code.
    if (status && status.code !== 0) throw new ConnectError(status.message, status.code);
    return { payload: { body: new Uint8Array(req.responseSize) } };
  },
};

const handler = connectNodeAdapter({ routes: (router) => router.service(service, impl) });
process.on("SIGTERM", () => process.exit(0));
const server = flags.http1 ? http.createServer(handler)
                           : http2.createServer(handler);
server.listen(port, "127.0.0.1", () => {
  console.log(`listening on port ${server.address().port}`);
});
