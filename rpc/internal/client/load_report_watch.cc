#include "rpc/internal/client/load_report_watch.h"

#include <cstdint>

#include "proto/xds/service/orca/v3/orca.pb.h"

namespace h2rpc::internal {

void LoadReportWatch::Start(transport::http2::ClientSession* connection,
                            absl::Duration interval) {
  if (stream_.active()) return;
  cancelled_ = false;
  xds::service::orca::v3::OrcaLoadReportRequest request;
  const int64_t seconds =
      absl::IDivDuration(interval, absl::Seconds(1), &interval);
  request.mutable_report_interval()->set_seconds(seconds);
  request.mutable_report_interval()->set_nanos(
      static_cast<int32_t>(absl::ToInt64Nanoseconds(interval)));
  Status status = StartControlCall(
      *settings_, "/xds.service.orca.v3.OpenRcaService/StreamCoreMetrics",
      request, this, &stream_, connection);
  if (!status.ok()) listener_->OnLoadReportWatchEnded(status, false);
}

void LoadReportWatch::Cancel() {
  if (!stream_.active()) return;
  cancelled_ = true;
  stream_.Cancel(Status(StatusCode::kCancelled, "load reports stopped"));
}

Status LoadReportWatch::OnMessage(absl::string_view message, bool compressed) {
  if (!cancelled_) listener_->OnLoadReport(message);
  return Status();
}

void LoadReportWatch::OnClose(const Status& status, Metadata& trailing) {
  listener_->OnLoadReportWatchEnded(status, cancelled_);
}

}  // namespace h2rpc::internal
