// In-process unary benchmark: an h2rpc server on one core and an h2rpc client
// on the other, one connection, N calls in flight (closed loop). Prints QPS,
// latency percentiles and heap allocations per RPC on each side.
//
//   tools/bazel run -c opt //benchmark:unary_benchmark -- \
//       --max_concurrent_calls=1,120 --benchtime=5s
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "benchmark/latency_histogram.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "test/util/allocation_counter.h"
#include "test/util/notification.h"

ABSL_FLAG(std::string, max_concurrent_calls, "1,120",
          "Comma-separated numbers of calls in flight; one run each.");
ABSL_FLAG(int, req_size_bytes, 1024, "Request payload size, bytes.");
ABSL_FLAG(int, resp_size_bytes, 1024, "Response payload size, bytes.");
ABSL_FLAG(absl::Duration, benchtime, absl::Seconds(5),
          "Measured time per run.");
ABSL_FLAG(absl::Duration, warmup, absl::Seconds(1), "Unmeasured time first.");
ABSL_FLAG(int, server_cpu, 0, "CPU for the server loop; -1: not pinned.");
ABSL_FLAG(int, client_cpu, 1, "CPU for the client loop; -1: not pinned.");

namespace h2rpc::benchmark {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using testing::AllocationsByRole;
using testing::ThreadRole;

constexpr char kMethod[] = "/grpc.testing.BenchmarkService/UnaryCall";

// Runs `concurrency` closed-loop call slots on the channel's loop thread:
// each completion records its latency and starts the slot's next call.
class ClosedLoop {
 public:
  ClosedLoop(Channel* channel, int concurrency, int req_size, int resp_size)
      : channel_(channel), slots_(concurrency) {
    request_.mutable_payload()->set_body(std::string(req_size, 'q'));
    request_.set_response_size(resp_size);
  }

  void Start() {
    for (Slot& slot : slots_) Issue(&slot);
  }
  // Stops issuing and waits for the calls in flight.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      if (in_flight_ == 0) drained_.Notify();
    }
    drained_.WaitForNotification();
  }
  // Called on the loop thread only, between runs: see Reset().
  void ResetStats() {
    std::lock_guard<std::mutex> lock(mu_);
    histogram_.Clear();
    errors_ = 0;
  }
  LatencyHistogram Histogram() {
    std::lock_guard<std::mutex> lock(mu_);
    return histogram_;
  }
  int64_t errors() {
    std::lock_guard<std::mutex> lock(mu_);
    return errors_;
  }

 private:
  struct Slot {
    std::optional<ClientContext> context;
    SimpleResponse response;
    absl::Time start;
  };

  void Issue(Slot* slot) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) {
        if (in_flight_ == 0) drained_.Notify();
        return;
      }
      ++in_flight_;
    }
    slot->context.emplace();
    slot->start = absl::Now();
    channel_->AsyncUnaryCall(&*slot->context, kMethod, request_,
                             &slot->response,
                             [this, slot](const Status& s) { Done(slot, s); });
  }

  void Done(Slot* slot, const Status& status) {
    const absl::Duration latency = absl::Now() - slot->start;
    {
      std::lock_guard<std::mutex> lock(mu_);
      --in_flight_;
      if (status.ok()) {
        histogram_.Record(latency);
      } else {
        ++errors_;
        if (errors_ == 1) {
          std::fprintf(stderr, "call failed: %s\n", status.ToString().c_str());
        }
      }
    }
    Issue(slot);
  }

  Channel* const channel_;
  SimpleRequest request_;
  std::vector<Slot> slots_;
  std::mutex mu_;  // uncontended: completions all run on the loop thread
  LatencyHistogram histogram_;
  int64_t errors_ = 0;
  int in_flight_ = 0;
  bool stopping_ = false;
  testing::Notification drained_;
};

int Run() {
  ServerOptions server_options;
  server_options.num_loops = 1;
  if (absl::GetFlag(FLAGS_server_cpu) >= 0) {
    server_options.loop_cpus = {absl::GetFlag(FLAGS_server_cpu)};
  }
  int port = 0;
  Status status;
  std::unique_ptr<Server> server =
      Server::Builder()
          .SetOptions(server_options)
          .AddListeningPort("127.0.0.1:0", &port)
          .RegisterCallbackUnary<SimpleRequest, SimpleResponse>(
              kMethod,
              [](ServerContext*, const SimpleRequest* request,
                 SimpleResponse* response, UnaryDone done) {
                response->mutable_payload()->mutable_body()->resize(
                    request->response_size());
                done(Status());
              })
          .BuildAndStart(&status);
  if (server == nullptr) {
    std::fprintf(stderr, "server: %s\n", status.ToString().c_str());
    return 1;
  }
  ChannelOptions channel_options;
  channel_options.loop_cpu = absl::GetFlag(FLAGS_client_cpu);
  Channel channel(absl::StrFormat("127.0.0.1:%d", port), channel_options);

  std::printf(
      "h2rpc unary benchmark: req %d B, resp %d B, one connection, "
      "server loop on cpu %d, client loop on cpu %d\n",
      absl::GetFlag(FLAGS_req_size_bytes), absl::GetFlag(FLAGS_resp_size_bytes),
      absl::GetFlag(FLAGS_server_cpu), absl::GetFlag(FLAGS_client_cpu));
  std::printf("%-11s %10s %10s %10s %10s %10s %14s %14s %8s\n", "concurrency",
              "QPS", "p50", "p90", "p99", "avg", "client allocs",
              "server allocs", "errors");
  for (absl::string_view c :
       absl::StrSplit(absl::GetFlag(FLAGS_max_concurrent_calls), ',')) {
    int concurrency = 0;
    if (!absl::SimpleAtoi(c, &concurrency) || concurrency <= 0) {
      std::fprintf(stderr, "bad --max_concurrent_calls entry '%s'\n",
                   std::string(c).c_str());
      return 2;
    }
    ClosedLoop loop(&channel, concurrency, absl::GetFlag(FLAGS_req_size_bytes),
                    absl::GetFlag(FLAGS_resp_size_bytes));
    loop.Start();
    absl::SleepFor(absl::GetFlag(FLAGS_warmup));
    loop.ResetStats();
    const auto client0 = AllocationsByRole(ThreadRole::kClient);
    const auto server0 = AllocationsByRole(ThreadRole::kServer);
    const absl::Time start = absl::Now();
    absl::SleepFor(absl::GetFlag(FLAGS_benchtime));
    const LatencyHistogram histogram = loop.Histogram();
    const absl::Duration elapsed = absl::Now() - start;
    const auto client1 = AllocationsByRole(ThreadRole::kClient);
    const auto server1 = AllocationsByRole(ThreadRole::kServer);
    loop.Stop();
    const double ops = static_cast<double>(histogram.count());
    auto us = [](absl::Duration d) {
      return absl::StrFormat("%.0fus", absl::ToDoubleMicroseconds(d));
    };
    absl::PrintF(
        "%-11d %10.0f %10s %10s %10s %10s %14.2f %14.2f %8d\n", concurrency,
        ops / absl::ToDoubleSeconds(elapsed), us(histogram.Percentile(0.5)),
        us(histogram.Percentile(0.9)), us(histogram.Percentile(0.99)),
        us(histogram.Mean()),
        ops > 0 ? (client1.allocations - client0.allocations) / ops : 0.0,
        ops > 0 ? (server1.allocations - server0.allocations) / ops : 0.0,
        loop.errors());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace h2rpc::benchmark

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return h2rpc::benchmark::Run();
}
