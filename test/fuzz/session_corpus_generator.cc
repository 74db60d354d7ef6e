// Writes the seed corpora of server_session_fuzzer and client_session_fuzzer:
// real exchanges between an h2rpc client session and server session, run
// against each other in memory, one file per exchange and direction:
//
//   tools/bazel run //test/fuzz:session_corpus_generator --
//   $PWD/test/fuzz/corpus
//
// A file is the fuzzer's control byte followed by what one side sent (the
// client's bytes without the 24-byte connection preface, which the server
// fuzzer feeds itself). The server's corpus also gets what a browser
// sends, written frame by frame (h2rpc's client speaks neither): a
// gRPC-Web call from an origin and a CORS preflight.
#include <nghttp2/nghttp2.h>

#include <cstdio>
#include <deque>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "test/util/raw_frames.h"
#include "transport/compression/thread_codecs.h"
#include "transport/core/memory_quota.h"
#include "transport/http2/client_session.h"
#include "transport/http2/server_session.h"
#include "transport/http2/testing/session_harness.h"
#include "transport/io/fake_scheduler.h"

namespace h2rpc::transport::http2 {
namespace {

using testing::EchoDispatcher;
using testing::Framed;
using testing::MemoryWire;
using testing::RecordingCall;
using testing::RecordingClientListener;

constexpr size_t kPrefaceSize = 24;

struct Exchange {
  std::string client_bytes;
  std::string server_bytes;
};

// One exchange: `start` starts calls on the client session; `step` runs
// after each round trip (it may cancel a call or move the clock).
class Run {
 public:
  Run() {
    server_wire_.Start();
    client_wire_.Start();
  }
  ~Run() {
    if (!listener_.closed) client_.Close(Status(StatusCode::kCancelled, ""));
    if (!dispatcher_.closed) server_.Close(Status(StatusCode::kCancelled, ""));
  }

  RecordingCall& Call(absl::string_view path, absl::string_view body,
                      bool end = true) {
    RecordingCall& call = calls_.emplace_back();
    call.path = std::string(path);
    call.stream.description.method_path = call.path;
    call.stream.description.authority = "corpus-server";
    call.stream.outgoing().buffer() = std::string(body);
    if (end) call.stream.outgoing().set_end_of_data();
    return call;
  }
  void Start(RecordingCall& call) { client_.StartCall(&call.stream); }
  // Moves bytes both ways until neither side has more.
  void Pump() {
    for (int i = 0; i < 100; ++i) {
      const std::string c = client_wire_.TakeOutput();
      const std::string s = server_wire_.TakeOutput();
      if (c.empty() && s.empty()) return;
      exchange_.client_bytes += c;
      exchange_.server_bytes += s;
      server_wire_.Feed(c);
      client_wire_.Feed(s);
    }
  }
  io::FakeScheduler& scheduler() { return scheduler_; }
  const Exchange& exchange() const { return exchange_; }

 private:
  io::FakeScheduler scheduler_;
  ConnectionOptions options_;
  MemoryQuota quota_{64 << 20};
  EchoDispatcher dispatcher_;
  std::deque<RecordingCall> calls_;
  RecordingClientListener listener_;
  ServerSession server_{&scheduler_, "corpus-client", options_,
                        &quota_,     &dispatcher_,    &dispatcher_};
  ClientSession client_{&scheduler_, "corpus-server", options_, &listener_};
  MemoryWire server_wire_{&server_};
  MemoryWire client_wire_{&client_};
  Exchange exchange_;
};

std::string Messages(int count, size_t size) {
  std::string body;
  for (int i = 0; i < count; ++i) {
    body += Framed(std::string(size, static_cast<char>('a' + i % 26)));
  }
  return body;
}

std::vector<std::pair<std::string, Exchange>> Exchanges() {
  std::vector<std::pair<std::string, Exchange>> out;
  {
    Run run;
    run.Start(run.Call("/test.Echo/Echo", Framed("hello")));
    run.Pump();
    out.emplace_back("unary", run.exchange());
  }
  {
    Run run;
    run.Start(run.Call("/test.Echo/Echo", Messages(5, 3000)));
    run.Pump();
    out.emplace_back("streaming", run.exchange());
  }
  {
    Run run;
    RecordingCall& call = run.Call("/test.Echo/Echo", "");
    call.stream.description.send_encoding = "gzip";
    const Status status = compression::AppendCompressedFramedMessage(
        std::string(4000, 'z'), CompressionAlgorithm::kGzip, 1 << 20,
        &call.stream.outgoing().buffer());
    if (!status.ok()) std::fprintf(stderr, "%s\n", status.ToString().c_str());
    run.Start(call);
    run.Pump();
    out.emplace_back("compressed", run.exchange());
  }
  {
    Run run;
    RecordingCall& call =
        run.Call("/test.Echo/Hold", Framed("wait"), /*end=*/false);
    run.Start(call);
    run.Pump();
    call.stream.Cancel(Status(StatusCode::kCancelled, "client cancel"));
    run.Pump();
    out.emplace_back("cancelled", run.exchange());
  }
  {
    Run run;
    RecordingCall& call = run.Call("/test.Echo/Hold", Framed("slow"));
    call.stream.description.deadline =
        run.scheduler().Now() + absl::Milliseconds(50);
    run.Start(call);
    run.Pump();
    run.scheduler().AdvanceBy(absl::Milliseconds(50));
    run.Pump();
    out.emplace_back("deadline", run.exchange());
  }
  {
    // 128 KB each way: each side samples the path with a BDP PING, which
    // the other acknowledges.
    Run run;
    run.Start(run.Call("/test.Echo/Echo", Messages(8, 16000)));
    run.Pump();
    out.emplace_back("bdp_sample", run.exchange());
  }
  {
    Run run;
    run.Start(run.Call("/test.Echo/Missing", Framed("?")));
    run.Pump();
    out.emplace_back("unimplemented", run.exchange());
  }
  {
    Run run;
    for (int i = 0; i < 10; ++i) {
      run.Start(run.Call("/test.Echo/Echo", Framed(absl::StrCat("call ", i))));
    }
    run.Pump();
    out.emplace_back("concurrent", run.exchange());
  }
  return out;
}

// A browser's requests, as client bytes after the preface: SETTINGS, then
// `requests`' frames.
std::string BrowserBytes(const std::string& requests) {
  return ::h2rpc::testing::EncodeFrame(NGHTTP2_SETTINGS, 0, 0, "") + requests;
}

std::vector<std::pair<std::string, std::string>> BrowserSeeds() {
  using ::h2rpc::testing::EncodeFrame;
  using ::h2rpc::testing::EncodeLiteralHeaderBlock;
  const std::string call =
      EncodeFrame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1,
                  EncodeLiteralHeaderBlock(
                      {{":method", "POST"},
                       {":scheme", "https"},
                       {":path", "/test.Echo/Echo"},
                       {":authority", "127.0.0.1"},
                       {"content-type", "application/grpc-web+proto"},
                       {"x-grpc-web", "1"},
                       {"origin", "https://a.test"}})) +
      EncodeFrame(NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 1, Framed("hello"));
  const std::string preflight = EncodeFrame(
      NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 3,
      EncodeLiteralHeaderBlock(
          {{":method", "OPTIONS"},
           {":scheme", "https"},
           {":path", "/test.Echo/Echo"},
           {":authority", "127.0.0.1"},
           {"origin", "https://a.test"},
           {"access-control-request-method", "POST"},
           {"access-control-request-headers", "content-type,x-grpc-web"}}));
  // Connect's unary form (the fuzzer's JSON codec knows
  // grpc.testing.TestService).
  const auto connect_call = [](const char* content_type,
                               const std::string& body) {
    return EncodeFrame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1,
                       EncodeLiteralHeaderBlock(
                           {{":method", "POST"},
                            {":scheme", "https"},
                            {":path", "/grpc.testing.TestService/UnaryCall"},
                            {":authority", "127.0.0.1"},
                            {"content-type", content_type},
                            {"connect-protocol-version", "1"},
                            {"connect-timeout-ms", "250"},
                            {"origin", "https://a.test"}})) +
           EncodeFrame(NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 1, body);
  };
  const std::string text_call =
      EncodeFrame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1,
                  EncodeLiteralHeaderBlock(
                      {{":method", "POST"},
                       {":scheme", "https"},
                       {":path", "/test.Echo/Echo"},
                       {":authority", "127.0.0.1"},
                       {"content-type", "application/grpc-web-text"},
                       {"x-grpc-web", "1"}})) +
      // Framed("hello") in two padded base64 runs.
      EncodeFrame(NGHTTP2_DATA, 0, 1, "AAAAAA==") +
      EncodeFrame(NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 1, "BWhlbGxv");
  return {
      {"browser_grpc_web", BrowserBytes(call)},
      {"browser_grpc_web_text", BrowserBytes(text_call)},
      {"browser_connect_get",
       BrowserBytes(EncodeFrame(
           NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM,
           1,
           EncodeLiteralHeaderBlock(
               {{":method", "GET"},
                {":scheme", "https"},
                {":path",
                 "/grpc.testing.TestService/CacheableUnaryCall?encoding=json&"
                 "message=%7B%22responseSize%22%3A3%7D"},
                {":authority", "127.0.0.1"}})))},
      {"browser_preflight", BrowserBytes(preflight)},
      {"browser_both", BrowserBytes(preflight + call)},
      {"browser_connect_proto",
       BrowserBytes(connect_call("application/proto", "\x10\x03"))},
      {"browser_connect_json", BrowserBytes(connect_call("application/json",
                                                         R"({"responseSize": 3,
                                     "payload": {"body": "aGk="}})"))},
      {"browser_connect_stream_json",
       BrowserBytes(
           connect_call("application/connect+json",
                        Framed(R"({"responseSize": 3})") + Framed("{}")))}};
}

bool Write(const std::string& path, char control, absl::string_view bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.put(control);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(file);
}

}  // namespace
}  // namespace h2rpc::transport::http2

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_ROOT (test/fuzz/corpus)\n", argv[0]);
    return 2;
  }
  const std::string root = argv[1];
  using h2rpc::transport::http2::kPrefaceSize;
  using h2rpc::transport::http2::Write;
  bool ok = true;
  for (const auto& [name, exchange] : h2rpc::transport::http2::Exchanges()) {
    if (exchange.client_bytes.size() < kPrefaceSize) {
      std::fprintf(stderr, "%s: the client sent no preface\n", name.c_str());
      return 1;
    }
    const absl::string_view client =
        absl::string_view(exchange.client_bytes).substr(kPrefaceSize);
    // 32 KiB chunks; and for the first exchanges also 64-byte chunks taken
    // in small writes.
    ok &= Write(root + "/server_session/" + name, 0x0f, client);
    ok &= Write(root + "/client_session/" + name, 0x0f, exchange.server_bytes);
    if (name == "unary" || name == "streaming") {
      ok &= Write(root + "/server_session/" + name + "_small", 0x26, client);
      ok &= Write(root + "/client_session/" + name + "_small", 0x26,
                  exchange.server_bytes);
    }
  }
  for (const auto& [name, bytes] : h2rpc::transport::http2::BrowserSeeds()) {
    ok &= Write(root + "/server_session/" + name, 0x0f, bytes);
  }
  return ok ? 0 : 1;
}
