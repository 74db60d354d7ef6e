// Call lifetimes under stress: client threads start calls of all four kinds
// (unary, client, server and bidi streaming; synchronous and callback
// handlers), and end them every way there is: they finish, the client cancels
// (ClientContext::TryCancel from another thread), the server cancels
// (ServerContext::TryCancel from another thread, racing the handler's work or
// its reactor's Finish), the deadline passes, or the server shuts down with a
// deadline while they run.
//
// Checked: no sanitizer report (run it under --config=tsan and
// --config=asan); every call ends with a status its story allows, and a call
// nothing cancelled that ended before the shutdown began succeeded (a cancel
// reaching the wrong call would fail one); Shutdown returns; no call is left
// counted (Server::live_calls() == 0).
#include <atomic>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::WaitFor;

// Sizes: small enough for ThreadSanitizer on 2 cores (well under 30 s).
constexpr int kClientThreads = 6;
constexpr int kCallsPerThread = 600;
// Shutdown begins once this many calls have ended.
constexpr int kCallsBeforeShutdown = kClientThreads * kCallsPerThread * 4 / 5;
constexpr absl::Duration kShutdownDeadline = absl::Milliseconds(100);
// Only catches hangs.
constexpr absl::Duration kHangTimeout = absl::Seconds(60);

constexpr char kUnarySync[] = "/h2rpc.stress.Calls/UnarySync";
constexpr char kUnaryCallback[] = "/h2rpc.stress.Calls/UnaryCallback";
constexpr char kClientStreaming[] = "/h2rpc.stress.Calls/ClientStreaming";
constexpr char kServerStreaming[] = "/h2rpc.stress.Calls/ServerStreaming";
constexpr char kBidiSync[] = "/h2rpc.stress.Calls/BidiSync";
constexpr char kBidiReactor[] = "/h2rpc.stress.Calls/BidiReactor";
constexpr const char* kMethods[] = {kUnarySync,       kUnaryCallback,
                                    kClientStreaming, kServerStreaming,
                                    kBidiSync,        kBidiReactor};
constexpr int kMethodCount = sizeof(kMethods) / sizeof(kMethods[0]);

// What the handler does, named by the (first) request's payload.
constexpr char kEcho[] = "echo";
// Cancels its own call from another thread while it works.
constexpr char kServerCancel[] = "server-cancel";
// Works until the call is cancelled (by the client, the deadline or the
// shutdown), polling IsCancelled().
constexpr char kWaitForCancel[] = "wait-cancel";
// kWaitForCancel, counted in stuck_handlers when the handler starts waiting:
// the calls that only the shutdown's deadline ends.
constexpr char kStuck[] = "stuck";
std::atomic<int> stuck_handlers{0};
constexpr int kMessages = 3;  // per streaming call, each way

// Threads the handlers start, joined once the server has shut down.
class ThreadBin {
 public:
  template <class Fn>
  void Start(Fn fn) {
    MutexLock lock(&mu_);
    threads_.emplace_back(std::move(fn));
  }
  void JoinAll() {
    std::vector<std::thread> threads;
    {
      MutexLock lock(&mu_);
      threads.swap(threads_);
    }
    for (std::thread& thread : threads) thread.join();
  }

 private:
  Mutex mu_;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

// A server-side cancel from a thread of its own, racing whatever the handler
// does meanwhile; Join() before the context may go.
class ServerCanceller {
 public:
  explicit ServerCanceller(ServerContext* context)
      : thread_([context] { context->TryCancel(); }) {}
  ~ServerCanceller() { Join(); }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::thread thread_;
};

bool Waits(const std::string& action) {
  return action == kWaitForCancel || action == kStuck;
}

void WaitForCancel(ServerContext* context, const std::string& action) {
  if (action == kStuck) stuck_handlers.fetch_add(1);
  WaitFor([context] { return context->IsCancelled(); }, kHangTimeout);
}

Status UnarySync(ServerContext* context, const SimpleRequest& request,
                 SimpleResponse* response) {
  const std::string& action = request.payload().body();
  response->mutable_payload()->set_body(action);
  if (action == kServerCancel) {
    ServerCanceller canceller(context);
    response->mutable_payload()->mutable_body()->append(1000, 'x');
    return Status();
  }
  if (Waits(action)) {
    WaitForCancel(context, action);
    return Status(StatusCode::kCancelled, "saw the cancel");
  }
  return Status();
}

void UnaryCallback(ThreadBin* bin, ServerContext* context,
                   const SimpleRequest* request, SimpleResponse* response,
                   UnaryDone done) {
  const std::string& action = request->payload().body();
  response->mutable_payload()->set_body(action);
  if (action == kEcho) {
    // Every other call completes from another thread.
    if (request->response_size() % 2 == 0) {
      done(Status());
    } else {
      bin->Start([done = std::move(done)]() mutable { done(Status()); });
    }
    return;
  }
  bin->Start([context, action, done = std::move(done)]() mutable {
    if (action == kServerCancel) {
      context->TryCancel();
      done(Status());
      return;
    }
    WaitForCancel(context, action);
    done(Status(StatusCode::kCancelled, "saw the cancel"));
  });
}

Status ClientStreaming(ServerContext* context,
                       ServerReader<SimpleRequest>* reader,
                       SimpleResponse* response) {
  SimpleRequest request;
  if (!reader->Read(&request)) return Status();
  const std::string action = request.payload().body();
  std::unique_ptr<ServerCanceller> canceller;
  if (action == kServerCancel) {
    canceller = std::make_unique<ServerCanceller>(context);
  }
  int count = 1;
  while (reader->Read(&request)) ++count;
  if (Waits(action)) WaitForCancel(context, action);
  response->mutable_payload()->set_body(absl::StrCat(count));
  return Status();
}

Status ServerStreaming(ServerContext* context, const SimpleRequest& request,
                       ServerWriter<SimpleResponse>* writer) {
  const std::string& action = request.payload().body();
  std::unique_ptr<ServerCanceller> canceller;
  if (action == kServerCancel) {
    canceller = std::make_unique<ServerCanceller>(context);
  }
  SimpleResponse response;
  response.mutable_payload()->set_body(action);
  for (int i = 0; i < kMessages; ++i) {
    if (!writer->Write(response)) return Status();
  }
  if (Waits(action)) WaitForCancel(context, action);
  return Status();
}

Status BidiSync(ServerContext* context,
                ServerReaderWriter<SimpleResponse, SimpleRequest>* stream) {
  SimpleRequest request;
  SimpleResponse response;
  std::unique_ptr<ServerCanceller> canceller;
  bool first = true;
  while (stream->Read(&request)) {
    if (first && request.payload().body() == kServerCancel) {
      canceller = std::make_unique<ServerCanceller>(context);
    }
    if (first && Waits(request.payload().body())) {
      WaitForCancel(context, request.payload().body());
      return Status();
    }
    first = false;
    response.mutable_payload()->set_body(request.payload().body());
    if (!stream->Write(response)) break;
  }
  return Status();
}

// Bidi echo on the loop. Its server-side cancel comes from a thread of its
// own racing the reactor's events and its Finish; OnDone joins it (the
// context is valid until OnDone).
class BidiReactor final
    : public ServerBidiReactor<SimpleRequest, SimpleResponse> {
 public:
  explicit BidiReactor(ServerContext* context) : context_(context) {
    StartRead(&request_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      FinishOnce();
      return;
    }
    if (first_) {
      first_ = false;
      action_ = request_.payload().body();
      if (action_ == kServerCancel) {
        canceller_ = std::make_unique<ServerCanceller>(context_);
      }
    }
    if (Waits(action_)) {  // until OnCancel
      if (action_ == kStuck) stuck_handlers.fetch_add(1);
      return;
    }
    response_.mutable_payload()->set_body(request_.payload().body());
    StartWrite(&response_);
  }
  void OnWriteDone(bool ok) override {
    if (ok) {
      StartRead(&request_);
    } else {
      FinishOnce();
    }
  }
  void OnCancel() override { FinishOnce(); }
  void OnDone() override {
    canceller_.reset();  // joins
    delete this;
  }

 private:
  void FinishOnce() {
    if (finished_) return;
    finished_ = true;
    Finish(Status());
  }

  ServerContext* const context_;
  SimpleRequest request_;
  SimpleResponse response_;
  std::string action_;
  bool first_ = true;
  bool finished_ = false;
  std::unique_ptr<ServerCanceller> canceller_;
};

// How the client ends a call.
enum class ClientEnd { kNormally, kCancels, kTimesOut };

// One call from the client's side; returns its status.
Status RunCall(Channel* channel, const char* method, const std::string& action,
               int tag, ClientContext* context) {
  SimpleRequest request;
  request.mutable_payload()->set_body(action);
  request.set_response_size(tag);
  SimpleResponse response;
  if (method == kUnarySync || method == kUnaryCallback) {
    return channel->UnaryCall(context, method, request, &response);
  }
  if (method == kClientStreaming) {
    auto writer =
        channel->ClientStreamingCall<SimpleRequest>(context, method, &response);
    for (int i = 0; i < kMessages; ++i) {
      if (!writer->Write(request)) break;
    }
    return writer->Finish();
  }
  if (method == kServerStreaming) {
    auto reader = channel->ServerStreamingCall<SimpleRequest, SimpleResponse>(
        context, method, request);
    while (reader->Read(&response)) {
    }
    return reader->Finish();
  }
  auto stream = channel->BidiStreamingCall<SimpleRequest, SimpleResponse>(
      context, method);
  for (int i = 0; i < kMessages; ++i) {
    if (!stream->Write(request) || !stream->Read(&response)) break;
  }
  stream->WritesDone();
  while (stream->Read(&response)) {
  }
  return stream->Finish();
}

bool Allowed(StatusCode code) {
  return code == StatusCode::kOk || code == StatusCode::kCancelled ||
         code == StatusCode::kDeadlineExceeded ||
         code == StatusCode::kUnavailable;
}

class CallLifetimeStressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.num_loops = 2;
    options.shutdown_grace_period = absl::Seconds(5);
    Status status;
    server_ =
        Server::Builder()
            .SetOptions(options)
            .AddListeningPort("127.0.0.1:0", &port_)
            .RegisterUnary<SimpleRequest, SimpleResponse>(kUnarySync, UnarySync)
            .RegisterCallbackUnary<SimpleRequest, SimpleResponse>(
                kUnaryCallback,
                [this](ServerContext* context, const SimpleRequest* request,
                       SimpleResponse* response, UnaryDone done) {
                  UnaryCallback(&bin_, context, request, response,
                                std::move(done));
                })
            .RegisterClientStreaming<SimpleRequest, SimpleResponse>(
                kClientStreaming, ClientStreaming)
            .RegisterServerStreaming<SimpleRequest, SimpleResponse>(
                kServerStreaming, ServerStreaming)
            .RegisterBidiStreaming<SimpleRequest, SimpleResponse>(kBidiSync,
                                                                  BidiSync)
            .RegisterCallbackBidiStreaming<SimpleRequest, SimpleResponse>(
                kBidiReactor,
                [](ServerContext* context) { return new BidiReactor(context); })
            .BuildAndStart(&status);
    ASSERT_TRUE(status.ok()) << status.ToString();
  }

  // A client thread: kCallsPerThread calls, each of a random method, action
  // and ending.
  void RunClient(int index) {
    std::shared_ptr<Channel> channel =
        CreateChannel("127.0.0.1:" + std::to_string(port_));
    std::mt19937 random(1000 + index);
    for (int i = 0; i < kCallsPerThread; ++i) {
      const char* method = kMethods[random() % kMethodCount];
      const ClientEnd end = static_cast<ClientEnd>(random() % 3);
      const char* action =
          end == ClientEnd::kNormally
              ? (random() % 4 == 0 ? kServerCancel : kEcho)
              : (random() % 2 == 0 ? kWaitForCancel : kServerCancel);
      ClientContext context;
      if (end == ClientEnd::kTimesOut) {
        context.set_timeout(absl::Milliseconds(1 + random() % 20));
      } else {
        context.set_timeout(kHangTimeout);
      }
      std::thread canceller;
      if (end == ClientEnd::kCancels) {
        const int spins = static_cast<int>(random() % 2000);
        canceller = std::thread([&context, spins] {
          for (int s = 0; s < spins; ++s) std::this_thread::yield();
          context.TryCancel();
        });
      }
      const Status status = RunCall(channel.get(), method, action, i, &context);
      if (canceller.joinable()) canceller.join();
      const bool before_shutdown = !shutdown_called_.load();
      EXPECT_TRUE(Allowed(status.code()))
          << method << " " << action << ": " << status.ToString();
      // Nothing cancelled this call: only a stray cancel could fail it.
      if (end == ClientEnd::kNormally && action == kEcho && before_shutdown) {
        EXPECT_TRUE(status.ok())
            << method << " " << action << ": " << status.ToString();
        if (status.ok()) succeeded_.fetch_add(1);
      }
      ended_.fetch_add(1);
    }
  }

  int port_ = 0;
  std::unique_ptr<Server> server_;
  ThreadBin bin_;
  std::atomic<bool> shutdown_called_{false};
  std::atomic<int> ended_{0};
  std::atomic<int> succeeded_{0};
};

TEST_F(CallLifetimeStressTest, CallsEndEveryWayWhileTheServerShutsDown) {
  std::vector<std::thread> clients;
  for (int i = 0; i < kClientThreads; ++i) {
    clients.emplace_back([this, i] { RunClient(i); });
  }
  ASSERT_TRUE(WaitFor([this] { return ended_.load() >= kCallsBeforeShutdown; },
                      kHangTimeout))
      << ended_.load() << " calls ended";

  // Calls of every kind that only the shutdown's deadline will end.
  std::shared_ptr<Channel> channel =
      CreateChannel("127.0.0.1:" + std::to_string(port_));
  std::vector<std::thread> stuck;
  std::vector<Status> stuck_status(kMethodCount);
  for (int m = 0; m < kMethodCount; ++m) {
    stuck.emplace_back([&, m] {
      ClientContext context;
      context.set_timeout(kHangTimeout);
      stuck_status[m] =
          RunCall(channel.get(), kMethods[m], kStuck, m, &context);
    });
  }
  // Every one of them waits in its handler.
  ASSERT_TRUE(WaitFor([&] { return stuck_handlers.load() == kMethodCount; },
                      kHangTimeout))
      << stuck_handlers.load();

  shutdown_called_.store(true);
  const absl::Time started = absl::Now();
  server_->Shutdown(absl::Now() + kShutdownDeadline);
  std::printf("Shutdown took %s\n",
              absl::FormatDuration(absl::Now() - started).c_str());
  EXPECT_EQ(server_->live_calls(), 0);

  for (std::thread& thread : stuck) thread.join();
  for (int m = 0; m < kMethodCount; ++m) {
    EXPECT_FALSE(stuck_status[m].ok()) << kMethods[m];
    EXPECT_TRUE(Allowed(stuck_status[m].code()))
        << kMethods[m] << ": " << stuck_status[m].ToString();
  }
  for (std::thread& thread : clients) thread.join();
  bin_.JoinAll();
  EXPECT_EQ(ended_.load(), kClientThreads * kCallsPerThread);
  // Not vacuous: calls nothing cancelled did succeed.
  EXPECT_GT(succeeded_.load(), 0);
  std::printf("%d calls, %d succeeded untouched\n", ended_.load(),
              succeeded_.load());
}

}  // namespace
}  // namespace h2rpc
