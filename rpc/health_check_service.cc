#include "rpc/health_check_service.h"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/types/optional.h"
#include "proto/grpc/health/v1/health.pb.h"
#include "rpc/internal/common/misuse.h"
#include "rpc/internal/common/stream_quota.h"
#include "rpc/server_context.h"
#include "rpc/server_stream.h"
#include "rpc/status.h"

namespace h2rpc {

namespace {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

constexpr char kCheckPath[] = "/grpc.health.v1.Health/Check";
constexpr char kWatchPath[] = "/grpc.health.v1.Health/Watch";

}  // namespace

// One Watch call: a server-streaming reactor on the call's loop thread.
// Its state is guarded by the service's mutex, which every event and every
// status change takes; the reactor's Start* and Finish only post tasks to
// the loop, so calling them with the mutex held never re-enters it.
class HealthCheckService::Watcher final
    : public ServerWriteReactor<HealthCheckResponse> {
 public:
  // Loop thread (the Watch factory): registers with `service` and writes
  // the current status, or finishes at once (name too long, too many
  // watches, server shutting down).
  Watcher(HealthCheckService* service, absl::string_view name,
          uint64_t connection_id)
      : service_(service), connection_id_(connection_id) {
    MutexLock lock(&service_->mu_);
    h2rpc::Status refused = service_->CheckNameLength(name);
    if (refused.ok() && service_->server_shut_down_) {
      refused = h2rpc::Status(StatusCode::kUnavailable,
                              "the server is shutting down");
    }
    if (refused.ok()) refused = service_->watches_->Acquire(connection_id_);
    if (!refused.ok()) {
      EndLocked(refused);
      return;
    }
    entry_ = service_->services_.try_emplace(std::string(name)).first;
    entry_->second.watchers.insert(this);
    registered_ = true;
    WriteLocked(entry_->second.status);
  }

  // The watched service's status is now `status`.
  void Send(Serving status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(service_->mu_) {
    if (finished_) return;
    if (write_in_flight_) {
      pending_ = status;  // replaces an older pending status
      return;
    }
    if (status != last_written_) WriteLocked(status);
  }

  // The server is shutting down: ends the watch with UNAVAILABLE once the
  // status pending (if any) is written.
  void Close() ABSL_EXCLUSIVE_LOCKS_REQUIRED(service_->mu_) {
    closing_ = true;
    if (!write_in_flight_) FinishClosing();
  }

 private:
  void OnWriteDone(bool ok) override {
    MutexLock lock(&service_->mu_);
    write_in_flight_ = false;
    if (finished_) return;
    if (!ok) {
      EndLocked(
          h2rpc::Status(StatusCode::kCancelled, "the watch's call is over"));
      return;
    }
    if (closing_) {
      FinishClosing();
      return;
    }
    if (pending_.has_value()) {
      const Serving status = *pending_;
      pending_.reset();
      if (status != last_written_) WriteLocked(status);
    }
  }

  void OnCancel() override {
    MutexLock lock(&service_->mu_);
    EndLocked(h2rpc::Status(StatusCode::kCancelled, "watch cancelled"));
  }

  void OnDone() override {
    {
      MutexLock lock(&service_->mu_);
      if (registered_) {
        ServiceState& state = entry_->second;
        state.watchers.erase(this);
        if (state.watchers.empty() &&
            state.status == Serving::kServiceUnknown) {
          service_->services_.erase(entry_);
        }
        service_->watches_->Release(connection_id_);
      }
    }
    delete this;
  }

  void WriteLocked(Serving status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(service_->mu_) {
    response_.set_status(
        static_cast<HealthCheckResponse::ServingStatus>(status));
    last_written_ = status;
    write_in_flight_ = true;
    StartWrite(&response_);
  }

  // Writes the pending status if it differs from the last one written,
  // then ends the watch (the trailers follow the write).
  void FinishClosing() ABSL_EXCLUSIVE_LOCKS_REQUIRED(service_->mu_) {
    if (pending_.has_value() && *pending_ != last_written_) {
      WriteLocked(*pending_);
    }
    EndLocked(
        h2rpc::Status(StatusCode::kUnavailable, "the server is shutting down"));
  }

  // Finishes the call with `status` unless it already was.
  void EndLocked(const h2rpc::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(service_->mu_) {
    if (finished_) return;
    finished_ = true;
    pending_.reset();
    Finish(status);
  }

  HealthCheckService* const service_;
  const uint64_t connection_id_;  // ServerContext::connection_id()
  // The watched service's entry in services_ (valid while registered_: an
  // entry with watchers is never erased).
  ServiceMap::iterator entry_ ABSL_GUARDED_BY(service_->mu_);
  bool registered_ ABSL_GUARDED_BY(service_->mu_) = false;
  bool write_in_flight_ ABSL_GUARDED_BY(service_->mu_) = false;
  bool closing_ ABSL_GUARDED_BY(service_->mu_) = false;
  bool finished_ ABSL_GUARDED_BY(service_->mu_) = false;
  // The latest status that arrived while a write was in flight.
  absl::optional<Serving> pending_ ABSL_GUARDED_BY(service_->mu_);
  // What the watch last wrote (kUnknown before the first write).
  Serving last_written_ ABSL_GUARDED_BY(service_->mu_) = Serving::kUnknown;
  // The message being written: changed only while no write is in flight.
  HealthCheckResponse response_ ABSL_GUARDED_BY(service_->mu_);
};

// A watcher registers only with the service it was made for, so its
// service_->mu_ is this mu_, which the caller holds; the analysis cannot
// see that the two are the same.
void HealthCheckService::SendTo(Watcher* watcher,
                                Serving status) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  watcher->Send(status);
}

void HealthCheckService::CloseWatch(Watcher* watcher)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  watcher->Close();
}

HealthCheckService::HealthCheckService(HealthCheckServiceOptions options)
    : options_(options),
      watches_(std::make_unique<internal::StreamQuota>(
          options.max_watches, options.max_watches_per_connection,
          "health watches", "HealthCheckServiceOptions::max_watches")) {
  MutexLock lock(&mu_);
  services_[""].status = Serving::kServing;
}

HealthCheckService::~HealthCheckService() {
  MutexLock lock(&mu_);
  if (watches_->open() != 0) {
    internal::ReportMisuse(absl::StrCat(
        "HealthCheckService destroyed with ", watches_->open(),
        " watches open; it must outlive the server it is registered on"));
  }
}

Server::Builder& HealthCheckService::AddTo(Server::Builder& builder) {
  builder.RegisterCallbackUnary<HealthCheckRequest, HealthCheckResponse>(
      kCheckPath, [this](ServerContext*, const HealthCheckRequest* request,
                         HealthCheckResponse* response, UnaryDone done) {
        Serving status = Serving::kServiceUnknown;
        const h2rpc::Status result = Check(request->service(), &status);
        if (result.ok()) {
          response->set_status(
              static_cast<HealthCheckResponse::ServingStatus>(status));
        }
        done(result);
      });
  builder
      .RegisterCallbackServerStreaming<HealthCheckRequest, HealthCheckResponse>(
          kWatchPath,
          [this](ServerContext* context, const HealthCheckRequest* request)
              -> ServerWriteReactor<HealthCheckResponse>* {
            return new Watcher(this, request->service(),
                               context->connection_id());
          });
  builder.AddShutdownCallback([this] { OnServerShutdown(); });
  return builder;
}

h2rpc::Status HealthCheckService::CheckNameLength(
    absl::string_view service) const {
  if (service.size() <= options_.max_service_name_length) {
    return h2rpc::Status();
  }
  return h2rpc::Status(
      StatusCode::kInvalidArgument,
      absl::StrCat("service name is ", service.size(), " bytes; the limit is ",
                   options_.max_service_name_length,
                   " (HealthCheckServiceOptions::max_service_name_length)"));
}

h2rpc::Status HealthCheckService::Check(absl::string_view service,
                                        Serving* status) {
  h2rpc::Status result = CheckNameLength(service);
  if (!result.ok()) return result;
  MutexLock lock(&mu_);
  auto it = services_.find(service);
  if (it == services_.end() || it->second.status == Serving::kServiceUnknown) {
    return h2rpc::Status(StatusCode::kNotFound,
                         absl::StrCat("unknown service \"", service, "\""));
  }
  *status = it->second.status;
  return h2rpc::Status();
}

void HealthCheckService::Update(ServiceState& state, Serving status) {
  if (state.status == status) return;
  state.status = status;
  for (Watcher* watcher : state.watchers) SendTo(watcher, status);
}

void HealthCheckService::SetServingStatus(absl::string_view service,
                                          bool serving) {
  MutexLock lock(&mu_);
  const Serving status =
      serving && !shut_down_ ? Serving::kServing : Serving::kNotServing;
  auto it = services_.find(service);
  if (it == services_.end()) {
    it = services_.try_emplace(std::string(service)).first;
  }
  Update(it->second, status);
}

void HealthCheckService::SetServingStatus(bool serving) {
  MutexLock lock(&mu_);
  if (shut_down_) return;
  const Serving status = serving ? Serving::kServing : Serving::kNotServing;
  for (auto& [name, state] : services_) {
    if (state.status != Serving::kServiceUnknown) Update(state, status);
  }
}

void HealthCheckService::ShutdownLocked() {
  if (shut_down_) return;
  shut_down_ = true;
  for (auto& [name, state] : services_) {
    if (state.status != Serving::kServiceUnknown) {
      Update(state, Serving::kNotServing);
    }
  }
}

void HealthCheckService::Shutdown() {
  MutexLock lock(&mu_);
  ShutdownLocked();
}

void HealthCheckService::OnServerShutdown() {
  MutexLock lock(&mu_);
  ShutdownLocked();
  server_shut_down_ = true;
  for (auto& [name, state] : services_) {
    for (Watcher* watcher : state.watchers) CloseWatch(watcher);
  }
}

size_t HealthCheckService::open_watches() const {
  MutexLock lock(&mu_);
  return watches_->open();
}

}  // namespace h2rpc
