// The route guide with C++20 coroutines (docs/coroutines.md): the server
// derives from the generated RouteGuide::CoroService, the client calls
// RouteGuide::CoroStub, one call of each kind. Handlers and the client
// coroutine run on h2rpc's event loop threads; GetFeature moves to a
// thread pool for its (pretend) blocking lookup and back. Built and run by
// `tools/bazel test //docs/examples:coro_route_guide_example`.
//
// With GCC 12.2, await into a variable and test that: a co_await inside an
// if or loop condition is miscompiled (docs/coroutines.md, "Compilers").
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "docs/examples/route_guide.h2rpc_coro.pb.h"
#include "rpc/channel.h"
#include "rpc/coro/client.h"
#include "rpc/coro/executor.h"
#include "rpc/coro/server.h"
#include "rpc/coro/task.h"
#include "rpc/server.h"

namespace {

using h2rpc::Status;
using h2rpc::coro::Task;
using routeguide::Feature;
using routeguide::Point;
using routeguide::Rectangle;
using routeguide::RouteGuide;
using routeguide::RouteNote;
using routeguide::RouteSummary;

Point MakePoint(int latitude, int longitude) {
  Point point;
  point.set_latitude(latitude);
  point.set_longitude(longitude);
  return point;
}

Feature MakeFeature(const char* name, int latitude, int longitude) {
  Feature feature;
  feature.set_name(name);
  *feature.mutable_location() = MakePoint(latitude, longitude);
  return feature;
}

bool Inside(const Point& p, const Rectangle& r) {
  return p.latitude() >= std::min(r.lo().latitude(), r.hi().latitude()) &&
         p.latitude() <= std::max(r.lo().latitude(), r.hi().latitude()) &&
         p.longitude() >= std::min(r.lo().longitude(), r.hi().longitude()) &&
         p.longitude() <= std::max(r.lo().longitude(), r.hi().longitude());
}

// --- The server: override the coroutines of the generated base class. ---
class RouteGuideImpl final : public RouteGuide::CoroService {
 public:
  explicit RouteGuideImpl(std::vector<Feature> features)
      : features_(std::move(features)) {}

  // Blocking work belongs off the event loop: to the pool and back.
  Task<Status> GetFeature(h2rpc::ServerContext* context, const Point* point,
                          Feature* feature) override {
    h2rpc::coro::Executor* loop = h2rpc::coro::CurrentLoop();
    co_await h2rpc::coro::ResumeOn(pool_);
    *feature->mutable_location() = *point;
    feature->set_name(NameAt(*point));  // a database lookup, say
    co_await h2rpc::coro::ResumeOn(*loop);
    co_return Status();
  }

  Task<Status> ListFeatures(
      h2rpc::ServerContext* context, const Rectangle* rectangle,
      h2rpc::coro::ServerWriter<Feature>* writer) override {
    for (const Feature& feature : features_) {
      if (!Inside(feature.location(), *rectangle)) continue;
      const bool written = co_await writer->Write(feature);
      if (!written) break;  // the client went away
    }
    co_return Status();
  }

  Task<Status> RecordRoute(h2rpc::ServerContext* context,
                           h2rpc::coro::ServerReader<Point>* reader,
                           RouteSummary* summary) override {
    Point point;
    while (true) {
      const bool read = co_await reader->Read(&point);
      if (!read) break;
      summary->set_point_count(summary->point_count() + 1);
      if (!NameAt(point).empty()) {
        summary->set_feature_count(summary->feature_count() + 1);
      }
    }
    co_return Status();
  }

  // Answers each note with the notes sent earlier at the same location.
  Task<Status> RouteChat(
      h2rpc::ServerContext* context,
      h2rpc::coro::ServerReaderWriter<RouteNote, RouteNote>* stream) override {
    RouteNote note;
    while (true) {
      const bool read = co_await stream->Read(&note);
      if (!read) break;
      std::vector<RouteNote> earlier;
      {
        std::lock_guard<std::mutex> lock(mu_);
        std::vector<RouteNote>& at =
            notes_[{note.location().latitude(), note.location().longitude()}];
        earlier = at;
        at.push_back(note);
      }
      for (const RouteNote& n : earlier) {
        const bool written = co_await stream->Write(n);
        if (!written) co_return Status();
      }
    }
    co_return Status();
  }

 private:
  std::string NameAt(const Point& point) const {
    for (const Feature& f : features_) {
      if (f.location().latitude() == point.latitude() &&
          f.location().longitude() == point.longitude()) {
        return f.name();
      }
    }
    return "";
  }

  const std::vector<Feature> features_;
  h2rpc::coro::ThreadPool pool_{2};
  // Several connections' loops may run RouteChat at once.
  std::mutex mu_;
  std::map<std::pair<int, int>, std::vector<RouteNote>> notes_;
};

// --- The client: one coroutine, each call awaited. ---
// Returns an empty string on success, else what went wrong.
Task<std::string> Visit(RouteGuide::CoroStub& stub,
                        const std::vector<Feature>& features) {
  // Unary.
  Feature feature;
  {
    h2rpc::ClientContext context;
    context.set_timeout(absl::Seconds(10));
    const Status status =
        co_await stub.GetFeature(&context, features[0].location(), &feature);
    if (!status.ok()) co_return "GetFeature: " + status.ToString();
    std::printf("GetFeature: '%s'\n", feature.name().c_str());
    if (feature.name() != features[0].name()) co_return "GetFeature's name";
  }

  // Server streaming: the features within a rectangle (New Jersey only).
  {
    h2rpc::coro::ServerStreamingCall<Rectangle, Feature> call;
    call.context().set_timeout(absl::Seconds(10));
    Rectangle rectangle;
    *rectangle.mutable_lo() = MakePoint(400000000, -750000000);
    *rectangle.mutable_hi() = MakePoint(410000000, -730000000);
    stub.ListFeatures(&call, rectangle);
    int count = 0;
    while (true) {
      const bool read = co_await call.Read(&feature);
      if (!read) break;
      std::printf("ListFeatures: '%s'\n", feature.name().c_str());
      ++count;
    }
    const Status status = co_await call.Finish();
    if (!status.ok()) co_return "ListFeatures: " + status.ToString();
    if (count != 2) co_return "ListFeatures' count";
  }

  // Client streaming: a route through every feature.
  {
    h2rpc::coro::ClientStreamingCall<Point, RouteSummary> call;
    call.context().set_timeout(absl::Seconds(10));
    stub.RecordRoute(&call);
    for (const Feature& f : features) {
      const bool written = co_await call.Write(f.location());
      if (!written) break;
    }
    const Status status = co_await call.Finish();  // half-closes first
    if (!status.ok()) co_return "RecordRoute: " + status.ToString();
    const RouteSummary& summary = call.response();
    std::printf("RecordRoute: %d points, %d features\n", summary.point_count(),
                summary.feature_count());
    if (summary.point_count() != 3 || summary.feature_count() != 3) {
      co_return "RecordRoute's summary";
    }
  }

  // Bidirectional streaming: three notes at one location, each answered
  // with the notes sent there before.
  {
    h2rpc::coro::BidiStreamingCall<RouteNote, RouteNote> call;
    call.context().set_timeout(absl::Seconds(10));
    stub.RouteChat(&call);
    const char* const messages[] = {"First message", "Second message",
                                    "Third message"};
    RouteNote note;
    for (const char* message : messages) {
      *note.mutable_location() = MakePoint(0, 1);
      note.set_message(message);
      const bool written = co_await call.Write(note);
      if (!written) break;
    }
    co_await call.WritesDone();
    int received = 0;
    while (true) {
      const bool read = co_await call.Read(&note);
      if (!read) break;
      std::printf("RouteChat: got '%s'\n", note.message().c_str());
      ++received;
    }
    const Status status = co_await call.Finish();
    if (!status.ok()) co_return "RouteChat: " + status.ToString();
    if (received != 0 + 1 + 2) co_return "RouteChat's notes";
  }
  co_return "";
}

}  // namespace

int main() {
  const std::vector<Feature> features = {
      MakeFeature("Patriots Path, Mendham, NJ 07945, USA", 407838351,
                  -746143763),
      MakeFeature("101 New Jersey 10, Whippany, NJ 07981, USA", 408122808,
                  -743999179),
      MakeFeature("U.S. 6, Shohola, PA 18458, USA", 413628156, -749015468),
  };

  // --- Serve: AddTo registers every method of the service. ---
  RouteGuideImpl service(features);
  int port = 0;
  Status status;
  h2rpc::Server::Builder builder;
  builder.AddListeningPort("127.0.0.1:0", &port);
  service.AddTo(builder);
  std::unique_ptr<h2rpc::Server> server = builder.BuildAndStart(&status);
  if (server == nullptr) {
    std::fprintf(stderr, "BuildAndStart: %s\n", status.ToString().c_str());
    return 1;
  }

  // --- Call: main() waits for the client coroutine with SyncWait. ---
  RouteGuide::CoroStub stub(
      h2rpc::CreateChannel("127.0.0.1:" + std::to_string(port)));
  const std::string failure = h2rpc::coro::SyncWait(Visit(stub, features));
  if (!failure.empty()) {
    std::fprintf(stderr, "failed: %s\n", failure.c_str());
    return 1;
  }
  return 0;
}
