// OrcaService with an h2rpc client (the generated
// xds::service::orca::v3::OpenRcaService::Stub) over loopback TCP: the
// first report at once and the next ones at the interval (the client's, at
// least the minimum), the figures as they change, the limits, cancellation
// and the server's shutdown ending the streams.

#include "rpc/orca_service.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/xds/service/orca/v3/orca.h2rpc.pb.h"
#include "proto/xds/service/orca/v3/orca.pb.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/client_stream.h"
#include "rpc/orca.h"
#include "rpc/server.h"
#include "rpc/status.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::WaitFor;
using ::testing::HasSubstr;
using xds::data::orca::v3::OrcaLoadReport;
using xds::service::orca::v3::OpenRcaService;
using xds::service::orca::v3::OrcaLoadReportRequest;

// A StreamCoreMetrics call asking for a report every `interval`, recording
// each report it reads and when. The call's deadline, kHangTimeout, bounds
// a test that waits for a report that never comes.
class ReportRecorder final : public ClientReadReactor<OrcaLoadReport> {
 public:
  ReportRecorder(OpenRcaService::Stub& stub, absl::Duration interval)
      : start_(absl::Now()) {
    request_.mutable_report_interval()->set_seconds(
        absl::ToInt64Seconds(interval));
    request_.mutable_report_interval()->set_nanos(static_cast<int32_t>(
        absl::ToInt64Nanoseconds(interval % absl::Seconds(1))));
    context_.set_timeout(kHangTimeout);
    stub.AsyncStreamCoreMetrics(&context_, request_, this);
    StartRead(&report_);
    StartCall();
  }
  // Cancels the call if it is still open and waits for it to end.
  ~ReportRecorder() override {
    context_.TryCancel();
    MutexLock lock(&mu_);
    while (!done_) changed_.Wait(&mu_);
  }

  void Cancel() { context_.TryCancel(); }

  // Waits for the `count`th report, or the call's end; false after
  // kHangTimeout or if the call ended first.
  bool WaitForCount(size_t count) {
    MutexLock lock(&mu_);
    const absl::Time give_up = absl::Now() + kHangTimeout;
    while (reports_.size() < count && !done_) {
      const absl::Duration left = give_up - absl::Now();
      if (left <= absl::ZeroDuration()) return false;
      changed_.WaitWithTimeout(&mu_, left);
    }
    return reports_.size() >= count;
  }
  // Waits for the call to end and returns its status.
  Status WaitForDone() {
    MutexLock lock(&mu_);
    while (!done_) changed_.Wait(&mu_);
    return status_;
  }
  std::vector<OrcaLoadReport> reports() {
    MutexLock lock(&mu_);
    return reports_;
  }
  // How long after the call started the `index`th report (from 0) came.
  absl::Duration ArrivalOf(size_t index) {
    MutexLock lock(&mu_);
    return arrivals_.at(index) - start_;
  }

 private:
  void OnReadDone(bool ok) override {
    if (!ok) return;
    {
      MutexLock lock(&mu_);
      reports_.push_back(report_);
      arrivals_.push_back(absl::Now());
      changed_.SignalAll();
    }
    StartRead(&report_);
  }
  void OnDone(const Status& status) override {
    MutexLock lock(&mu_);
    done_ = true;
    status_ = status;
    changed_.SignalAll();
  }

  const absl::Time start_;
  ClientContext context_;
  OrcaLoadReportRequest request_;
  OrcaLoadReport report_;  // the loop thread's, between reads
  Mutex mu_;
  CondVar changed_;
  std::vector<OrcaLoadReport> reports_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Time> arrivals_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  Status status_ ABSL_GUARDED_BY(mu_);
};

class OrcaServiceTest : public ::testing::Test {
 protected:
  void Start(OrcaServiceOptions options) {
    orca_ = std::make_unique<OrcaService>(&metrics_, options);
    int port = 0;
    Status status;
    Server::Builder builder;
    builder.AddListeningPort("127.0.0.1:0", &port);
    orca_->AddTo(builder);
    server_ = builder.BuildAndStart(&status);
    ASSERT_NE(server_, nullptr) << status.ToString();
    server_address_ = "127.0.0.1:" + std::to_string(port);
    stub_ =
        std::make_unique<OpenRcaService::Stub>(CreateChannel(server_address_));
  }

  // Declared first, destroyed last: outlive the server.
  OrcaServerMetrics metrics_;
  std::unique_ptr<OrcaService> orca_;
  std::unique_ptr<Server> server_;
  std::string server_address_;
  std::unique_ptr<OpenRcaService::Stub> stub_;
};

TEST_F(OrcaServiceTest, ReportsTheFiguresAtOnceThenAsTheyChange) {
  metrics_.SetCpuUtilization(0.5);
  metrics_.SetMemoryUtilization(0.25);
  metrics_.SetApplicationUtilization(0.75);
  metrics_.SetQps(120);
  metrics_.SetEps(3);
  metrics_.SetNamedMetric("shards", 7);
  OrcaServiceOptions options;
  options.min_report_interval = absl::Milliseconds(20);
  Start(options);
  ReportRecorder recorder(*stub_, absl::Milliseconds(20));
  ASSERT_TRUE(recorder.WaitForCount(1));
  const OrcaLoadReport first = recorder.reports()[0];
  EXPECT_EQ(first.cpu_utilization(), 0.5);
  EXPECT_EQ(first.mem_utilization(), 0.25);
  EXPECT_EQ(first.application_utilization(), 0.75);
  EXPECT_EQ(first.rps_fractional(), 120);
  EXPECT_EQ(first.eps(), 3);
  EXPECT_EQ(first.named_metrics().at("shards"), 7);
  EXPECT_EQ(orca_->open_streams(), 1u);

  metrics_.SetCpuUtilization(0.9);
  size_t count = 1;
  EXPECT_TRUE(WaitFor([&] {
    if (!recorder.WaitForCount(++count)) return false;
    return recorder.reports().back().cpu_utilization() == 0.9;
  }));
}

// A client asking for reports more often than the minimum gets them at the
// minimum: the third report, due two intervals after the first, cannot
// come sooner.
TEST_F(OrcaServiceTest, TheMinimumIntervalBoundsWhatAClientAsksFor) {
  OrcaServiceOptions options;
  options.min_report_interval = absl::Milliseconds(200);
  Start(options);
  ReportRecorder recorder(*stub_, absl::Milliseconds(1));
  ASSERT_TRUE(recorder.WaitForCount(3));
  EXPECT_GE(recorder.ArrivalOf(2), absl::Milliseconds(400));
}

// A client asking for less often than the minimum gets its own interval.
TEST_F(OrcaServiceTest, AClientsLongerIntervalIsKept) {
  OrcaServiceOptions options;
  options.min_report_interval = absl::Milliseconds(1);
  Start(options);
  ReportRecorder slow(*stub_, absl::Milliseconds(150));
  ReportRecorder fast(*stub_, absl::Milliseconds(5));
  ASSERT_TRUE(slow.WaitForCount(3));
  EXPECT_GE(slow.ArrivalOf(2), absl::Milliseconds(300));
  // The fast stream, on the same thread, was not held back by the slow
  // one: it had its three reports before the slow one's third.
  ASSERT_TRUE(fast.WaitForCount(3));
  EXPECT_LT(fast.ArrivalOf(2), slow.ArrivalOf(2));
}

TEST_F(OrcaServiceTest, StreamsOverTheLimitsAreRefused) {
  OrcaServiceOptions options;
  options.max_streams = 3;
  options.max_streams_per_connection = 2;
  Start(options);
  ReportRecorder first(*stub_, absl::Seconds(1));
  ReportRecorder second(*stub_, absl::Seconds(1));
  ASSERT_TRUE(first.WaitForCount(1));
  ASSERT_TRUE(second.WaitForCount(1));
  {
    ReportRecorder third(*stub_, absl::Seconds(1));
    const Status status = third.WaitForDone();
    EXPECT_EQ(status.code(), StatusCode::kResourceExhausted)
        << status.ToString();
    EXPECT_THAT(status.message(),
                HasSubstr("2 load report streams are open on this "
                          "connection, the limit (OrcaServiceOptions::max_"
                          "streams_per_connection)"));
    EXPECT_TRUE(third.reports().empty());
  }
  OpenRcaService::Stub other(CreateChannel(server_address_));
  ReportRecorder polite(other, absl::Seconds(1));
  ASSERT_TRUE(polite.WaitForCount(1));
  {
    ReportRecorder fourth(other, absl::Seconds(1));
    const Status status = fourth.WaitForDone();
    EXPECT_EQ(status.code(), StatusCode::kResourceExhausted)
        << status.ToString();
    EXPECT_THAT(status.message(),
                HasSubstr("3 load report streams are open, the limit "
                          "(OrcaServiceOptions::max_streams)"));
  }
  EXPECT_EQ(orca_->open_streams(), 3u);

  // A cancelled stream is released.
  first.Cancel();
  EXPECT_EQ(first.WaitForDone().code(), StatusCode::kCancelled);
  ASSERT_TRUE(WaitFor([&] { return orca_->open_streams() == 2; }));
  ReportRecorder again(*stub_, absl::Seconds(1));
  ASSERT_TRUE(again.WaitForCount(1));
}

TEST_F(OrcaServiceTest, ServerShutdownEndsTheStreams) {
  OrcaServiceOptions options;
  options.min_report_interval = absl::Milliseconds(10);
  Start(options);
  ReportRecorder recorder(*stub_, absl::Milliseconds(10));
  ASSERT_TRUE(recorder.WaitForCount(2));
  // Streams never end by themselves, so had the service not ended them,
  // Shutdown would cancel them at its deadline (kHangTimeout) and they
  // would end with another status.
  server_->Shutdown(absl::Now() + kHangTimeout);
  const Status status = recorder.WaitForDone();
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr("shutting down"));
  EXPECT_EQ(orca_->open_streams(), 0u);
}

}  // namespace
}  // namespace h2rpc
