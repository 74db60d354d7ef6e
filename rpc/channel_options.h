#ifndef H2RPC_RPC_CHANNEL_OPTIONS_H_
#define H2RPC_RPC_CHANNEL_OPTIONS_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "rpc/call_metrics.h"
#include "rpc/channelz.h"
#include "rpc/compression.h"
#include "rpc/connection_options.h"
#include "rpc/interceptor.h"
#include "rpc/load_balancing.h"
#include "rpc/name_resolver.h"
#include "rpc/resolver.h"
#include "rpc/tracing.h"
#include "rpc/version.h"

namespace h2rpc {

// Settings of a Channel. Every field: default, unit; the gRPC channel
// argument it corresponds to, where there is one, with gRPC's default. A
// channel with an invalid value makes no connection and fails every call
// with INVALID_ARGUMENT naming the field and the value (GetState() says
// TRANSIENT_FAILURE).
struct ChannelOptions {
  // "user-agent" sent with every call. Default: "h2rpc-cpp/" and h2rpc's
  // version (kH2rpcUserAgent in rpc/version.h), as gRPC C++ sends
  // "grpc-c++/<version>".
  std::string user_agent = kH2rpcUserAgent;
  // Unary calls speak the Connect protocol's unary form
  // (connectrpc.com/docs/protocol) instead of gRPC, binary messages over
  // HTTP/2, to servers that answer it (connect-go, connect-node, h2rpc with
  // ServerOptions::web.connect): a POST of the request message, answered
  // with the response message, or an error as an HTTP status and a JSON
  // body; metadata as headers ("trailer-" for the trailing ones); the
  // deadline in connect-timeout-ms. Streaming calls on such a channel fail
  // with UNIMPLEMENTED. Default: gRPC.
  bool connect_unary = false;
  // With connect_unary: the messages travel in protobuf's JSON mapping
  // (application/json), converted with the descriptors of the methods
  // compiled into the program (a method without them fails with
  // UNIMPLEMENTED), uncompressed. Each call then allocates for the
  // conversion. Default: binary.
  bool connect_json = false;
  // With connect_unary: the calls go over HTTP/1.1 instead of HTTP/2, for
  // Connect servers that speak HTTP/1.1 only: one call at a time per
  // connection (the others wait their turn), each request with a
  // content-length; a call cancelled while its request is out ends its
  // connection. Default: HTTP/2.
  bool connect_http1 = false;
  // HTTP/2 settings and message size limits of the connection.
  ConnectionOptions connection;
  // Looks up the target's host name off the event loop (a target whose host
  // is an IP address needs no lookup). Null (default): the channel makes its
  // own, whose thread starts on the first lookup. A NameResolver may be
  // shared by several channels; they then look up one at a time. Every
  // address of the name (A and AAAA) goes to the load-balancing policy.
  std::shared_ptr<NameResolver> resolver;
  // Resolvers for target schemes of this channel's own, looked up before
  // those registered process-wide (RegisterResolverFactory in
  // rpc/resolver.h); the first with the target's scheme is used.
  std::vector<std::shared_ptr<ResolverFactory>> resolver_factories;
  // The target is resolved again when a connection fails or ends, but no
  // sooner than this after the resolution before. More than zero.
  // Duration. GRPC_ARG_DNS_MIN_TIME_BETWEEN_RESOLUTIONS_MS (30 s).
  absl::Duration dns_min_time_between_resolutions = absl::Seconds(30);
  // ...and this long after each successful lookup, so that backends added
  // to the name are found. More than zero; InfiniteDuration: never.
  // Duration. (gRPC C++ has no periodic lookup.)
  absl::Duration dns_refresh_interval = absl::Minutes(5);

  // How calls are spread over the target's addresses, a connection (a
  // subchannel) to each: "pick_first" (default; the addresses are tried in
  // order and every call goes to the first that connects) or "round_robin"
  // (all are connected, calls go to the READY ones in turn, a failed one is
  // skipped until it reconnects), or "weighted_round_robin" (round robin
  // in proportion to the load the backends report, rpc/orca.h).
  // GRPC_ARG_LB_POLICY_NAME ("pick_first"). Also the name of a policy in
  // lb_policy_factories or registered with RegisterLbPolicyFactory
  // (rpc/load_balancing.h), made with the config "{}".
  std::string lb_policy = "pick_first";
  // Load-balancing policies of this channel's own, found by name before
  // those registered process-wide and h2rpc's own.
  std::vector<std::shared_ptr<LbPolicyFactory>> lb_policy_factories;
  // A service config in gRPC's JSON form (gRPC's service_config.md), as a
  // service owner writes it; empty: none. A config that does not parse
  // makes every call fail with INVALID_ARGUMENT naming the field (see
  // docs/configuring-calls.md). "loadBalancingConfig" (or the older
  // "loadBalancingPolicy") overrides lb_policy, e.g.
  //   {"loadBalancingConfig": [{"round_robin": {}}]}
  // and "healthCheckConfig" (gRPC's A17), with which every policy but
  // pick_first sends calls only to backends whose grpc.health.v1.Health
  // service reports the named service SERVING (a backend without the
  // service counts as serving), e.g.
  //   {"loadBalancingConfig": [{"round_robin": {}}],
  //    "healthCheckConfig": {"serviceName": "echo.Echo"}}
  // "methodConfig" entries apply to the calls of the methods they name (the
  // entry naming the method, else its service, else the default one):
  // "timeout" (the earlier of it and the call's own deadline; 0: none),
  // "waitForReady" (unless the call's ClientContext sets it), and
  // "maxRequestMessageBytes" / "maxResponseMessageBytes" (lowering
  // connection.max_send_message_size / max_receive_message_size), e.g.
  //   {"methodConfig": [{"name": [{"service": "echo.Echo"}],
  //                      "timeout": "1.5s", "waitForReady": true}]}
  // "retryPolicy" retries a call that failed with one of its
  // retryableStatusCodes before the server sent response headers (gRPC's
  // A6): up to maxAttempts (at most 5) attempts in all, each after a random
  // backoff below min(initialBackoff * backoffMultiplier^n, maxBackoff), or
  // after the delay the server asks for in "grpc-retry-pushback-ms" (a
  // negative or malformed one: no retry); each retry carries
  // "grpc-previous-rpc-attempts". "retryThrottling" stops retries while
  // more than half its tokens are spent (a retryable failure spends one, a
  // success earns tokenRatio back). e.g.
  //   {"methodConfig": [{"name": [{"service": "echo.Echo"}],
  //      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s",
  //                      "maxBackoff": "1s", "backoffMultiplier": 2,
  //                      "retryableStatusCodes": ["UNAVAILABLE"]}}],
  //    "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}
  // A "hedgingPolicy" is refused (INVALID_ARGUMENT): not supported.
  std::string service_config;
  // Whether retryPolicy applies. GRPC_ARG_ENABLE_RETRIES (true).
  bool enable_retries = true;
  // A call keeps the request bytes it sent, so that it can send them again,
  // until response headers arrive; past this many it is no longer retried.
  // Bytes. GRPC_ARG_PER_RPC_RETRY_BUFFER_SIZE (256 KiB).
  size_t per_rpc_retry_buffer_size = 256 << 10;
  // The same for all the channel's calls together. Bytes.
  // "grpc.retry_buffer_size" (16 MiB).
  size_t retry_buffer_size = 16 << 20;

  // Connecting and reconnecting, as gRPC's connection-backoff.md says: an
  // attempt (resolving the target's host name, the TCP connect, the TLS
  // handshake and the server's HTTP/2 handshake, up to its SETTINGS frame)
  // may take until max(now + min_connect_timeout, the time the next attempt
  // may start). After a failed attempt the channel is in TRANSIENT_FAILURE
  // and tries again once the backoff has passed: the first backoff is
  // initial_backoff, each later one backoff_multiplier times the one before
  // (at most max_backoff), shifted at random by up to backoff_jitter times
  // itself either way. Calls made meanwhile start no attempt: they fail at
  // once with UNAVAILABLE and the attempt's error, unless they are
  // wait_for_ready (ClientContext::set_wait_for_ready). The schedule starts
  // over once a connection completes the HTTP/2 handshake. (The server must
  // also complete its HTTP/2 handshake within connection.handshake_timeout
  // of the TCP connect.)
  //
  // More than zero. Duration. GRPC_ARG_MIN_RECONNECT_BACKOFF_MS (20 s).
  absl::Duration min_connect_timeout = absl::Seconds(20);
  // More than zero, at most max_backoff. Duration.
  // GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS (1 s).
  absl::Duration initial_backoff = absl::Seconds(1);
  // At least 1. Factor. gRPC fixes it at 1.6 (no channel argument).
  double backoff_multiplier = 1.6;
  // At least 0, less than 1. Fraction of the backoff. gRPC fixes it at 0.2
  // (no channel argument).
  double backoff_jitter = 0.2;
  // Finite. Duration. GRPC_ARG_MAX_RECONNECT_BACKOFF_MS (120 s).
  absl::Duration max_backoff = absl::Seconds(120);

  // A channel with no call in progress for this long drops its connection
  // gracefully (GOAWAY, then close) and stops any reconnect attempt: it is
  // IDLE, and the next call connects again. More than zero;
  // InfiniteDuration: never. Duration. GRPC_ARG_CLIENT_IDLE_TIMEOUT_MS
  // (30 min).
  absl::Duration idle_timeout = absl::Minutes(30);

  // Keepalive (gRPC's A8): after keepalive_time with nothing received from
  // the server, the connection sends a PING; no answer within keepalive_timeout
  // closes it, failing its calls with UNAVAILABLE (the channel is then
  // IDLE and the next call reconnects). Without a call in progress no PING
  // is sent unless keepalive_permit_without_calls. A server that finds the
  // PINGs too frequent ends the connection with GOAWAY ENHANCE_YOUR_CALM
  // "too_many_pings"; the channel then doubles keepalive_time for its later
  // connections, as gRPC clients do, and logs it to stderr.
  //
  // More than zero; InfiniteDuration: no keepalive. Duration.
  // GRPC_ARG_KEEPALIVE_TIME_MS (INT_MAX: none).
  absl::Duration keepalive_time = absl::InfiniteDuration();
  // More than zero. Duration. GRPC_ARG_KEEPALIVE_TIMEOUT_MS (20 s).
  absl::Duration keepalive_timeout = absl::Seconds(20);
  // GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS (false).
  bool keepalive_permit_without_calls = false;

  // TLS only: the name the server's certificate must match, sent as SNI
  // and as the default :authority of calls, instead of the target's host
  // (gRPC's GRPC_SSL_TARGET_NAME_OVERRIDE_ARG; for tests). Empty: none.
  std::string ssl_target_name_override;
  // Interceptors of every call, outermost first (rpc/interceptor.h).
  std::vector<std::shared_ptr<ClientInterceptor>> interceptors;
  // gRPC's standard per-call metrics (rpc/call_metrics.h), recorded by the
  // channel's loop; null: none.
  std::shared_ptr<CallMetrics> metrics;
  // channelz (rpc/channelz.h): the channel, its subchannels and their
  // connections are registered there and counted; null: nowhere.
  std::shared_ptr<Channelz> channelz;
  // Tracing (rpc/tracing.h): the channel's calls are traced and their
  // spans exported there; null: no tracing.
  std::shared_ptr<Tracer> tracer;
  // CPU to pin the channel's event loop thread to; -1: not pinned.
  int loop_cpu = -1;
  // Busy-polling of the channel's event loop (EventLoop::set_busy_poll in
  // transport/io/event_loop.h): whenever the loop runs out of work it polls
  // without blocking for up to this long before it sleeps, so a response
  // arriving meanwhile is handled without a wake-up from the kernel. The
  // loop's thread keeps its core busy that long after each idle moment.
  // 0: never. From 0 to 1,000,000 (one second). Microseconds.
  int busy_poll_us = 0;
  // A streaming call's write completes once at most this many bytes wait
  // in its send buffer (see ClientStreamReactor). Bytes.
  size_t stream_write_buffer = 64 << 10;
  // How calls compress their messages unless their ClientContext says
  // otherwise (see rpc/compression.h).
  CompressionAlgorithm default_compression = CompressionAlgorithm::kIdentity;
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_CHANNEL_OPTIONS_H_
