// Interop test server for grpc.testing.TestService using connect-node, for
// testing h2rpc's clients against a real Connect implementation (no generated
// code: the service comes from a FileDescriptorSet at runtime).
//   node server.mjs --descriptor_set=testing.binpb [--port=0]
// Serves the Connect, gRPC and gRPC-Web protocols on 127.0.0.1:PORT, over
// HTTP/2 cleartext (prior knowledge) and HTTP/1.1 on the same port. Prints
// "listening on port N" once listening (port 0 picks a free one); runs until
// killed.
//
// Behaviour (grpc.testing interop semantics, plus hooks for client tests):
//  - UnaryCall, CacheableUnaryCall: a payload of response_size zero bytes;
//    username "connect-node" if fill_username; a non-zero response_status is
//    thrown as that error. A request with response_size 0 whose payload
//    contains "sleep" waits 5 s first (cut short by the deadline or cancel).
//  - EmptyCall: an empty message.
//  - StreamingOutputCall: one message of `size` zero bytes per
//    response_parameters entry, each after interval_us; then a non-zero
//    response_status is thrown as the stream's error.
//  - Every call prints {"method": ..., "protocol": ...} on a line of its own
//    and copies request header x-echo-initial to a response header and
//    x-echo-trailing to a response trailer.
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { Duplex } from "node:stream";
import { ConnectError } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { loadTestService, parseFlags } from "./descriptors.mjs";

const flags = parseFlags(process.argv.slice(2));
const { service } = loadTestService(flags.descriptor_set ?? "testing.binpb");
const port = Number(flags.port ?? "0");

const SLEEP_MS = 5000;
const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

// Resolves after `ms`, or rejects with the signal's reason (a ConnectError
// DeadlineExceeded or Canceled) if the call ends first.
function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => { clearTimeout(timer); reject(signal.reason); };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

// Every call: one JSON line on stdout naming its method and the protocol it
// came in (connect, grpc or grpcweb), then the metadata echoed.
function beginCall(ctx) {
  console.log(JSON.stringify({ method: ctx.method.name, protocol: ctx.protocolName }));
  const initial = ctx.requestHeader.get("x-echo-initial");
  if (initial !== null) ctx.responseHeader.set("x-echo-initial", initial);
  const trailing = ctx.requestHeader.get("x-echo-trailing");
  if (trailing !== null) ctx.responseTrailer.set("x-echo-trailing", trailing);
}

// EchoStatus codes are gRPC status numbers, the same as Connect-ES's Code.
function throwIfStatus(status) {
  if (status && status.code !== 0) throw new ConnectError(status.message, status.code);
}

function wantsSleep(req) {
  const body = req.payload?.body;
  return req.responseSize === 0 && body !== undefined &&
         new TextDecoder().decode(body).includes("sleep");
}

async function unaryCall(req, ctx) {
  beginCall(ctx);
  if (wantsSleep(req)) await sleep(SLEEP_MS, ctx.signal);
  throwIfStatus(req.responseStatus);
  return {
    payload: { body: new Uint8Array(req.responseSize) },
    username: req.fillUsername ? "connect-node" : "",
  };
}

const impl = {
  emptyCall(_req, ctx) {
    beginCall(ctx);
    return {};
  },
  unaryCall,
  cacheableUnaryCall: unaryCall,
  async *streamingOutputCall(req, ctx) {
    beginCall(ctx);  // headers must be set before the first message
    for (const { size, intervalUs } of req.responseParameters) {
      if (intervalUs > 0) await sleep(intervalUs / 1000, ctx.signal);
      yield { payload: { body: new Uint8Array(size) } };
    }
    throwIfStatus(req.responseStatus);
  },
};

const handler = connectNodeAdapter({ routes: (router) => router.service(service, impl) });
const h1Server = http.createServer(handler);
const h2Server = http2.createServer(handler);

// Reads a connection's first bytes: if they are the HTTP/2 preface the
// connection goes to the HTTP/2 server, otherwise to the HTTP/1.1 one. The
// bytes read are put back first so the chosen server parses them.
function dispatch(socket) {
  let head = Buffer.alloc(0);
  const onData = (chunk) => {
    head = Buffer.concat([head, chunk]);
    const n = Math.min(head.length, H2_PREFACE.length);
    const isH2 = head.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
    if (isH2 && head.length < H2_PREFACE.length) return;  // undecided yet
    socket.off("data", onData);
    socket.off("error", onError);
    socket.pause();
    socket.unshift(head);
    if (isH2) {
      // Node 20's HTTP/2 session reads a net.Socket's handle directly and
      // would miss the bytes put back; a plain Duplex over it is read as a
      // stream instead.
      h2Server.emit("connection", Duplex.from({ readable: socket, writable: socket }));
    } else {
      h1Server.emit("connection", socket);
      socket.resume();
    }
  };
  const onError = () => socket.destroy();
  socket.on("data", onData);
  socket.on("error", onError);
}

process.on("SIGTERM", () => process.exit(0));
// noDelay: HTTP/2 over the Duplex writes frame by frame; with Nagle on, each
// WINDOW_UPDATE could wait for the peer's delayed ACK.
net.createServer({ noDelay: true }, dispatch).listen(port, "127.0.0.1", function () {
  console.log(`listening on port ${this.address().port}`);
});
