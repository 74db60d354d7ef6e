#include "rpc/internal/client/health_watch.h"

#include "absl/strings/str_cat.h"
#include "proto/grpc/health/v1/health.pb.h"

namespace h2rpc::internal {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

void HealthWatch::Start(transport::http2::ClientSession* connection) {
  if (stream_.active()) return;
  cancelled_ = false;
  HealthCheckRequest request;
  request.set_service(settings_->service_name);
  Status status =
      StartControlCall(*settings_->call, "/grpc.health.v1.Health/Watch",
                       request, this, &stream_, connection);
  if (!status.ok()) listener_->OnHealthWatchEnded(status, false);
}

void HealthWatch::Cancel() {
  if (!stream_.active()) return;
  cancelled_ = true;
  stream_.Cancel(Status(StatusCode::kCancelled, "health check stopped"));
}

Status HealthWatch::OnMessage(absl::string_view message, bool compressed) {
  if (cancelled_) return Status();
  HealthCheckResponse response;
  if (!response.ParseFromArray(message.data(),
                               static_cast<int>(message.size()))) {
    return Status(StatusCode::kInternal,
                  "the backend's health check response does not parse");
  }
  if (response.status() == HealthCheckResponse::SERVING) {
    listener_->OnHealthChanged(true, Status());
  } else {
    listener_->OnHealthChanged(
        false, Status(StatusCode::kUnavailable,
                      absl::StrCat("backend unhealthy: health status of "
                                   "service \"",
                                   settings_->service_name, "\" is ",
                                   HealthCheckResponse::ServingStatus_Name(
                                       response.status()))));
  }
  return Status();
}

void HealthWatch::OnClose(const Status& status, Metadata& trailing) {
  listener_->OnHealthWatchEnded(status, cancelled_);
}

}  // namespace h2rpc::internal
