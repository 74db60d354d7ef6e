#include "rpc/internal/client/channel_core.h"

#include <sys/socket.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "rpc/call_metrics.h"
#include "rpc/channelz.h"
#include "rpc/internal/call_metric_shards.h"
#include "rpc/internal/client/channel_call.h"
#include "rpc/internal/client/channel_options_check.h"
#include "rpc/internal/client/client_call_metrics.h"
#include "rpc/internal/client/client_stream_call.h"
#include "rpc/internal/client/dns_resolver.h"
#include "rpc/internal/client/reactor_access.h"
#include "rpc/internal/client/unary_client_call.h"
#include "rpc/internal/common/connection_options_conversion.h"
#include "rpc/internal/credentials_access.h"
#include "rpc/internal/lb/builtin_policies.h"
#include "rpc/internal/name_resolver_impl.h"
#include "transport/http1/client_bridge.h"
#include "transport/tls/tls_session.h"

namespace h2rpc::internal {

using transport::http2::ClientSession;

namespace {

// The factory for `scheme`: the channel's own, else the process's.
std::shared_ptr<ResolverFactory> FindFactory(
    const std::vector<std::shared_ptr<ResolverFactory>>& channel_factories,
    absl::string_view scheme) {
  for (const std::shared_ptr<ResolverFactory>& factory : channel_factories) {
    if (factory != nullptr && factory->scheme() == scheme) return factory;
  }
  return FindResolverFactory(scheme);
}

// The host part of "host:port" or "[v6]:port".
absl::string_view HostOf(absl::string_view target) {
  if (!target.empty() && target.front() == '[') {
    const size_t end = target.find(']');
    return end == absl::string_view::npos ? target.substr(1)
                                          : target.substr(1, end - 1);
  }
  const size_t colon = target.rfind(':');
  return colon == absl::string_view::npos ? target : target.substr(0, colon);
}

// What h2rpc cannot do yet, refused rather than ignored.
Status CheckSupported(const ServiceConfig& config) {
  for (size_t i = 0; i < config.method_configs().size(); ++i) {
    if (config.method_configs()[i].hedging_policy.has_value()) {
      return Status(StatusCode::kInvalidArgument,
                    absl::StrCat("service config: methodConfig[", i,
                                 "].hedgingPolicy: hedging is not supported "
                                 "(retryPolicy is)"));
    }
  }
  return Status();
}

// The name a server's certificate must match: the DNS host, the first IP
// address, "localhost" for a unix-domain socket, or the host of a
// resolver's default authority.
std::string TlsServerName(const ParsedTarget& target) {
  if (target.kind == ParsedTarget::Kind::kDns) return target.dns_host;
  if (target.kind == ParsedTarget::Kind::kResolver) {
    return std::string(HostOf(target.authority));
  }
  const transport::io::SocketAddress& first = target.addresses.front();
  if (first.port() < 0) return "localhost";
  return std::string(HostOf(first.ToString()));
}

// Whether every address of `target` is a unix-domain socket.
bool AllUnix(const ParsedTarget& target) {
  if (target.kind != ParsedTarget::Kind::kAddresses) return false;
  for (const transport::io::SocketAddress& address : target.addresses) {
    if (address.family() != AF_UNIX) return false;
  }
  return true;
}

transport::http2::ConnectionOptions TransportOptionsFor(
    const ChannelOptions& options) {
  transport::http2::ConnectionOptions out =
      ToTransportOptions(options.connection);
  out.keepalive.time = options.keepalive_time;
  out.keepalive.timeout = options.keepalive_timeout;
  out.keepalive.permit_without_calls = options.keepalive_permit_without_calls;
  return out;
}

ConnectionBackoff::Options BackoffOptionsFor(const ChannelOptions& options) {
  ConnectionBackoff::Options out;
  out.initial_backoff = options.initial_backoff;
  out.multiplier = options.backoff_multiplier;
  out.jitter = options.backoff_jitter;
  out.max_backoff = options.max_backoff;
  out.min_connect_timeout = options.min_connect_timeout;
  return out;
}

}  // namespace

ChannelCore::ChannelCore(absl::string_view target,
                         const ChannelCredentials* credentials,
                         const ChannelOptions& options)
    : target_(target),
      options_(options),
      channel_error_(CheckChannelOptions(options)),
      settings_{options.user_agent,
                options.default_compression,
                options.connection.max_send_message_size,
                options.stream_write_buffer,
                options.per_rpc_retry_buffer_size,
                options.connect_unary,
                options.connect_unary && options.connect_json
                    ? std::make_shared<const ProtobufConnectCodec>()
                    : nullptr},
      lookups_(options.resolver != nullptr
                   ? options.resolver->impl().resolver
                   : std::make_shared<transport::io::Resolver>()),
      watch_(ConnectivityState::kIdle),
      transport_options_(TransportOptionsFor(options)),
      backoff_options_(BackoffOptionsFor(options)),
      state_(ConnectivityState::kIdle),
      resolution_backoff_(backoff_options_, &loop_),
      keepalive_time_(options.keepalive_time) {
  retry_random_.seed(std::random_device()());
  for (const auto& interceptor : options_.interceptors) {
    if (interceptor == nullptr) {
      if (channel_error_.ok()) {
        channel_error_ = Status(StatusCode::kInvalidArgument,
                                "ChannelOptions::interceptors holds a null");
      }
      continue;
    }
    interceptors_.push_back(interceptor.get());
  }
  if (channel_error_.ok()) channel_error_ = SetUpTarget();
  default_authority_ = options.ssl_target_name_override.empty()
                           ? parsed_target_.authority
                           : options.ssl_target_name_override;
  if (!channel_error_.ok()) {
    // Reported by every call; no connection is ever made.
  } else if (credentials == nullptr) {
    channel_error_ =
        Status(StatusCode::kUnavailable, "the channel has null credentials");
  } else if (!credentials->status().ok()) {
    channel_error_ = Status(StatusCode::kUnavailable,
                            absl::StrCat("unusable channel credentials: ",
                                         credentials->status().message()));
  } else if (credentials->local() && !AllUnix(parsed_target_)) {
    channel_error_ = Status(
        StatusCode::kUnavailable,
        absl::StrCat("LocalCredentials connect only over unix sockets, and "
                     "the target '",
                     target_, "' is not unix: or unix-abstract:"));
  } else {
    settings_.call_credentials = credentials->call_credentials();
    settings_.call_credentials_allowed =
        credentials->secure() || credentials->local();
    if (credentials->secure()) {
      tls_ = CredentialsAccess::Tls(*credentials);
      scheme_ = "https";
      tls_server_name_ = options.ssl_target_name_override.empty()
                             ? TlsServerName(parsed_target_)
                             : options.ssl_target_name_override;
    }
  }
  control_calls_ = {default_authority_, scheme_, options_.user_agent};
  // The default config: a call reads one from the start.
  Status config_error;
  const ChannelConfig* config =
      ConfigFor(options_.service_config, &config_error);
  if (config == nullptr) {
    if (channel_error_.ok()) channel_error_ = config_error;
    configs_.push_back(std::make_unique<ChannelConfig>());
    config = configs_.back().get();
  }
  config_.store(config, std::memory_order_release);
  if (options_.metrics != nullptr) {
    // A66's canonical form: a target without a scheme is a DNS name.
    const std::string target =
        parsed_target_.kind == ParsedTarget::Kind::kDns &&
                !absl::StartsWith(target_, "dns:")
            ? absl::StrCat("dns:///", target_)
            : target_;
    metric_shard_ =
        CallMetricsAccess::AcquireClientShard(*options_.metrics, target);
    unstarted_metric_shard_ =
        CallMetricsAccess::AcquireClientShard(*options_.metrics, target);
  }
  if (options_.channelz != nullptr) {
    channelz_node_ =
        ChannelzAccess::Registry(*options_.channelz).AddChannel(target_);
    settings_.channelz_calls = channelz_node_->NewCallCounts();
    channelz_unstarted_calls_ = channelz_node_->NewCallCounts();
  }
  settings_.metric_shard = metric_shard_;
  settings_.tracer = options_.tracer.get();
  // A channel that can never connect has nothing to poll for.
  if (channel_error_.ok()) {
    loop_.set_busy_poll(absl::Microseconds(options_.busy_poll_us));
  }
  loop_status_ = loop_.Start("h2rpc-channel", options_.loop_cpu);
  if (!channel_error_.ok() || !loop_status_.ok()) {
    // A channel that can never connect.
    state_ = ConnectivityState::kTransientFailure;
    watch_.Set(state_);
  }
}

double ChannelCore::RetryJitter() {
  return std::uniform_real_distribution<double>(0.0, 1.0)(retry_random_);
}

absl::Duration ChannelCore::TransparentRetryBackoff(int n) {
  // Past max_backoff long before: keeps the power finite.
  const double scale = std::pow(backoff_options_.multiplier, std::min(n, 64));
  const absl::Duration backoff = std::min(
      backoff_options_.initial_backoff * scale, backoff_options_.max_backoff);
  return backoff * (1 + backoff_options_.jitter * (2 * RetryJitter() - 1));
}

bool ChannelCore::ChargeRetryBuffer(size_t bytes) {
  const size_t total =
      retry_buffered_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (total <= options_.retry_buffer_size) return true;
  retry_buffered_.fetch_sub(bytes, std::memory_order_relaxed);
  return false;
}

void ChannelCore::ReleaseRetryBuffer(size_t bytes) {
  if (bytes > 0) retry_buffered_.fetch_sub(bytes, std::memory_order_relaxed);
}

ChannelCore::~ChannelCore() {
  // Plugins that finish from here on find no loop; Shutdown() fails the
  // calls that waited for them.
  loop_gate_->Close();
  loop_.Post([this] {
    loop_.AssertInLoopThread();
    Shutdown();
  });
  loop_.Stop();
  if (metric_shard_ != nullptr) {
    CallMetricsAccess::ReleaseClientShard(*options_.metrics, metric_shard_);
    CallMetricsAccess::ReleaseClientShard(*options_.metrics,
                                          unstarted_metric_shard_);
  }
  MutexLock lock(&pool_mu_);
  for (UnaryClientCall* call : free_calls_) delete call;
  for (ClientStreamCall* call : free_stream_calls_) delete call;
}

void ChannelCore::RecordUnstartedCall(ClientCallMetrics* metrics,
                                      absl::string_view method,
                                      StatusCode code) {
  MutexLock lock(&unstarted_metrics_mu_);
  if (metrics->on()) {
    metrics->EndCallOffLoop(*unstarted_metric_shard_, method, code);
  }
  if (transport::http2::CallCounts* calls = channelz_unstarted_calls_) {
    calls->started.Add(1);
    calls->last_started.Set(transport::io::MonotonicTime::Now());
    calls->failed.Add(1);
  }
}

void ChannelCore::Destroy(std::unique_ptr<ChannelCore> core) {
  if (core == nullptr || !core->loop_.InLoopThread()) return;
  // ~EventLoop must not run on the loop thread; stopping it from another
  // joins the loop thread, which orders everything the loop did before the
  // delete.
  std::thread([dead = core.release()] { delete dead; }).detach();
}

void ChannelCore::Shutdown() {
  shut_down_ = true;
  DropResolver();
  loop_.Cancel(&reresolution_timer_);
  loop_.Cancel(&idle_timer_);
  const Status why(StatusCode::kCancelled, "the channel was destroyed");
  FailPending(why, /*keep_wait_for_ready=*/false);
  DropPolicy();
  // Their calls end with `why`, not retried (ChannelCall::RetryOrCommit).
  for (auto& subchannel : subchannels_) subchannel->Close(why);
  while (retrying_ != nullptr) {
    ChannelCall* const call = retrying_;
    call->StopRetryWait();
    call->FailBeforeStream(why);
  }
}

UnaryClientCall* ChannelCore::TakeCall() {
  MutexLock lock(&pool_mu_);
  if (free_calls_.empty()) return new UnaryClientCall(this);
  UnaryClientCall* call = free_calls_.back();
  free_calls_.pop_back();
  return call;
}

void ChannelCore::ReturnCall(UnaryClientCall* call) {
  call->ResetForReuse();
  MutexLock lock(&pool_mu_);
  free_calls_.push_back(call);
}

void ChannelCore::ReturnCall(ClientStreamCall* call) {
  call->ResetForReuse();
  MutexLock lock(&pool_mu_);
  free_stream_calls_.push_back(call);
}

UnaryClientCall* ChannelCore::PrepareCall(
    ClientContext* context, absl::string_view method,
    const google::protobuf::MessageLite* request,
    absl::string_view request_bytes, Status* status) {
  if (!loop_status_.ok()) {
    *status = loop_status_;
    return nullptr;
  }
  UnaryClientCall* call = TakeCall();
  *status = call->Prepare(context, method, request, request_bytes);
  if (!status->ok()) {
    call->ReportUnstartedResult(*status);
    ReturnCall(call);
    return nullptr;
  }
  return call;
}

Status ChannelCore::RunBlocking(UnaryClientCall* call) {
  call->Start();
  Status status = call->Wait();
  call->Release();
  return status;
}

Status ChannelCore::UnaryCall(ClientContext* context, absl::string_view method,
                              const google::protobuf::MessageLite& request,
                              google::protobuf::MessageLite* response) {
  Status status;
  UnaryClientCall* call = PrepareCall(context, method, &request, {}, &status);
  if (call == nullptr) return status;
  call->response = response;
  return RunBlocking(call);
}

Status ChannelCore::GenericUnaryCall(ClientContext* context,
                                     absl::string_view method,
                                     absl::string_view request,
                                     std::string* response) {
  Status status;
  UnaryClientCall* call =
      PrepareCall(context, method, nullptr, request, &status);
  if (call == nullptr) return status;
  call->response_bytes = response;
  return RunBlocking(call);
}

void ChannelCore::CompleteUnstarted(
    absl::AnyInvocable<void(const Status&)> done, Status status) {
  auto complete = [done = std::move(done),
                   status = std::move(status)]() mutable { done(status); };
  if (!loop_status_.ok()) {
    // No loop runs: a thread of its own keeps `done` off the caller's stack.
    std::thread(std::move(complete)).detach();
    return;
  }
  loop_.Post(std::move(complete));  // allocates; a failure path only
}

void ChannelCore::AsyncUnaryCall(ClientContext* context,
                                 absl::string_view method,
                                 const google::protobuf::MessageLite& request,
                                 google::protobuf::MessageLite* response,
                                 absl::AnyInvocable<void(const Status&)> done) {
  Status status;
  UnaryClientCall* call = PrepareCall(context, method, &request, {}, &status);
  if (call == nullptr) {
    CompleteUnstarted(std::move(done), std::move(status));
    return;
  }
  call->response = response;
  call->done = std::move(done);
  call->Start();
}

void ChannelCore::AsyncGenericUnaryCall(
    ClientContext* context, absl::string_view method, absl::string_view request,
    std::string* response, absl::AnyInvocable<void(const Status&)> done) {
  Status status;
  UnaryClientCall* call =
      PrepareCall(context, method, nullptr, request, &status);
  if (call == nullptr) {
    CompleteUnstarted(std::move(done), std::move(status));
    return;
  }
  call->response_bytes = response;
  call->done = std::move(done);
  call->Start();
}

ClientStreamCall* ChannelCore::NewStreamingCall(
    ClientContext* context, absl::string_view method, ConstMessageRef request,
    MessageRef response, ClientStreamReactor* reactor, bool generic) {
  ClientStreamCall* call = nullptr;
  {
    MutexLock lock(&pool_mu_);
    if (!free_stream_calls_.empty()) {
      call = free_stream_calls_.back();
      free_stream_calls_.pop_back();
    }
  }
  if (call == nullptr) call = new ClientStreamCall(this);
  ClientReactorAccess::Bind(reactor, call);
  call->Prepare(reactor, context, method, request, response, generic);
  return call;
}

void ChannelCore::BindStreamingCall(
    ClientContext* context, absl::string_view method, ConstMessageRef request,
    MessageRef response, ClientStreamReactor* reactor, bool generic) {
  NewStreamingCall(context, method, request, response, reactor, generic);
}

void ChannelCore::StartBlockingStream(
    ClientContext* context, absl::string_view method, ConstMessageRef request,
    MessageRef response, BlockingClientStream* stream, bool generic) {
  ClientStreamCall* call =
      NewStreamingCall(context, method, request, response, stream, generic);
  // Released by the wrapper's destructor, which may still reach the call.
  call->KeepAlive();
  call->StartCall();
}

ConnectivityState ChannelCore::GetState(bool try_to_connect) {
  const ConnectivityState state = watch_.Get();
  if (try_to_connect && state == ConnectivityState::kIdle) {
    loop_.Post(&connect_task_);
  }
  return state;
}

bool ChannelCore::WaitForStateChange(ConnectivityState last_observed,
                                     absl::Time deadline) {
  return watch_.WaitForChange(last_observed,
                              transport::io::MonotonicFromWall(deadline));
}

bool ChannelCore::WaitForConnected(absl::Time deadline) {
  return watch_.WaitUntilReady(transport::io::MonotonicFromWall(deadline),
                               [this] { loop_.Post(&connect_task_); });
}

absl::Duration ChannelCore::keepalive_time() const {
  MutexLock lock(&keepalive_mu_);
  return keepalive_time_;
}

void ChannelCore::StartOnLoop(ChannelCall* call) {
  call->StartAttempt();
  if (shut_down_) {
    call->FailBeforeStream(
        Status(StatusCode::kCancelled, "the channel was destroyed"));
    return;
  }
  if (!channel_error_.ok()) {
    call->FailBeforeStream(channel_error_);
    return;
  }
  if (call->CountInProgress()) ++active_calls_;
  if (policy_ != nullptr) {
    if (LbSubchannel* picked = policy_->Pick()) {
      if (Subchannel* subchannel = AcceptPick(picked, call)) {
        subchannel->StartCall(&call->stream());
      }
      return;
    }
  }
  switch (state_) {
    case ConnectivityState::kTransientFailure:
      if (!call->wait_for_ready()) {
        call->FailBeforeStream(last_error_);
        return;
      }
      call->WaitForConnection(&pending_);
      return;
    case ConnectivityState::kIdle:
    case ConnectivityState::kShutdown:  // not on the loop's side
      call->WaitForConnection(&pending_);
      ExitIdle();
      return;
    default:
      call->WaitForConnection(&pending_);
      return;
  }
}

void ChannelCore::OnCallEnded() {
  if (--active_calls_ > 0) return;
  idle_since_ = loop_.Now();
  ArmIdleTimer();
}

Status ChannelCore::PendingDeadlineStatus() const {
  return Status(
      StatusCode::kDeadlineExceeded,
      last_error_.ok()
          ? absl::StrCat("deadline exceeded while waiting for a connection to ",
                         target_)
          : absl::StrCat("deadline exceeded while waiting for a connection to ",
                         target_,
                         "; last connection attempt: ", last_error_.message()));
}

void ChannelCore::SetState(ConnectivityState state) {
  if (state == state_) return;
  state_ = state;
  watch_.Set(state);
  if (channelz_node_ != nullptr) channelz_node_->SetState(state);
}

void ChannelCore::ConnectIfIdle() {
  loop_.AssertInLoopThread();
  if (shut_down_ || state_ != ConnectivityState::kIdle ||
      !channel_error_.ok()) {
    return;
  }
  ExitIdle();
}

void ChannelCore::ExitIdle() {
  SetState(ConnectivityState::kConnecting);
  if (policy_ != nullptr) {
    policy_->ExitIdle();
  } else if (parsed_target_.kind == ParsedTarget::Kind::kAddresses) {
    std::vector<ResolvedAddress> addresses;
    for (const transport::io::SocketAddress& address :
         parsed_target_.addresses) {
      addresses.push_back(ResolvedAddress{address.ToString(), {}});
    }
    UpdateAddresses(std::move(addresses), parsed_target_.addresses);
  } else if (loop_.Now() < resolution_backoff_.next_attempt_time() &&
             !last_error_.ok()) {
    // Idle again while backing off after a failed resolution: the backoff
    // still holds.
    EnterTransientFailure(last_error_);
    ScheduleResolution(resolution_backoff_.next_attempt_time());
  } else {
    Resolve();
  }
  if (active_calls_ == 0) {
    // Woken by GetState(true): idle again after idle_timeout unless a call
    // comes.
    idle_since_ = loop_.Now();
    ArmIdleTimer();
  }
}

Status ChannelCore::SetUpTarget() {
  std::string scheme, authority, endpoint;
  if (SplitTargetUri(target_, &scheme, &authority, &endpoint)) {
    resolver_factory_ = FindFactory(options_.resolver_factories, scheme);
  }
  if (resolver_factory_ == nullptr) {
    Status status = ParseTarget(target_, &parsed_target_);
    if (!status.ok() || parsed_target_.kind != ParsedTarget::Kind::kDns) {
      return status;
    }
    // A DNS target without the scheme: a factory registered for "dns"
    // resolves it too.
    resolver_factory_ = FindFactory(options_.resolver_factories, "dns");
    if (resolver_factory_ == nullptr) return Status();
    scheme = "dns";
    authority.clear();
    endpoint = parsed_target_.authority;
  }
  resolver_target_ = ResolverTarget{target_, std::move(scheme),
                                    std::move(authority), std::move(endpoint)};
  Status status = resolver_factory_->CheckTarget(resolver_target_);
  if (!status.ok()) {
    return Status(StatusCode::kInvalidArgument,
                  absl::StrCat("invalid target '", target_, "' for the '",
                               resolver_target_.scheme,
                               "' resolver: ", status.message()));
  }
  parsed_target_ = ParsedTarget();
  parsed_target_.kind = ParsedTarget::Kind::kResolver;
  parsed_target_.authority =
      EncodeAuthority(resolver_factory_->DefaultAuthority(resolver_target_));
  return Status();
}

void ChannelCore::Resolve() {
  if (shut_down_) return;
  loop_.Cancel(&reresolution_timer_);
  last_resolution_start_ = loop_.Now();
  resolution_backoff_.BeginAttempt();
  if (resolver_ == nullptr) {
    resolver_link_ = std::make_shared<ResolverLink>(
        static_cast<ResolverLink::Sink*>(this), loop_gate_, loop_);
    Status why;
    resolver_ = NewResolver(resolver_link_.get(), &why);
    if (resolver_ == nullptr) {
      DropResolver();
      OnResolverError(why);
      return;
    }
  }
  try {
    resolver_->ResolveNow();
  } catch (const std::exception& e) {
    OnResolverError(
        Status(StatusCode::kUnavailable,
               absl::StrCat("the '", resolver_target_.scheme,
                            "' resolver's ResolveNow() threw: ", e.what())));
  } catch (...) {
    OnResolverError(Status(StatusCode::kUnavailable,
                           absl::StrCat("the '", resolver_target_.scheme,
                                        "' resolver's ResolveNow() threw")));
  }
}

std::unique_ptr<Resolver> ChannelCore::NewResolver(ResolverLink* link,
                                                   Status* why) {
  if (resolver_factory_ == nullptr) {
    return std::make_unique<DnsResolver>(
        parsed_target_.dns_host_port, link, lookups_.get(), &loop_,
        DnsResolver::Options{options_.min_connect_timeout,
                             options_.dns_refresh_interval});
  }
  const std::string what =
      absl::StrCat("the '", resolver_target_.scheme, "' resolver factory");
  try {
    std::unique_ptr<Resolver> resolver =
        resolver_factory_->Create(resolver_target_, link);
    if (resolver == nullptr) {
      *why =
          Status(StatusCode::kUnavailable,
                 absl::StrCat(what, " made no resolver for '", target_, "'"));
    }
    return resolver;
  } catch (const std::exception& e) {
    *why = Status(StatusCode::kUnavailable,
                  absl::StrCat(what, " threw: ", e.what()));
  } catch (...) {
    *why = Status(StatusCode::kUnavailable, absl::StrCat(what, " threw"));
  }
  return nullptr;
}

void ChannelCore::DropResolver() {
  // The resolver goes first: its destructor may still use the link.
  resolver_.reset();
  if (resolver_link_ != nullptr) {
    resolver_link_->Detach();
    resolver_link_.reset();
  }
}

const ChannelCore::ChannelConfig* ChannelCore::ConfigFor(absl::string_view json,
                                                         Status* why) {
  for (const std::unique_ptr<ChannelConfig>& config : configs_) {
    if (config->json == json) return config.get();
  }
  if (configs_.size() >= kMaxServiceConfigs) {
    *why =
        Status(StatusCode::kUnavailable,
               absl::StrCat("the resolver sent more than ", kMaxServiceConfigs,
                            " distinct service configs; this one is "
                            "ignored"));
    return nullptr;
  }
  auto config = std::make_unique<ChannelConfig>();
  config->json = std::string(json);
  if (!json.empty()) {
    Status status =
        ParseServiceConfig(json, &config->service_config, {}, *this);
    if (status.ok()) status = CheckSupported(config->service_config);
    if (!status.ok()) {
      *why = std::move(status);
      return nullptr;
    }
  }
  const ServiceConfig& service_config = config->service_config;
  if (service_config.load_balancing.has_value()) {
    config->policy_name = service_config.load_balancing->policy;
    config->policy_config = service_config.load_balancing->config;
  } else {
    config->policy_name = options_.lb_policy;
    config->policy_config = "{}";
    Status status = Check(config->policy_name, config->policy_config);
    if (!status.ok()) {
      *why = Status(
          StatusCode::kInvalidArgument,
          status.code() == StatusCode::kNotFound
              ? absl::StrCat("ChannelOptions::lb_policy is \"",
                             options_.lb_policy,
                             "\"; it must name a policy: ", Names())
              : absl::StrCat("ChannelOptions::lb_policy \"", options_.lb_policy,
                             "\": ", status.message()));
      return nullptr;
    }
  }
  config->policy_factory = FindPolicyFactory(config->policy_name);
  if (config->policy_name != "pick_first" &&
      service_config.health_check_service_name.has_value()) {
    config->health_check =
        std::make_unique<HealthCheckSettings>(HealthCheckSettings{
            *service_config.health_check_service_name, &control_calls_});
  }
  if (service_config.retry_throttling.has_value()) {
    config->retry_throttle =
        std::make_unique<RetryThrottle>(*service_config.retry_throttling);
  }
  configs_.push_back(std::move(config));
  return configs_.back().get();
}

void ChannelCore::OnResolverResult(ResolverResult result) {
  loop_.AssertInLoopThread();
  if (shut_down_) return;
  // An unusable address is skipped: one bad registration does not take
  // the others out of service.
  std::vector<ResolvedAddress> addresses;
  std::vector<transport::io::SocketAddress> socket_addresses;
  absl::flat_hash_set<std::string> seen;
  addresses.reserve(result.addresses.size());
  Status unusable;
  for (ResolvedAddress& resolved : result.addresses) {
    transport::io::SocketAddress address;
    Status status = ParseResolvedAddress(resolved.address, &address);
    if (!status.ok()) {
      if (unusable.ok()) unusable = std::move(status);
      continue;
    }
    // The policy sees each address once, written one way.
    resolved.address = address.ToString();
    if (!seen.insert(resolved.address).second) continue;
    addresses.push_back(std::move(resolved));
    socket_addresses.push_back(address);
  }
  if (addresses.empty()) {
    OnResolverError(Status(StatusCode::kUnavailable,
                           unusable.ok()
                               ? absl::StrCat("the resolver of '", target_,
                                              "' returned no addresses")
                               : absl::StrCat("the resolver of '", target_,
                                              "' returned no usable address: ",
                                              unusable.message())));
    return;
  }
  Status why;
  const ChannelConfig* config =
      ConfigFor(result.service_config.empty() ? options_.service_config
                                              : result.service_config,
                &why);
  if (config == nullptr) {
    OnResolverError(
        Status(StatusCode::kUnavailable,
               absl::StrCat(
                   "the resolver of '", target_,
                   "' returned an unusable service config: ", why.message())));
    return;
  }
  resolution_backoff_.Reset();
  const ChannelConfig* const previous =
      config_.exchange(config, std::memory_order_acq_rel);
  if (policy_ != nullptr &&
      (config->policy_factory != previous->policy_factory ||
       config->policy_config != previous->policy_config ||
       config->health_check != previous->health_check)) {
    // Another policy, or other health checks: the old subchannels drain
    // and the new policy connects its own.
    DropPolicy();
  }
  UpdateAddresses(std::move(addresses), socket_addresses);
}

void ChannelCore::OnResolverError(const Status& error) {
  loop_.AssertInLoopThread();
  if (shut_down_) return;
  // Asked again after the backoff; a policy keeps the addresses it has.
  ScheduleResolution(
      std::max(resolution_backoff_.next_attempt_time(), loop_.Now()));
  if (policy_ == nullptr) EnterTransientFailure(error);
}

void ChannelCore::OnReresolutionTimer() {
  loop_.AssertInLoopThread();
  if (shut_down_ ||
      (state_ == ConnectivityState::kIdle && policy_ == nullptr)) {
    return;
  }
  Resolve();
}

void ChannelCore::ScheduleResolution(transport::io::MonotonicTime due) {
  if (reresolution_timer_.scheduled() && resolution_due_ <= due) return;
  resolution_due_ = due;
  loop_.Schedule(&reresolution_timer_, due);
}

void ChannelCore::UpdateAddresses(
    std::vector<ResolvedAddress> addresses,
    const std::vector<transport::io::SocketAddress>& socket_addresses) {
  socket_addresses_.clear();
  for (size_t i = 0; i < addresses.size(); ++i) {
    socket_addresses_.emplace(addresses[i].address, socket_addresses[i]);
  }
  if (policy_ != nullptr) {
    policy_->UpdateAddresses(addresses);
    return;
  }
  const ChannelConfig& config = *config_.load(std::memory_order_relaxed);
  const std::string what =
      absl::StrCat("the '", config.policy_name, "' load-balancing policy");
  Status why;
  try {
    policy_ = config.policy_factory->Create(
        static_cast<LbPolicy::Helper*>(this), config.policy_config);
    if (policy_ == nullptr) {
      why = Status(StatusCode::kUnavailable,
                   absl::StrCat(what, "'s factory made no policy"));
    } else {
      policy_->UpdateAddresses(addresses);
      policy_->ExitIdle();
      return;
    }
  } catch (const std::exception& e) {
    why = Status(StatusCode::kUnavailable,
                 absl::StrCat(what, " threw: ", e.what()));
  } catch (...) {
    why = Status(StatusCode::kUnavailable, absl::StrCat(what, " threw"));
  }
  DropPolicy();
  EnterTransientFailure(why);
}

void ChannelCore::DropPolicy() {
  policy_.reset();
  policy_timers_.CancelAll();
}

Subchannel* ChannelCore::AcceptPick(LbSubchannel* picked, ChannelCall* call) {
  if (LbSubchannelAccess::Channel(*picked) == this) {
    auto* const subchannel = static_cast<Subchannel*>(picked);
    if (!subchannel->orphaned() &&
        subchannel->state() == ConnectivityState::kReady) {
      call->set_picked(subchannel);
      return subchannel;
    }
  }
  call->FailBeforeStream(Status(
      StatusCode::kInternal,
      absl::StrCat("the '",
                   config_.load(std::memory_order_relaxed)->policy_name,
                   "' load-balancing policy picked a subchannel that is not "
                   "one of its READY ones")));
  return nullptr;
}

std::shared_ptr<LbPolicyFactory> ChannelCore::FindPolicyFactory(
    absl::string_view name) const {
  for (const std::shared_ptr<LbPolicyFactory>& factory :
       options_.lb_policy_factories) {
    if (factory != nullptr && factory->name() == name) return factory;
  }
  if (std::shared_ptr<LbPolicyFactory> factory = FindLbPolicyFactory(name)) {
    return factory;
  }
  return BuiltinLbPolicyFactory(name);
}

Status ChannelCore::Check(absl::string_view name,
                          absl::string_view config) const {
  std::shared_ptr<LbPolicyFactory> factory = FindPolicyFactory(name);
  if (factory == nullptr) return Status(StatusCode::kNotFound, "no policy");
  try {
    return factory->CheckConfig(config);
  } catch (const std::exception& e) {
    return Status(StatusCode::kInvalidArgument,
                  absl::StrCat("its CheckConfig threw: ", e.what()));
  } catch (...) {
    return Status(StatusCode::kInvalidArgument, "its CheckConfig threw");
  }
}

std::string ChannelCore::Names() const {
  std::string names;
  for (const std::shared_ptr<LbPolicyFactory>& factory :
       options_.lb_policy_factories) {
    if (factory != nullptr) absl::StrAppend(&names, factory->name(), ", ");
  }
  absl::StrAppend(&names, kBuiltinLbPolicyNames,
                  ", or one registered with RegisterLbPolicyFactory");
  return names;
}

void ChannelCore::EnterTransientFailure(const Status& why) {
  last_error_ = why.code() == StatusCode::kUnavailable
                    ? why
                    : Status(StatusCode::kUnavailable, why.message());
  SetState(ConnectivityState::kTransientFailure);
  FailPending(last_error_, /*keep_wait_for_ready=*/true);
}

void ChannelCore::StartPending() {
  while (pending_ != nullptr && policy_ != nullptr) {
    LbSubchannel* const picked = policy_->Pick();
    if (picked == nullptr) return;
    ChannelCall* const call = pending_;
    call->LeavePending();
    if (Subchannel* subchannel = AcceptPick(picked, call)) {
      subchannel->StartCall(&call->stream());
    }
  }
}

void ChannelCore::FailPending(const Status& why, bool keep_wait_for_ready) {
  // Moved to a list of their own first: a failing call's `done` may start
  // new calls (posted, so they cannot join this list meanwhile).
  ChannelCall* failing = nullptr;
  for (ChannelCall* call = pending_; call != nullptr;) {
    ChannelCall* const next = call->next_pending();
    if (!keep_wait_for_ready || !call->wait_for_ready()) {
      call->MovePending(&failing);
    }
    call = next;
  }
  while (failing != nullptr) {
    ChannelCall* const call = failing;
    call->LeavePending();
    call->FailBeforeStream(why);
  }
}

void ChannelCore::ArmIdleTimer() {
  if (options_.idle_timeout == absl::InfiniteDuration() ||
      idle_timer_.scheduled() || state_ == ConnectivityState::kIdle ||
      shut_down_) {
    return;
  }
  loop_.Schedule(&idle_timer_, idle_since_ + options_.idle_timeout);
}

void ChannelCore::OnIdleTimer() {
  loop_.AssertInLoopThread();
  // A call in progress re-arms the timer when it ends.
  if (shut_down_ || active_calls_ > 0 || state_ == ConnectivityState::kIdle) {
    return;
  }
  const transport::io::MonotonicTime due = idle_since_ + options_.idle_timeout;
  if (loop_.Now() < due) {
    loop_.Schedule(&idle_timer_, due);
    return;
  }
  EnterIdle();
}

void ChannelCore::EnterIdle() {
  DropResolver();
  loop_.Cancel(&reresolution_timer_);
  loop_.Cancel(&idle_timer_);
  SetState(ConnectivityState::kIdle);
  // Orphans the subchannels: their connections close gracefully.
  DropPolicy();
}

SubchannelPtr ChannelCore::CreateSubchannel(const ResolvedAddress& address) {
  // An address the policy was not given is parsed here; one that is not an
  // address makes a subchannel whose every attempt fails.
  transport::io::SocketAddress socket_address;
  auto known = socket_addresses_.find(address.address);
  if (known != socket_addresses_.end()) {
    socket_address = known->second;
  } else if (!ParseResolvedAddress(address.address, &socket_address).ok()) {
    socket_address = transport::io::SocketAddress();
  }
  const ChannelConfig& config = *config_.load(std::memory_order_relaxed);
  subchannels_.push_back(std::make_unique<Subchannel>(
      &loop_, static_cast<Subchannel::Host*>(this), address, socket_address,
      backoff_options_, config.health_check.get()));
  LbSubchannelAccess::SetChannel(*subchannels_.back(), this);
  return SubchannelPtr(subchannels_.back().get());
}

void ChannelCore::UpdateState(ConnectivityState state, const Status& error) {
  if (shut_down_) return;
  switch (state) {
    case ConnectivityState::kTransientFailure:
      EnterTransientFailure(error);
      return;
    case ConnectivityState::kReady:
      last_error_ = Status();
      SetState(state);
      StartPending();
      return;
    case ConnectivityState::kIdle:
      SetState(state);
      // Calls waiting (none should be: they were picked while READY) wake
      // the policy again.
      if (pending_ != nullptr) ExitIdle();
      return;
    default:
      SetState(state);
      return;
  }
}

void ChannelCore::RequestReresolution() {
  if (parsed_target_.kind == ParsedTarget::Kind::kAddresses || shut_down_) {
    return;
  }
  ScheduleResolution(std::max(
      loop_.Now(),
      last_resolution_start_ + options_.dns_min_time_between_resolutions));
}

std::unique_ptr<transport::io::ByteFilter> ChannelCore::NewConnectionFilter(
    const std::string& address) {
  if (tls_ == nullptr) return nullptr;
  // A session resumes with the server that issued it: the name it was
  // verified against, at the address it answered on.
  return transport::tls::TlsSession::NewClient(
      tls_->Get(), tls_server_name_,
      absl::StrCat(tls_server_name_, "|", address),
      /*http1=*/options_.connect_unary && options_.connect_http1);
}

std::unique_ptr<transport::io::ByteFilter> ChannelCore::NewProtocolFilter() {
  if (!options_.connect_unary || !options_.connect_http1) return nullptr;
  transport::http1::Http1Options http1;
  http1.max_header_bytes = options_.connection.max_header_list_size;
  return std::make_unique<transport::http1::ClientBridge>(http1);
}

void ChannelCore::OnSubchannelStateChange(Subchannel* subchannel) {
  if (policy_ != nullptr) policy_->OnSubchannelStateChange(subchannel);
}

void ChannelCore::OnSubchannelDone(Subchannel* subchannel) {
  loop_.Post([this, subchannel] {
    loop_.AssertInLoopThread();
    auto it = std::find_if(
        subchannels_.begin(), subchannels_.end(),
        [subchannel](const auto& s) { return s.get() == subchannel; });
    if (it != subchannels_.end()) subchannels_.erase(it);
  });
}

void ChannelCore::OnTooManyPings(const std::string& peer) {
  if (transport_options_.keepalive.time == absl::InfiniteDuration()) return;
  // As gRPC clients do: the server's keepalive_min_time is longer than our
  // keepalive_time, so ping half as often on later connections.
  transport_options_.keepalive.time *= 2;
  {
    MutexLock lock(&keepalive_mu_);
    keepalive_time_ = transport_options_.keepalive.time;
  }
  std::fprintf(stderr,
               "h2rpc channel to %s: %s sent GOAWAY ENHANCE_YOUR_CALM "
               "\"too_many_pings\"; keepalive_time doubled to %s for new "
               "connections\n",
               target_.c_str(), peer.c_str(),
               absl::FormatDuration(transport_options_.keepalive.time).c_str());
}

}  // namespace h2rpc::internal
