// A route guide (as in gRPC's examples) on h2rpc's generated code: the
// server derives from RouteGuide::Service, the client calls RouteGuide::Stub,
// one call of each kind (unary, server streaming, client streaming, bidi),
// plus a callback unary call. Built and run by
// `tools/bazel test //docs/examples:route_guide_example`.
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "docs/examples/route_guide.h2rpc.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"

namespace {

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

// Great-circle distance in metres (haversine), points in E7 degrees.
double Distance(const Point& from, const Point& to) {
  constexpr double kRadiansPerE7 = M_PI / 180 / 1e7;
  constexpr double kEarthRadius = 6371000;
  const double lat1 = from.latitude() * kRadiansPerE7;
  const double lat2 = to.latitude() * kRadiansPerE7;
  const double dlat = lat2 - lat1;
  const double dlon = (to.longitude() - from.longitude()) * kRadiansPerE7;
  const double a =
      std::sin(dlat / 2) * std::sin(dlat / 2) +
      std::cos(lat1) * std::cos(lat2) * std::sin(dlon / 2) * std::sin(dlon / 2);
  return kEarthRadius * 2 * std::atan2(std::sqrt(a), std::sqrt(1 - a));
}

// --- The server: override the methods of the generated base class. ---
class RouteGuideImpl final : public RouteGuide::Service {
 public:
  explicit RouteGuideImpl(std::vector<Feature> features)
      : features_(std::move(features)) {}

  h2rpc::Status GetFeature(h2rpc::ServerContext* context, const Point* point,
                           Feature* feature) override {
    *feature->mutable_location() = *point;
    feature->set_name(NameAt(*point));
    return h2rpc::Status();
  }

  h2rpc::Status ListFeatures(h2rpc::ServerContext* context,
                             const Rectangle* rectangle,
                             h2rpc::ServerWriter<Feature>* writer) override {
    const Point& lo = rectangle->lo();
    const Point& hi = rectangle->hi();
    const int lo_lat = std::min(lo.latitude(), hi.latitude());
    const int hi_lat = std::max(lo.latitude(), hi.latitude());
    const int lo_lon = std::min(lo.longitude(), hi.longitude());
    const int hi_lon = std::max(lo.longitude(), hi.longitude());
    for (const Feature& f : features_) {
      const Point& p = f.location();
      if (p.latitude() >= lo_lat && p.latitude() <= hi_lat &&
          p.longitude() >= lo_lon && p.longitude() <= hi_lon) {
        if (!writer->Write(f)) break;  // the client went away
      }
    }
    return h2rpc::Status();
  }

  h2rpc::Status RecordRoute(h2rpc::ServerContext* context,
                            h2rpc::ServerReader<Point>* reader,
                            RouteSummary* summary) override {
    const absl::Time start = absl::Now();
    Point point;
    Point previous;
    double distance = 0;
    while (reader->Read(&point)) {
      if (summary->point_count() > 0) distance += Distance(previous, point);
      summary->set_point_count(summary->point_count() + 1);
      if (!NameAt(point).empty()) {
        summary->set_feature_count(summary->feature_count() + 1);
      }
      previous = point;
    }
    summary->set_distance(static_cast<int>(distance));
    summary->set_elapsed_time(
        static_cast<int>(absl::ToInt64Seconds(absl::Now() - start)));
    return h2rpc::Status();
  }

  // Answers each note with the notes sent earlier at the same location.
  h2rpc::Status RouteChat(
      h2rpc::ServerContext* context,
      h2rpc::ServerReaderWriter<RouteNote, RouteNote>* stream) override {
    RouteNote note;
    while (stream->Read(&note)) {
      std::vector<RouteNote> earlier;
      {
        std::lock_guard<std::mutex> lock(mu_);
        std::vector<RouteNote>& at =
            notes_[{note.location().latitude(), note.location().longitude()}];
        earlier = at;
        at.push_back(note);
      }
      for (const RouteNote& n : earlier) {
        if (!stream->Write(n)) return h2rpc::Status();
      }
    }
    return h2rpc::Status();
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
  std::mutex mu_;
  // By (latitude, longitude). Guarded by mu_.
  std::map<std::pair<int, int>, std::vector<RouteNote>> notes_;
};

int Fail(const char* what, const h2rpc::Status& status) {
  std::fprintf(stderr, "%s: %s\n", what, status.ToString().c_str());
  return 1;
}

int Unexpected(const char* what) {
  std::fprintf(stderr, "unexpected: %s\n", what);
  return 1;
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
  h2rpc::Status status;
  h2rpc::Server::Builder builder;
  builder.AddListeningPort("127.0.0.1:0", &port);
  service.AddTo(builder);
  std::unique_ptr<h2rpc::Server> server = builder.BuildAndStart(&status);
  if (server == nullptr) return Fail("BuildAndStart", status);

  // --- Call: a Stub over a Channel, one ClientContext per call. ---
  std::shared_ptr<h2rpc::Channel> channel =
      h2rpc::CreateChannel("127.0.0.1:" + std::to_string(port));
  RouteGuide::Stub stub(channel);

  // Unary, blocking.
  Feature feature;
  {
    h2rpc::ClientContext context;
    context.set_timeout(absl::Seconds(10));
    status =
        stub.GetFeature(&context, MakePoint(409146138, -746188906), &feature);
    if (!status.ok()) return Fail("GetFeature", status);
    std::printf("GetFeature: '%s' (no feature there)\n",
                feature.name().c_str());
    if (!feature.name().empty()) return Unexpected("a feature there");
  }

  // Unary, with a callback on the channel's loop thread.
  {
    h2rpc::ClientContext context;
    context.set_timeout(absl::Seconds(10));
    std::mutex mu;
    std::condition_variable done_cv;
    bool done = false;
    stub.AsyncGetFeature(&context, features[0].location(), &feature,
                         [&](const h2rpc::Status& s) {
                           std::lock_guard<std::mutex> lock(mu);
                           status = s;
                           done = true;
                           done_cv.notify_one();
                         });
    std::unique_lock<std::mutex> lock(mu);
    done_cv.wait(lock, [&] { return done; });
    if (!status.ok()) return Fail("AsyncGetFeature", status);
    std::printf("AsyncGetFeature: '%s'\n", feature.name().c_str());
    if (feature.name() != features[0].name()) return Unexpected("its name");
  }

  // Server streaming: the features within a rectangle.
  {
    h2rpc::ClientContext context;
    context.set_timeout(absl::Seconds(10));
    Rectangle rectangle;
    *rectangle.mutable_lo() = MakePoint(400000000, -750000000);
    // New Jersey only: the third feature is in Pennsylvania, further north.
    *rectangle.mutable_hi() = MakePoint(410000000, -730000000);
    std::unique_ptr<h2rpc::ClientReader<Feature>> reader =
        stub.ListFeatures(&context, rectangle);
    int count = 0;
    while (reader->Read(&feature)) {
      std::printf("ListFeatures: '%s'\n", feature.name().c_str());
      ++count;
    }
    status = reader->Finish();
    if (!status.ok()) return Fail("ListFeatures", status);
    if (count != 2) return Unexpected("the count");
  }

  // Client streaming: a route through every feature.
  {
    h2rpc::ClientContext context;
    context.set_timeout(absl::Seconds(10));
    RouteSummary summary;
    std::unique_ptr<h2rpc::ClientWriter<Point>> writer =
        stub.RecordRoute(&context, &summary);
    for (const Feature& f : features) {
      if (!writer->Write(f.location())) break;
    }
    status = writer->Finish();  // half-closes, then waits for the summary
    if (!status.ok()) return Fail("RecordRoute", status);
    std::printf("RecordRoute: %d points, %d features, %d m\n",
                summary.point_count(), summary.feature_count(),
                summary.distance());
    if (summary.point_count() != 3 || summary.feature_count() != 3) {
      return Unexpected("the summary");
    }
  }

  // Bidirectional streaming: notes at two locations, each answered with the
  // notes sent there before.
  {
    h2rpc::ClientContext context;
    context.set_timeout(absl::Seconds(10));
    std::unique_ptr<h2rpc::ClientReaderWriter<RouteNote, RouteNote>> stream =
        stub.RouteChat(&context);
    const char* messages[] = {"First message", "Second message",
                              "Third message"};
    RouteNote note;
    for (const char* message : messages) {
      *note.mutable_location() = MakePoint(0, 1);
      note.set_message(message);
      if (!stream->Write(note)) break;
    }
    stream->WritesDone();
    int received = 0;
    while (stream->Read(&note)) {
      std::printf("RouteChat: got '%s'\n", note.message().c_str());
      ++received;
    }
    status = stream->Finish();
    if (!status.ok()) return Fail("RouteChat", status);
    if (received != 0 + 1 + 2) return Unexpected("the notes received");
  }
  return 0;
}
