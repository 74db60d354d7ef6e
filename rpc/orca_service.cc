#include "rpc/orca_service.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "proto/xds/data/orca/v3/orca_load_report.pb.h"
#include "proto/xds/service/orca/v3/orca.pb.h"
#include "rpc/internal/common/misuse.h"
#include "rpc/internal/common/stream_quota.h"
#include "rpc/server_context.h"
#include "rpc/server_stream.h"
#include "rpc/status.h"

namespace h2rpc {

namespace {

using xds::data::orca::v3::OrcaLoadReport;
using xds::service::orca::v3::OrcaLoadReportRequest;

constexpr char kStreamCoreMetricsPath[] =
    "/xds.service.orca.v3.OpenRcaService/StreamCoreMetrics";
constexpr absl::Duration kMaxReportInterval = absl::Hours(24);

// The interval `request` asks for, within [minimum, kMaxReportInterval].
absl::Duration IntervalOf(const OrcaLoadReportRequest& request,
                          absl::Duration minimum) {
  const auto& asked = request.report_interval();
  const absl::Duration interval =
      absl::Seconds(std::clamp<int64_t>(asked.seconds(), 0, 86400)) +
      absl::Nanoseconds(std::clamp<int32_t>(asked.nanos(), 0, 999999999));
  return std::min(std::max(interval, minimum), kMaxReportInterval);
}

}  // namespace

// One StreamCoreMetrics call: a server-streaming reactor on the call's loop
// thread. Its state is guarded by the service's mutex, which every event
// and the reporting thread take; the reactor's StartWrite and Finish only
// post tasks to the loop, so calling them with the mutex held never
// re-enters it. While not finished, it is in the service's schedule once.
class OrcaService::Stream final : public ServerWriteReactor<OrcaLoadReport> {
 public:
  // Loop thread (the call's factory): sends the first report, or finishes
  // at once (server shutting down, too many streams).
  Stream(OrcaService* service, const OrcaLoadReportRequest& request,
         uint64_t connection_id)
      : service_(service),
        connection_id_(connection_id),
        interval_(IntervalOf(request, service->options_.min_report_interval)) {
    MutexLock lock(&service_->mu_);
    h2rpc::Status refused = service_->server_shut_down_
                                ? h2rpc::Status(StatusCode::kUnavailable,
                                                "the server is shutting down")
                                : service_->streams_->Acquire(connection_id_);
    if (!refused.ok()) {
      finished_ = true;
      Finish(refused);
      return;
    }
    registered_ = true;
    Report(Clock::now());
  }

  // The stream's report is due: sends the figures unless the previous
  // report is still being written, and schedules the next.
  void Report(Clock::time_point now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(service_->mu_) {
    if (!write_in_flight_) {
      // The service's own serialization: it parses.
      report_.ParseFromString(service_->metrics_->SerializedReport());
      write_in_flight_ = true;
      StartWrite(&report_);
    }
    due_ = now + absl::ToChronoNanoseconds(interval_);
    service_->ScheduleStream(this, due_);
  }

  // Finishes the call with `status` unless it already was.
  void End(const h2rpc::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(service_->mu_) {
    if (finished_) return;
    finished_ = true;
    service_->schedule_.erase({due_, this});
    Finish(status);
  }

 private:
  void OnWriteDone(bool ok) override {
    MutexLock lock(&service_->mu_);
    write_in_flight_ = false;
    if (!ok) {
      End(h2rpc::Status(StatusCode::kCancelled, "the stream's call is over"));
    }
  }

  void OnCancel() override {
    MutexLock lock(&service_->mu_);
    End(h2rpc::Status(StatusCode::kCancelled, "load report stream cancelled"));
  }

  void OnDone() override {
    {
      MutexLock lock(&service_->mu_);
      if (!finished_) {
        finished_ = true;
        service_->schedule_.erase({due_, this});
      }
      if (registered_) service_->streams_->Release(connection_id_);
    }
    delete this;
  }

  OrcaService* const service_;
  const uint64_t connection_id_;  // ServerContext::connection_id()
  const absl::Duration interval_;
  bool registered_ ABSL_GUARDED_BY(service_->mu_) = false;
  bool write_in_flight_ ABSL_GUARDED_BY(service_->mu_) = false;
  bool finished_ ABSL_GUARDED_BY(service_->mu_) = false;
  // Its entry in the schedule (while not finished).
  Clock::time_point due_ ABSL_GUARDED_BY(service_->mu_);
  // The report being written: changed only while no write is in flight.
  OrcaLoadReport report_ ABSL_GUARDED_BY(service_->mu_);
};

// A stream registers only with the service it was made for, so its
// service_->mu_ is this mu_, which the caller holds; the analysis cannot
// see that the two are the same.
void OrcaService::ReportOn(Stream* stream, Clock::time_point now)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  stream->Report(now);
}

void OrcaService::EndStream(Stream* stream) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  stream->End(
      h2rpc::Status(StatusCode::kUnavailable, "the server is shutting down"));
}

OrcaService::OrcaService(const OrcaServerMetrics* metrics,
                         OrcaServiceOptions options)
    : metrics_(metrics),
      options_(options),
      streams_(std::make_unique<internal::StreamQuota>(
          options.max_streams, options.max_streams_per_connection,
          "load report streams", "OrcaServiceOptions::max_streams")) {}

OrcaService::~OrcaService() {
  std::thread thread;
  {
    MutexLock lock(&mu_);
    if (streams_->open() != 0) {
      internal::ReportMisuse(absl::StrCat(
          "OrcaService destroyed with ", streams_->open(),
          " streams open; it must outlive the server it is registered on"));
    }
    stopping_ = true;
    thread = std::move(thread_);
  }
  wake_.SignalAll();
  if (thread.joinable()) thread.join();
}

Server::Builder& OrcaService::AddTo(Server::Builder& builder) {
  builder
      .RegisterCallbackServerStreaming<OrcaLoadReportRequest, OrcaLoadReport>(
          kStreamCoreMetricsPath,
          [this](ServerContext* context, const OrcaLoadReportRequest* request)
              -> ServerWriteReactor<OrcaLoadReport>* {
            return new Stream(this, *request, context->connection_id());
          });
  builder.AddShutdownCallback([this] { OnServerShutdown(); });
  return builder;
}

void OrcaService::ScheduleStream(Stream* stream, Clock::time_point due) {
  const bool first = schedule_.emplace(due, stream).first == schedule_.begin();
  if (!thread_.joinable()) {
    thread_ = std::thread([this] { Run(); });
  } else if (first) {
    wake_.Signal();
  }
}

void OrcaService::Run() {
  MutexLock lock(&mu_);
  while (!stopping_) {
    if (schedule_.empty()) {
      wake_.Wait(&mu_);
      continue;
    }
    const Clock::time_point now = Clock::now();
    const auto [due, stream] = *schedule_.begin();
    if (due > now) {
      wake_.WaitWithTimeout(&mu_, absl::FromChrono(due - now));
      continue;
    }
    schedule_.erase(schedule_.begin());
    ReportOn(stream, now);
  }
}

void OrcaService::OnServerShutdown() {
  MutexLock lock(&mu_);
  server_shut_down_ = true;
  std::vector<Stream*> open;
  for (const auto& [due, stream] : schedule_) open.push_back(stream);
  for (Stream* stream : open) EndStream(stream);
}

size_t OrcaService::open_streams() const {
  MutexLock lock(&mu_);
  return streams_->open();
}

}  // namespace h2rpc
