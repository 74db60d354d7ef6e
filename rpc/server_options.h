#ifndef H2RPC_RPC_SERVER_OPTIONS_H_
#define H2RPC_RPC_SERVER_OPTIONS_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "rpc/auth_context.h"
#include "rpc/call_metrics.h"
#include "rpc/channelz.h"
#include "rpc/compression.h"
#include "rpc/connection_options.h"
#include "rpc/interceptor.h"
#include "rpc/tracing.h"

namespace h2rpc {

// Settings of a Server. Every field: default, unit.
struct ServerOptions {
  // HTTP/2 settings and message size limits of every connection.
  ConnectionOptions connection;
  // Protocols for browsers served on the same ports as gRPC (docs/web.md).
  // Each off by default: a request in it is refused as any request that is
  // not gRPC (HTTP 415).
  struct WebProtocols {
    // gRPC-Web (gRPC's PROTOCOL-WEB.md) over HTTP/2, binary form
    // (content-type application/grpc-web or application/grpc-web+proto)
    // and base64 text form (application/grpc-web-text): every method, the
    // trailers at the end of the response body. What Envoy's grpc_web
    // filter would otherwise translate.
    bool grpc_web = false;
    // The Connect protocol (connectrpc.com/docs/protocol) over HTTP/2, what
    // connect-go serves and curl can call. Unary form: a POST whose body is
    // the request message, binary (application/proto) or JSON
    // (application/json, protobuf's JSON mapping of the methods compiled
    // into the program), answered with the response message, or with an
    // HTTP error status and a JSON body naming the code; a method marked
    // `idempotency_level = NO_SIDE_EFFECTS` also by GET, the request in the
    // query. Streaming form
    // (application/connect+proto, +json): every method kind, messages framed
    // as gRPC's, the end of the stream as the body's last frame.
    bool connect = false;
    // CORS, for pages of other origins than the server's: the origins
    // ("https://app.example.com", scheme, host and port exactly as the
    // browser sends them; "*": any) whose pages may call. Their browsers'
    // preflights are answered and the responses to their calls carry the
    // CORS fields (with grpc-status and grpc-message exposed); a preflight
    // or a call from another origin is refused with HTTP 403 before any
    // handler runs. Empty: no CORS (a cross-origin page cannot read the
    // answers; OPTIONS is refused with 405).
    std::vector<std::string> cors_allowed_origins;
    // Response fields of the application's (metadata names, lowercase; a
    // Connect unary call's trailing metadata is "trailer-" and the name)
    // that the allowed pages may read, besides the protocols' own
    // (grpc-status, grpc-message, grpc-status-details-bin,
    // connect-content-encoding, connect-accept-encoding).
    std::vector<std::string> cors_exposed_headers;
    // How long a browser may cache a preflight's answer. Seconds.
    int cors_max_age_seconds = 7200;
    // With grpc_web or connect, the ports also serve HTTP/1.1 (plaintext,
    // and TLS with ALPN http/1.1 or none): one request at a time per
    // connection, pipelined requests answered in order; the same limits as
    // HTTP/2 (connection.max_header_list_size bounds the header section,
    // 431 past it). A connection closes after http1_idle_timeout without
    // the first byte of a next request; a request's head (request line and
    // header section) must arrive within http1_header_timeout of its first
    // byte, or it is answered 408 and the connection closes. More than
    // zero. Durations.
    absl::Duration http1_idle_timeout = absl::Seconds(60);
    absl::Duration http1_header_timeout = absl::Seconds(10);
    // Requests one HTTP/1.1 connection answers; the last answer says
    // Connection: close. At least 1.
    int http1_max_requests_per_connection = 10000;
    // The longest request target (the request line's path and query);
    // longer is answered 414. At least 1. Bytes.
    int http1_max_target_bytes = 8 * 1024;
    // Input an HTTP/1.1 connection holds while the request before it is
    // answered (pipelined requests) or while a request body waits for
    // flow control; past it the connection reads nothing until that input
    // has gone on. At least 1. Bytes.
    int http1_max_buffered_input_bytes = 64 * 1024;
  };
  WebProtocols web;
  // Event loop threads; connections are spread over them. 0: one per core.
  int num_loops = 0;
  // CPUs to pin the loop threads to, in order; empty: not pinned.
  std::vector<int> loop_cpus;
  // Busy-polling of every loop (EventLoop::set_busy_poll in
  // transport/io/event_loop.h): whenever a loop runs out of work it polls
  // without blocking for up to this long before it sleeps, so a request
  // arriving meanwhile is handled without a wake-up from the kernel. Each
  // loop thread keeps its core busy that long after each idle moment.
  // 0: never. From 0 to 1,000,000 (one second); BuildAndStart refuses other
  // values with INVALID_ARGUMENT. Microseconds.
  int busy_poll_us = 0;
  // Interceptors of every call, outermost first (rpc/interceptor.h);
  // Builder::AddInterceptor appends to them.
  std::vector<std::shared_ptr<ServerInterceptor>> interceptors;
  // Decides on every call's credentials before its interceptors and
  // handler (rpc/auth_context.h); null: every call goes through.
  std::shared_ptr<AuthMetadataProcessor> auth_metadata_processor;
  // How long a call waits for a blocking processor's decision before it
  // fails with UNAVAILABLE (its deadline, if sooner, ends it first). More
  // than 0. Duration.
  absl::Duration auth_processor_timeout = absl::Seconds(10);
  // gRPC's standard per-call metrics (rpc/call_metrics.h), recorded by
  // every loop into a shard of its own; null: none.
  std::shared_ptr<CallMetrics> metrics;
  // channelz (rpc/channelz.h): the server, its listening sockets and its
  // connections are registered there and counted; null: nowhere.
  std::shared_ptr<Channelz> channelz;
  // Tracing (rpc/tracing.h): the server's calls are traced and their spans
  // exported there; null: no tracing.
  std::shared_ptr<Tracer> tracer;
  // Threads running synchronous handlers; a synchronous streaming handler
  // holds its thread for the whole call. A call whose handler finds no idle
  // thread gets a new one, up to max_sync_threads; beyond that it fails at
  // once with RESOURCE_EXHAUSTED ("all 256 synchronous handler threads are
  // busy (ServerOptions::max_sync_threads)") rather than wait. Threads
  // beyond min_sync_threads exit after sync_thread_idle_time without work.
  //
  // Threads started with the server and kept even when idle. 0: max(4,
  // 2 x cores), at most max_sync_threads. Threads.
  int min_sync_threads = 0;
  // Most threads running synchronous handlers at once, so the most
  // synchronous calls in progress. At least 1. Threads.
  int max_sync_threads = 256;
  // Most synchronous handlers running at once for the calls of one
  // connection, so that one client cannot take every thread: a call beyond
  // it fails at once with RESOURCE_EXHAUSTED ("this connection's 192
  // synchronous handler threads are busy
  // (ServerOptions::max_sync_threads_per_connection)"). A handler still
  // running when its connection closes no longer counts against any
  // connection. 0: three quarters of max_sync_threads (at least 1); else
  // from 1 to max_sync_threads. Threads.
  int max_sync_threads_per_connection = 0;
  // How long a thread beyond min_sync_threads waits for work before it
  // exits. At least zero. Duration.
  absl::Duration sync_thread_idle_time = absl::Seconds(60);
  // A streaming call's write completes once at most this many bytes wait
  // in its send buffer (see ServerStreamReactor). Bytes.
  size_t stream_write_buffer = 64 << 10;
  // How responses are compressed unless the ServerContext says otherwise;
  // only used for clients that accept it (see rpc/compression.h).
  CompressionAlgorithm default_compression = CompressionAlgorithm::kIdentity;
  // Bytes the server holds on its peers' behalf, all connections together:
  // received messages being gathered (spanning DATA frames) and response
  // bytes not yet written to a connection. Each connection takes at most
  // connection.memory_quota_share of it (see there for how the bounds
  // combine with the flow-control windows). A received message that does
  // not fit waits, its sender stalled by flow control, until memory frees
  // up; a response that does not fit fails its call with
  // RESOURCE_EXHAUSTED; while less than 1/16 of it is free, new calls fail
  // at once with RESOURCE_EXHAUSTED. Bytes.
  size_t memory_quota = 256 << 20;
  // Most connections open at once; 0: unlimited. Connections. At the limit
  // the server stops accepting until one closes: new clients wait in the
  // listen backlog (1024) and are served in order as connections close,
  // their calls' deadlines bounding the wait. gRPC C++ accepts and closes
  // them instead; not accepting costs the server nothing per excess connect
  // (a flood of reconnects at the limit is not a loop of accept and close),
  // and a waiting client is served without a reconnect back-off.
  size_t max_connections = 0;
  // Once Shutdown's deadline has cancelled the calls left, how long it waits
  // for their handlers to return before it logs (to stderr) the methods of
  // the calls still running, and then again after every further period
  // while any runs (see Server::Shutdown). More than zero. Duration.
  absl::Duration shutdown_grace_period = absl::Seconds(5);

  // Connection management, with gRPC's names and defaults (gRPC's A8
  // keepalive and A9 connection idleness and age; the gRPC C++ channel
  // argument each corresponds to is named). Every connection applies them
  // on its own; BuildAndStart refuses values out of range with
  // INVALID_ARGUMENT naming the field.
  //
  // A graceful shutdown (max_connection_idle, max_connection_age, and
  // Shutdown) is gRPC's double GOAWAY: GOAWAY with last stream id 2^31-1
  // and a PING; streams the client opens meanwhile are served; once the
  // PING's ACK arrives (or after keepalive_timeout, 20 s at most, without
  // one) a second GOAWAY names the last stream accepted and later streams
  // are refused (clients retry them elsewhere). The connection closes when
  // its last call ends.
  //
  // Keepalive: after keepalive_time without a frame from the client, the
  // server sends a PING; if nothing arrives within keepalive_timeout of it,
  // the client is gone: the connection closes and its calls are cancelled
  // (handlers see IsCancelled()). Only while calls are open, unless
  // keepalive_permit_without_calls. InfiniteDuration: no PINGs. More than
  // zero. Duration. GRPC_ARG_KEEPALIVE_TIME_MS (2 hours).
  absl::Duration keepalive_time = absl::Hours(2);
  // More than zero. Duration. GRPC_ARG_KEEPALIVE_TIMEOUT_MS (20 seconds).
  absl::Duration keepalive_timeout = absl::Seconds(20);
  // The server's keepalive PINGs go out on connections without calls too,
  // and PING enforcement applies keepalive_min_time to such connections
  // instead of two hours. GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS (false).
  bool keepalive_permit_without_calls = false;
  // PING enforcement: a client PING sooner than this after the previous
  // one (sooner than two hours while the connection has no call, unless
  // keepalive_permit_without_calls) is a strike; the server sending
  // HEADERS or DATA clears the strikes. More than max_ping_strikes strikes
  // end the connection: GOAWAY(ENHANCE_YOUR_CALM, debug data
  // "too_many_pings"; gRPC clients then double their keepalive time), and
  // its calls are cancelled. At least zero. Duration.
  // GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS (5 minutes;
  // grpc-go's EnforcementPolicy.MinTime).
  absl::Duration keepalive_min_time = absl::Minutes(5);
  // 0: any number of strikes. At least zero. PINGs.
  // GRPC_ARG_HTTP2_MAX_PING_STRIKES (2).
  int max_ping_strikes = 2;
  // A connection without calls for this long is shut down gracefully.
  // InfiniteDuration: never. More than zero. Duration.
  // GRPC_ARG_MAX_CONNECTION_IDLE_MS (infinite).
  absl::Duration max_connection_idle = absl::InfiniteDuration();
  // A connection this old (give or take 10%, at random, so that
  // connections opened together do not end together) is shut down
  // gracefully. InfiniteDuration: never. More than zero. Duration.
  // GRPC_ARG_MAX_CONNECTION_AGE_MS (infinite).
  absl::Duration max_connection_age = absl::InfiniteDuration();
  // Calls still open this long after max_connection_age are cancelled and
  // the connection closed. InfiniteDuration: they may run for ever. At least
  // zero. Duration. GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS (infinite).
  absl::Duration max_connection_age_grace = absl::InfiniteDuration();
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_SERVER_OPTIONS_H_
