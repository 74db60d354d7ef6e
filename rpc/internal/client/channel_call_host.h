#ifndef H2RPC_RPC_INTERNAL_CLIENT_CHANNEL_CALL_HOST_H_
#define H2RPC_RPC_INTERNAL_CLIENT_CHANNEL_CALL_HOST_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "rpc/call_credentials.h"
#include "rpc/compression.h"
#include "rpc/interceptor.h"
#include "rpc/internal/client/retry.h"
#include "rpc/internal/common/protobuf_connect_codec.h"
#include "rpc/internal/config/service_config.h"
#include "rpc/status.h"
#include "rpc/tracing.h"
#include "transport/http2/connection_stats.h"
#include "transport/io/event_loop.h"

namespace h2rpc::internal {

class ChannelCall;
class LoopGate;
class ClientCallMetrics;
class ClientMetricShard;
class ClientStreamCall;
class UnaryClientCall;

// What every call on a channel needs from it to set itself up, fixed when
// the channel is made.
struct ChannelCallSettings {
  // "user-agent" of every call (ChannelOptions::user_agent).
  std::string user_agent;
  // ChannelOptions::default_compression.
  CompressionAlgorithm default_compression = CompressionAlgorithm::kIdentity;
  // ChannelOptions::connection.max_send_message_size. Bytes.
  size_t max_send_message_size = 0;
  // ChannelOptions::stream_write_buffer. Bytes.
  size_t stream_write_buffer = 0;
  // ChannelOptions::per_rpc_retry_buffer_size. Bytes.
  size_t per_rpc_retry_buffer_size = 0;
  // ChannelOptions::connect_unary.
  bool connect_unary = false;
  // With ChannelOptions::connect_json: converts the messages; null: binary.
  std::shared_ptr<const ProtobufConnectCodec> connect_json;
  // What records the calls, each null when off: where the loop thread
  // records CallMetrics (ChannelOptions::metrics), the Tracer
  // (ChannelOptions::tracer), where the loop thread counts the calls for
  // channelz (ChannelOptions::channelz).
  ClientMetricShard* metric_shard = nullptr;
  Tracer* tracer = nullptr;
  transport::http2::CallCounts* channelz_calls = nullptr;
  // The call credentials of every call (CompositeChannelCredentials); null:
  // none.
  std::shared_ptr<CallCredentials> call_credentials;
  // Whether calls may carry call credentials: the channel's connections are
  // TLS, or LocalCredentials' unix sockets.
  bool call_credentials_allowed = false;
};

// What a channel's calls (ChannelCall and its subclasses) need of the
// channel that made them. ChannelCore implements it; it outlives every call.
// The calls never see the Channel or the rest of the core.
class ChannelCallHost {
 public:
  // Any thread; fixed when the channel is made.
  virtual const ChannelCallSettings& call_settings() const = 0;
  // The :authority of calls whose context sets none.
  virtual const std::string& default_authority() const = 0;
  // The :scheme of calls: "https" over TLS, else "http".
  virtual absl::string_view scheme() const = 0;
  // ChannelOptions::interceptors, outermost first.
  virtual const std::vector<ClientInterceptor*>& interceptors() const = 0;
  // ChannelOptions::service_config, parsed (empty without one).
  virtual const ServiceConfig& service_config() const = 0;
  // ChannelOptions::enable_retries.
  virtual bool retries_enabled() const = 0;
  // Any thread: records a call to `method` that failed with `code` before
  // it reached the loop, in CallMetrics (`metrics`, if on:
  // ClientCallMetrics::EndCallOffLoop) and channelz.
  virtual void RecordUnstartedCall(ClientCallMetrics* metrics,
                                   absl::string_view method,
                                   StatusCode code) = 0;
  // The channel's event loop, and why it could not start if it could not.
  virtual transport::io::EventLoop& loop() = 0;
  virtual const Status& loop_status() const = 0;

  // Loop thread: puts `call` on a stream of a connection, makes it wait for
  // one, or fails it.
  virtual void StartOnLoop(ChannelCall* call) = 0;
  // Loop thread: a call counted by StartOnLoop has its result.
  virtual void OnCallEnded() = 0;
  // Loop thread: the status of a call whose deadline passed while it
  // waited for a connection.
  virtual Status PendingDeadlineStatus() const = 0;
  // Loop thread: the channel is being destroyed; its calls end, none starts
  // or waits any more.
  virtual bool shutting_down() const = 0;
  // Loop thread: the list of calls waiting to retry or for their call
  // credentials, failed if the channel goes.
  virtual ChannelCall** retrying_list() = 0;
  // Where plugin threads post the calls' credentials fetches back; closed
  // when the channel goes.
  virtual const std::shared_ptr<LoopGate>& loop_gate() = 0;
  // Loop thread: the service config's retryThrottling bucket; null: none.
  virtual RetryThrottle* retry_throttle() = 0;
  // Loop thread: a uniformly distributed number in [0, 1) for a retry's
  // backoff.
  virtual double RetryJitter() = 0;
  // Loop thread: the wait before the `n`-th (from 0) transparent retry that
  // waits: min(initial_backoff * backoff_multiplier^n, max_backoff) of the
  // reconnect backoff, shifted at random by up to backoff_jitter of itself.
  virtual absl::Duration TransparentRetryBackoff(int n) = 0;

  // Any thread: counts `bytes` more request bytes kept for retries; false
  // (nothing counted) if that would exceed ChannelOptions::
  // retry_buffer_size.
  [[nodiscard]] virtual bool ChargeRetryBuffer(size_t bytes) = 0;
  virtual void ReleaseRetryBuffer(size_t bytes) = 0;
  // Any thread: a unary or streaming call is over; back to the channel's
  // pool.
  virtual void ReturnCall(UnaryClientCall* call) = 0;
  virtual void ReturnCall(ClientStreamCall* call) = 0;

 protected:
  ~ChannelCallHost() = default;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_CHANNEL_CALL_HOST_H_
