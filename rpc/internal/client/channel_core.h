#ifndef H2RPC_RPC_INTERNAL_CLIENT_CHANNEL_CORE_H_
#define H2RPC_RPC_INTERNAL_CLIENT_CHANNEL_CORE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "google/protobuf/message_lite.h"
#include "rpc/channel_options.h"
#include "rpc/client_context.h"
#include "rpc/client_stream.h"
#include "rpc/compression.h"
#include "rpc/connectivity_state.h"
#include "rpc/credentials.h"
#include "rpc/internal/channelz/channelz_registry.h"
#include "rpc/internal/client/call_credentials_fetch.h"
#include "rpc/internal/client/channel_call_host.h"
#include "rpc/internal/client/connection_backoff.h"
#include "rpc/internal/client/connectivity_watch.h"
#include "rpc/internal/client/health_watch.h"
#include "rpc/internal/client/loop_timers.h"
#include "rpc/internal/client/resolver_link.h"
#include "rpc/internal/client/retry.h"
#include "rpc/internal/client/subchannel.h"
#include "rpc/internal/common/member_task.h"
#include "rpc/internal/config/service_config.h"
#include "rpc/internal/config/target.h"
#include "rpc/load_balancing.h"
#include "rpc/resolver.h"
#include "rpc/status.h"
#include "transport/http2/client_session.h"
#include "transport/http2/session.h"
#include "transport/io/event_loop.h"
#include "transport/io/monotonic_time.h"
#include "transport/io/resolver.h"
#include "transport/io/socket.h"
#include "transport/tls/tls_context.h"

namespace h2rpc::internal {

class ChannelCall;
class UnaryClientCall;
class ClientStreamCall;

// Everything behind a Channel: the event loop, the target's resolution, the
// load-balancing policy and its subchannels (one connection per backend
// address, rpc/internal/client/subchannel.h), the connectivity state, the calls
// waiting for a connection, the idle timer and the pool of unary calls.
// Channel forwards to it; the calls (ChannelCall and its subclasses) see it
// only through ChannelCallHost, never the Channel.
//
// The channel's lifecycle (docs/design.md, "Connection lifecycle"), all on
// the loop thread:
//   IDLE --call or GetState(true)--> CONNECTING: a resolver is made for the
//     target (rpc/resolver.h: DNS, or a registered scheme's), the
//     addresses it reports go to the policy, which connects its
//     subchannels (a target of fixed addresses needs no resolver).
//   From then on the state is the policy's (READY, CONNECTING,
//     TRANSIENT_FAILURE: waiting calls fail with UNAVAILABLE, except
//     wait_for_ready ones), or TRANSIENT_FAILURE while the target cannot be
//     resolved. pick_first goes IDLE when its connection ends.
//   any --idle_timeout without calls--> IDLE (resolver, policy and
//     subchannels dropped, their connections closed gracefully)
//   any --channel destroyed--> SHUTDOWN
// The resolver is asked again when the policy asks (a connection failed
// or ended), at most once per dns_min_time_between_resolutions, and after
// an error once the connection backoff has passed. A resolver's service
// config replaces ChannelOptions::service_config; each distinct config is
// kept for the channel's lifetime (calls hold pointers into it), at most
// kMaxServiceConfigs of them.
//
// Threads: the call-starting methods, GetState, the waits and the
// accessors from any thread; ChannelCallHost's as it says; the policy's,
// subchannels' and resolver's callbacks on the loop thread.
class ChannelCore final : public ChannelCallHost,
                          private LbPolicy::Helper,
                          private Subchannel::Host,
                          private ResolverLink::Sink,
                          private LbPolicyCatalog {
 public:
  // `credentials` (null: every call fails) is read during construction.
  // Invalid `options` (CheckChannelOptions) make every call fail.
  ChannelCore(absl::string_view target, const ChannelCredentials* credentials,
              const ChannelOptions& options);
  // Ends every call with CANCELLED wherever it is (waiting for a
  // connection, between two attempts, on a connection), each call's `done`
  // or OnDone run once, then stops the loop. Does not wait for a host-name
  // lookup under way (its result is dropped). Not on the loop thread (see
  // Destroy). ShutdownWatch() must have run.
  ~ChannelCore();
  ChannelCore(const ChannelCore&) = delete;
  ChannelCore& operator=(const ChannelCore&) = delete;

  // Distinct service configs a channel keeps at most (its own and its
  // resolver's); a resolver's config beyond them counts as its error.
  static constexpr size_t kMaxServiceConfigs = 16;

  // Destroys `core` from any thread. On the core's own loop thread (the
  // last reference to its Channel dropped in a `done` callback or OnDone),
  // where the loop cannot stop itself, the destruction runs on a detached
  // thread of its own and may still be under way when this returns.
  static void Destroy(std::unique_ptr<ChannelCore> core);

  const std::string& target() const override { return target_; }

  // ChannelCallHost.
  const ChannelCallSettings& call_settings() const override {
    return settings_;
  }
  // The target, or ChannelOptions::ssl_target_name_override.
  const std::string& default_authority() const override {
    return default_authority_;
  }
  absl::string_view scheme() const override { return scheme_; }
  const std::vector<ClientInterceptor*>& interceptors() const override {
    return interceptors_;
  }
  const ServiceConfig& service_config() const override {
    return config_.load(std::memory_order_acquire)->service_config;
  }
  bool retries_enabled() const override { return options_.enable_retries; }

  void RecordUnstartedCall(ClientCallMetrics* metrics, absl::string_view method,
                           StatusCode code) override;
  transport::io::EventLoop& loop() override { return loop_; }
  const Status& loop_status() const override { return loop_status_; }
  void StartOnLoop(ChannelCall* call) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  void OnCallEnded() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  Status PendingDeadlineStatus() const override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  bool shutting_down() const override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_) {
    return shut_down_;
  }
  ChannelCall** retrying_list() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_) {
    return &retrying_;
  }
  const std::shared_ptr<LoopGate>& loop_gate() override { return loop_gate_; }
  RetryThrottle* retry_throttle() override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_) {
    return config_.load(std::memory_order_relaxed)->retry_throttle.get();
  }
  double RetryJitter() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  absl::Duration TransparentRetryBackoff(int n) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  [[nodiscard]] bool ChargeRetryBuffer(size_t bytes) override;
  void ReleaseRetryBuffer(size_t bytes) override;
  void ReturnCall(UnaryClientCall* call) override;
  void ReturnCall(ClientStreamCall* call) override;

  // The Channel's calls (see there for their contracts).
  Status UnaryCall(ClientContext* context, absl::string_view method,
                   const google::protobuf::MessageLite& request,
                   google::protobuf::MessageLite* response);
  void AsyncUnaryCall(ClientContext* context, absl::string_view method,
                      const google::protobuf::MessageLite& request,
                      google::protobuf::MessageLite* response,
                      absl::AnyInvocable<void(const Status&)> done);
  Status GenericUnaryCall(ClientContext* context, absl::string_view method,
                          absl::string_view request, std::string* response);
  void AsyncGenericUnaryCall(ClientContext* context, absl::string_view method,
                             absl::string_view request, std::string* response,
                             absl::AnyInvocable<void(const Status&)> done);
  // Binds `reactor` to a new streaming call (not started).
  // `generic`: a call of the generic API (CallMetrics records "other").
  void BindStreamingCall(ClientContext* context, absl::string_view method,
                         ConstMessageRef request, MessageRef response,
                         ClientStreamReactor* reactor, bool generic);
  // Binds `stream` to a new streaming call and starts it.
  void StartBlockingStream(ClientContext* context, absl::string_view method,
                           ConstMessageRef request, MessageRef response,
                           BlockingClientStream* stream, bool generic);

  // The Channel's connectivity (see there). Any thread; the waits block.
  ConnectivityState GetState(bool try_to_connect);
  bool WaitForStateChange(ConnectivityState last_observed, absl::Time deadline);
  bool WaitForConnected(absl::Time deadline);
  // Any thread, once, before the core is destroyed (by ~Channel, while
  // threads may still wait through a raw Channel pointer): SHUTDOWN,
  // waiters released; returns once none is left.
  void ShutdownWatch() { watch_.Shutdown(); }

  // For tests, any thread: the state's history and waiters; the keepalive
  // time the channel's next connection gets.
  const ConnectivityWatch& connectivity() const { return watch_; }
  absl::Duration keepalive_time() const;

 private:
  // What the channel makes of one service config.
  struct ChannelConfig {
    std::string json;  // as given; "" for none
    ServiceConfig service_config;
    // The policy: loadBalancingConfig's, else ChannelOptions::lb_policy.
    std::string policy_name;
    std::string policy_config;  // JSON text
    std::shared_ptr<LbPolicyFactory> policy_factory;
    // Set when health checking is on (healthCheckConfig, for any policy but
    // pick_first).
    std::unique_ptr<HealthCheckSettings> health_check;
    // Set when the config has retryThrottling; loop thread only.
    std::unique_ptr<RetryThrottle> retry_throttle;
  };

  // A timer that calls a member function on the loop thread.
  template <void (ChannelCore::*kFire)()>
  class MemberTimer final : public transport::io::Timer {
   public:
    explicit MemberTimer(ChannelCore* core) : core_(core) {}
    void OnTimer() override { (core_->*kFire)(); }

   private:
    ChannelCore* const core_;
  };

  UnaryClientCall* TakeCall();
  // A streaming call bound to `reactor` and prepared, not yet started.
  ClientStreamCall* NewStreamingCall(
      ClientContext* context, absl::string_view method, ConstMessageRef request,
      MessageRef response, ClientStreamReactor* reactor, bool generic);
  // A pooled call set up for `request` (or `request_bytes`), or null with
  // `*status` saying why the call cannot start.
  UnaryClientCall* PrepareCall(ClientContext* context, absl::string_view method,
                               const google::protobuf::MessageLite* request,
                               absl::string_view request_bytes, Status* status);
  Status RunBlocking(UnaryClientCall* call);
  // Runs `done(status)` for an asynchronous call that could not start: on
  // the loop thread, never on the caller's stack.
  void CompleteUnstarted(absl::AnyInvocable<void(const Status&)> done,
                         Status status);

  // Loop thread; the entry points (timers, tasks, the resolver's delivery)
  // assert it (EventLoop::AssertInLoopThread).
  void SetState(ConnectivityState state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  // Leaves IDLE: resolves the target (or hands its fixed addresses to a new
  // policy), or wakes an idle policy.
  void ExitIdle() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  // From GetState(true) and WaitForConnected.
  void ConnectIfIdle();
  // Parses the target into parsed_target_ and, for a scheme a factory is
  // registered for (ChannelOptions::resolver_factories, then the process's
  // RegisterResolverFactory), resolver_factory_ and resolver_target_.
  Status SetUpTarget();
  // Asks the resolver (made first if there is none) to resolve the
  // target.
  void Resolve() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  // The resolver for the target: the scheme's factory's, or DNS. Null with
  // `*why` when the factory made none (or threw).
  std::unique_ptr<Resolver> NewResolver(ResolverLink* link, Status* why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  // Destroys the resolver; what it reports later is dropped.
  void DropResolver() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  // The channel's config for `json` ("" for none): one already kept, or a
  // new one parsed and kept; null with `*why` when it does not parse, is
  // not supported, or kMaxServiceConfigs are kept already.
  const ChannelConfig* ConfigFor(absl::string_view json, Status* why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  // ResolverLink::Sink.
  void OnResolverResult(ResolverResult result) override;
  void OnResolverError(const Status& error) override;
  // The reresolution timer: resolve again unless the channel is idle.
  void OnReresolutionTimer();
  // Schedules the next resolution for `due` unless one is due sooner.
  void ScheduleResolution(transport::io::MonotonicTime due)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  // New addresses for the policy (made on the first, or when the config
  // names another), with the socket address of each (same index).
  void UpdateAddresses(
      std::vector<ResolvedAddress> addresses,
      const std::vector<transport::io::SocketAddress>& socket_addresses)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  // Destroys the policy (orphaning its subchannels) and its timers.
  void DropPolicy() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  // The policy's pick as the channel's subchannel; null with the call
  // failed when the policy picked what it may not.
  Subchannel* AcceptPick(LbSubchannel* picked, ChannelCall* call)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  // The factory of policy `name`: the channel's own, the process's, then
  // h2rpc's; null if none.
  std::shared_ptr<LbPolicyFactory> FindPolicyFactory(
      absl::string_view name) const;
  // LbPolicyCatalog (for the service configs' loadBalancingConfig).
  Status Check(absl::string_view name, absl::string_view config) const override;
  std::string Names() const override;
  // The channel itself (no policy yet) cannot connect: `why`.
  void EnterTransientFailure(const Status& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  // Starts the waiting calls the policy can pick a subchannel for.
  void StartPending() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  // Fails the calls waiting for a connection with `why`; wait_for_ready
  // ones stay when `keep_wait_for_ready`.
  void FailPending(const Status& why, bool keep_wait_for_ready)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  // Schedules the idle check once no call is in progress.
  void ArmIdleTimer() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  void OnIdleTimer();
  void EnterIdle() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  void Shutdown() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);

  // LbPolicy::Helper.
  SubchannelPtr CreateSubchannel(const ResolvedAddress& address) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  void UpdateState(ConnectivityState state, const Status& error) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  void RequestReresolution() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  uint64_t StartTimer(absl::Duration delay,
                      absl::AnyInvocable<void()> task) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_) {
    return policy_timers_.Start(delay, std::move(task));
  }
  void CancelTimer(uint64_t id) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_) {
    policy_timers_.Cancel(id);
  }

  // Subchannel::Host.
  const transport::http2::ConnectionOptions& transport_options() const override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_) {
    return transport_options_;
  }
  std::unique_ptr<transport::io::ByteFilter> NewConnectionFilter(
      const std::string& address) override;
  std::unique_ptr<transport::io::ByteFilter> NewProtocolFilter() override;
  void OnSubchannelStateChange(Subchannel* subchannel) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  void OnTooManyPings(const std::string& peer) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  void OnSubchannelDone(Subchannel* subchannel) override;
  ClientMetricShard* metric_shard() const override { return metric_shard_; }
  ChannelzNode* channelz_node() const override { return channelz_node_.get(); }
  const ControlCallSettings& control_call_settings() const override {
    return control_calls_;
  }

  const std::string target_;
  const ChannelOptions options_;
  // channelz (options_.channelz): the channel's entry, whose call counts
  // the loop thread writes (settings_.channelz_calls) and, under
  // unstarted_metrics_mu_, the threads whose calls fail before reaching the
  // loop (channelz_unstarted_calls_). Null without it.
  std::unique_ptr<ChannelzNode> channelz_node_;
  // The target, parsed (kind kResolver: a registered scheme's, resolved by
  // resolver_factory_); invalid: channel_error_ says why.
  ParsedTarget parsed_target_;
  std::shared_ptr<ResolverFactory> resolver_factory_;
  ResolverTarget resolver_target_;  // with resolver_factory_
  // ChannelOptions::service_config's first, then each distinct one a
  // resolver reported: kept while the channel lives.
  std::vector<std::unique_ptr<ChannelConfig>> configs_ ABSL_GUARDED_BY(loop_);
  // The one in force, read by calls on any thread.
  std::atomic<const ChannelConfig*> config_{nullptr};
  std::mt19937 retry_random_ ABSL_GUARDED_BY(loop_);
  // Request bytes kept by uncommitted calls for their retries.
  std::atomic<size_t> retry_buffered_{0};
  // Where the TLS context of a new connection is; null: plaintext.
  std::shared_ptr<transport::tls::TlsContextSlot> tls_;
  // Unusable target, credentials or options: why every call fails.
  Status channel_error_;
  // The name the server's certificate must match (TLS).
  std::string tls_server_name_;
  std::string default_authority_;
  absl::string_view scheme_ = "http";
  // Health checks and load reports: default_authority_, scheme_ and the
  // user agent, set with them.
  ControlCallSettings control_calls_;
  // Set by the constructor, then fixed.
  ChannelCallSettings settings_;
  std::vector<ClientInterceptor*> interceptors_;  // held by options_
  // The lookup thread of DNS resolvers.
  const std::shared_ptr<transport::io::Resolver> lookups_;
  transport::io::EventLoop loop_;
  Status loop_status_;  // why the loop could not start, if it could not
  // The loop, for the plugin threads; closed first by the destructor.
  const std::shared_ptr<LoopGate> loop_gate_ =
      std::make_shared<LoopGate>(&loop_);
  ConnectivityWatch watch_;

  // Loop thread only.
  // Options of new connections; keepalive.time doubles on GOAWAY
  // ENHANCE_YOUR_CALM "too_many_pings".
  transport::http2::ConnectionOptions transport_options_ ABSL_GUARDED_BY(loop_);
  const ConnectionBackoff::Options backoff_options_;
  ConnectivityState state_ ABSL_GUARDED_BY(loop_);  // what watch_ publishes
  // Made when the channel first needs addresses, dropped when it goes idle;
  // null for a target of fixed addresses.
  std::unique_ptr<Resolver> resolver_ ABSL_GUARDED_BY(loop_);
  std::shared_ptr<ResolverLink> resolver_link_ ABSL_GUARDED_BY(loop_);
  // Paces resolutions after errors.
  ConnectionBackoff resolution_backoff_ ABSL_GUARDED_BY(loop_);
  transport::io::MonotonicTime last_resolution_start_ ABSL_GUARDED_BY(loop_) =
      transport::io::MonotonicTime::InfinitePast();
  transport::io::MonotonicTime resolution_due_
      ABSL_GUARDED_BY(loop_);  // reresolution_timer_'s
  // Made on the first addresses, dropped when the channel goes idle.
  std::unique_ptr<LbPolicy> policy_ ABSL_GUARDED_BY(loop_);
  // The policy's timers, cancelled with it.
  LoopTimers policy_timers_{loop_};
  // The addresses the policy has, and the socket address of each.
  absl::flat_hash_map<std::string, transport::io::SocketAddress>
      socket_addresses_ ABSL_GUARDED_BY(loop_);
  // Every subchannel not yet freed, orphaned ones included.
  std::vector<std::unique_ptr<Subchannel>> subchannels_ ABSL_GUARDED_BY(loop_);
  ChannelCall* pending_ ABSL_GUARDED_BY(loop_) =
      nullptr;  // waiting for a connection
  ChannelCall* retrying_ ABSL_GUARDED_BY(loop_) =
      nullptr;  // waiting for their next attempt or call credentials
  Status last_error_ ABSL_GUARDED_BY(
      loop_);  // UNAVAILABLE: why the channel is in TRANSIENT_FAILURE
  int active_calls_ ABSL_GUARDED_BY(loop_) =
      0;  // counted by StartOnLoop, not yet ended
  transport::io::MonotonicTime idle_since_
      ABSL_GUARDED_BY(loop_);  // active_calls_ last became 0
  bool shut_down_ ABSL_GUARDED_BY(loop_) = false;
  MemberTimer<&ChannelCore::OnReresolutionTimer> reresolution_timer_{this};
  MemberTimer<&ChannelCore::OnIdleTimer> idle_timer_{this};
  MemberTask<ChannelCore, &ChannelCore::ConnectIfIdle> connect_task_{this};

  // keepalive_time() for tests.
  mutable Mutex keepalive_mu_;
  absl::Duration keepalive_time_ ABSL_GUARDED_BY(keepalive_mu_);

  // Idle calls, taken and returned from any thread.
  // CallMetrics (options_.metrics): the loop thread's shard, and the one
  // calls that fail before reaching the loop record into, under its lock.
  // Null without metrics.
  ClientMetricShard* metric_shard_ = nullptr;
  Mutex unstarted_metrics_mu_;
  ClientMetricShard* unstarted_metric_shard_
      ABSL_PT_GUARDED_BY(unstarted_metrics_mu_) = nullptr;
  transport::http2::CallCounts* channelz_unstarted_calls_
      ABSL_PT_GUARDED_BY(unstarted_metrics_mu_) = nullptr;

  Mutex pool_mu_;
  std::vector<UnaryClientCall*> free_calls_ ABSL_GUARDED_BY(pool_mu_);
  std::vector<ClientStreamCall*> free_stream_calls_ ABSL_GUARDED_BY(pool_mu_);
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_CHANNEL_CORE_H_
