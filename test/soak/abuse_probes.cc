#include "test/soak/abuse_probes.h"

#include <nghttp2/nghttp2.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "proto/grpc/testing/messages.pb.h"
#include "test/util/loopback_socket.h"
#include "test/util/raw_frames.h"
#include "test/util/raw_h2_client.h"

namespace h2rpc::testing {
namespace {

using grpc::testing::SimpleRequest;

constexpr char kUnaryCall[] = "/grpc.testing.TestService/UnaryCall";
constexpr char kFullDuplexCall[] = "/grpc.testing.TestService/FullDuplexCall";
// The payload of the PING that ends a flood: its ACK says the server has
// read everything before it.
constexpr absl::string_view kFinalPing = "soakdone";
// How long a flood may take to be read and answered.
constexpr absl::Duration kFloodTimeout = absl::Seconds(20);
// How long a fresh call made while a probe holds its resources may take.
constexpr absl::Duration kDuringTimeout = absl::Seconds(10);

// The client preface, an empty SETTINGS frame and an ACK of the server's
// SETTINGS (sent before reading them; every server sends SETTINGS first).
std::string Handshake() {
  return absl::StrCat(kClientPreface, EncodeFrame(NGHTTP2_SETTINGS, 0, 0, ""),
                      EncodeFrame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, ""));
}

std::string FinalPing() { return EncodeFrame(NGHTTP2_PING, 0, 0, kFinalPing); }

bool FinalPingAnswered(const std::vector<RawFrame>& frames) {
  for (const RawFrame& frame : frames) {
    if (frame.type == NGHTTP2_PING && (frame.flags & NGHTTP2_FLAG_ACK) &&
        frame.payload == kFinalPing) {
      return true;
    }
  }
  return false;
}

bool FinalPingOrGoAway(const std::vector<RawFrame>& frames) {
  return FinalPingAnswered(frames) || GoAwayErrorCode(frames).has_value();
}

// "GOAWAY ENHANCE_YOUR_CALM, 12 RST_STREAM, final PING answered" and the
// like: what a flood got back.
std::string DescribeFlood(const RawBytesResult& result) {
  if (!result.connected)
    return absl::StrCat("no connection: ", result.connect_error);
  int rsts = 0;
  int ping_acks = 0;
  for (const RawFrame& frame : result.frames) {
    if (frame.type == NGHTTP2_RST_STREAM) ++rsts;
    if (frame.type == NGHTTP2_PING && (frame.flags & NGHTTP2_FLAG_ACK)) {
      ++ping_acks;
    }
  }
  std::string text = absl::StrCat(result.frames.size(), " frames back (", rsts,
                                  " RST_STREAM, ", ping_acks, " PING ACK)");
  if (const auto code = GoAwayErrorCode(result.frames)) {
    absl::StrAppend(&text, ", GOAWAY ", nghttp2_http2_strerror(*code));
  }
  if (FinalPingAnswered(result.frames)) {
    absl::StrAppend(&text, ", final PING answered");
  }
  if (result.closed_by_peer) absl::StrAppend(&text, ", closed");
  if (result.reset_by_peer) absl::StrAppend(&text, ", reset");
  if (result.timed_out) absl::StrAppend(&text, ", timed out");
  return text;
}

std::string Flood(int port, const std::string& bytes) {
  return DescribeFlood(
      SendRawBytes(port, bytes, kFloodTimeout, FinalPingOrGoAway));
}

// "; fresh call answered while held" or why not.
std::string DuringNote(int port) {
  std::string error;
  if (AnswersFreshCall(port, kDuringTimeout, &error)) {
    return "; fresh call answered while held";
  }
  return absl::StrCat("; ", kNotAnsweredWhileHeld, ": ", error);
}

std::string HeadersOf(const char* path, int port) {
  return EncodeLiteralHeaderBlock(GrpcRequestHeaders(path, port));
}

// --- The probes -------------------------------------------------------------

// 10,000 PING frames.
std::string PingFlood(int port, int) {
  std::string bytes = Handshake();
  const std::string ping = EncodeFrame(NGHTTP2_PING, 0, 0, "pingping");
  for (int i = 0; i < 10000; ++i) bytes += ping;
  return Flood(port, bytes + FinalPing());
}

// 10,000 empty SETTINGS frames.
std::string SettingsFlood(int port, int) {
  std::string bytes = Handshake();
  const std::string settings = EncodeFrame(NGHTTP2_SETTINGS, 0, 0, "");
  for (int i = 0; i < 10000; ++i) bytes += settings;
  return Flood(port, bytes + FinalPing());
}

// 2,000 UnaryCall streams, each reset (CANCEL) right after its HEADERS.
std::string RapidReset(int port, int) {
  std::string bytes = Handshake();
  const std::string block = HeadersOf(kUnaryCall, port);
  std::string cancel(4, '\0');
  cancel[3] = static_cast<char>(NGHTTP2_CANCEL);
  for (uint32_t i = 0; i < 2000; ++i) {
    const uint32_t id = 2 * i + 1;
    bytes += EncodeFrame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, id, block);
    bytes += EncodeFrame(NGHTTP2_RST_STREAM, 0, id, cancel);
  }
  return Flood(port, bytes + FinalPing());
}

// A header block that never ends: HEADERS without END_HEADERS, then 256
// CONTINUATION frames of 16,000 bytes of literal fields (4 MB).
std::string ContinuationFlood(int port, int) {
  std::string bytes = Handshake();
  bytes += EncodeFrame(NGHTTP2_HEADERS, 0, 1, HeadersOf(kUnaryCall, port));
  std::string fragment;
  for (int i = 0; i < 4; ++i) {
    fragment += EncodeLiteralHeaderBlock({{"x-pad", std::string(3980, 'c')}});
  }
  const std::string continuation =
      EncodeFrame(NGHTTP2_CONTINUATION, 0, 1, fragment);
  for (int i = 0; i < 256; ++i) bytes += continuation;
  return Flood(port, bytes);
}

// 1,100 open-ended FullDuplexCall streams on one connection, past the
// server's limit of 1,024 concurrent streams.
std::string StreamsPastTheLimit(int port, int) {
  std::string bytes = Handshake();
  const std::string block = HeadersOf(kFullDuplexCall, port);
  for (uint32_t i = 0; i < 1100; ++i) {
    bytes += EncodeFrame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 2 * i + 1,
                         block);
  }
  return Flood(port, bytes + FinalPing());
}

// Frames that break the protocol (DATA on stream 0), and on a second
// connection, HTTP/1.1 instead of the preface.
std::string BadFrames(int port, int) {
  const std::string data_on_zero = absl::StrCat(
      Handshake(), EncodeFrame(NGHTTP2_DATA, 0, 0, "zero"), FinalPing());
  const std::string http1 = "GET / HTTP/1.1\r\nHost: soak\r\n\r\n";
  return absl::StrCat(
      "DATA on stream 0: ", Flood(port, data_on_zero),
      "; HTTP/1.1: ", DescribeFlood(SendRawBytes(port, http1, kFloodTimeout)));
}

// 64 FullDuplexCall streams that send their headers and nothing more.
std::string IdleStreams(int port, int) {
  std::string error;
  std::unique_ptr<RawH2Client> client = RawH2Client::Connect(port, &error);
  if (client == nullptr) return absl::StrCat("no connection: ", error);
  RawRequest request;
  request.headers = GrpcRequestHeaders(kFullDuplexCall, port);
  request.end_stream = false;
  int started = 0;
  for (int i = 0; i < 64; ++i) started += client->Start(request) > 0 ? 1 : 0;
  // Sends them (and acknowledges the server's SETTINGS) without waiting for
  // anything: the handlers never answer.
  const bool ping = client->Ping();
  return absl::StrCat(started, " streams open, ",
                      ping ? "connection alive" : client->error(),
                      DuringNote(port));
}

// 16 UnaryCall streams, each declaring a 1 MiB message and sending only as
// much of it as flow control allows.
std::string PartialMessages(int port, int) {
  std::string error;
  std::unique_ptr<RawH2Client> client = RawH2Client::Connect(port, &error);
  if (client == nullptr) return absl::StrCat("no connection: ", error);
  RawRequest request;
  request.headers = GrpcRequestHeaders(kUnaryCall, port);
  request.shared_body = std::make_shared<const std::string>(
      absl::StrCat(GrpcPrefix(0, 1 << 20), std::string((1 << 20) - 1, 'p')));
  request.end_stream = false;
  std::vector<int32_t> ids;
  for (int i = 0; i < 16; ++i) ids.push_back(client->Start(request));
  // Until the server's windows stop the bodies (no byte sent for 200 ms).
  size_t sent = 0;
  absl::Time last_progress = absl::Now();
  client->RunUntil(
      [&] {
        size_t now_sent = 0;
        for (int32_t id : ids)
          now_sent += client->Response(id).request_bytes_sent;
        if (now_sent != sent) {
          sent = now_sent;
          last_progress = absl::Now();
        }
        return absl::Now() - last_progress > absl::Milliseconds(200);
      },
      absl::Seconds(10));
  return absl::StrCat(ids.size(), " streams, ", sent, " body bytes sent",
                      DuringNote(port));
}

// 4 FullDuplexCall streams, each sent 10,000 empty messages (5 bytes each
// on the wire), every one of which the server answers.
std::string TinyMessages(int port, int) {
  std::string error;
  std::unique_ptr<RawH2Client> client = RawH2Client::Connect(port, &error);
  if (client == nullptr) return absl::StrCat("no connection: ", error);
  std::string body;
  for (int i = 0; i < 10000; ++i) body += GrpcFrame("");
  RawRequest request;
  request.headers = GrpcRequestHeaders(kFullDuplexCall, port);
  request.shared_body = std::make_shared<const std::string>(std::move(body));
  request.end_stream = true;
  std::vector<int32_t> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(client->Start(request));
  client->RunUntil(
      [&] {
        for (int32_t id : ids) {
          if (!client->Response(id).stream_closed) return false;
        }
        return true;
      },
      kFloodTimeout);
  int ok = 0;
  size_t answers = 0;
  for (int32_t id : ids) {
    const RawResponse response = client->Response(id);
    if (response.Trailer("grpc-status") == "0") ++ok;
    answers += response.body.size() / 5;
  }
  return absl::StrCat(
      ok, " of 4 streams OK, ", answers, " answers read",
      client->closed() ? absl::StrCat(", ", client->error()) : "");
}

// 64 plaintext and 16 TLS connections that send nothing.
std::string SilentConnections(int port, int tls_port) {
  std::vector<int> fds;
  for (int i = 0; i < 80; ++i) {
    const int fd = ConnectToLoopback(i < 64 ? port : tls_port);
    if (fd >= 0) fds.push_back(fd);
  }
  const std::string during = DuringNote(port);
  for (int fd : fds) close(fd);
  return absl::StrCat(fds.size(), " of 80 connected", during);
}

// A UnaryCall whose request header list is about 20 KiB.
std::string LargeHeaderList(int port, int) {
  std::string error;
  std::unique_ptr<RawH2Client> client = RawH2Client::Connect(port, &error);
  if (client == nullptr) return absl::StrCat("no connection: ", error);
  RawRequest request;
  request.headers = GrpcRequestHeaders(kUnaryCall, port);
  request.headers.emplace_back("x-large", std::string(20 << 10, 'h'));
  request.body = GrpcFrame(SimpleRequest().SerializeAsString());
  const RawResponse response = client->Call(request, kFloodTimeout);
  if (const auto status = response.Trailer("grpc-status")) {
    return absl::StrCat("grpc-status ", *status);
  }
  if (response.rst_received) {
    return absl::StrCat("RST_STREAM ",
                        nghttp2_http2_strerror(response.rst_error_code));
  }
  if (response.goaway_received) {
    return absl::StrCat("GOAWAY ",
                        nghttp2_http2_strerror(response.goaway_error_code));
  }
  return absl::StrCat("no answer: ", response.error);
}

// The HTTP/2 preface (plaintext) sent to the TLS port.
std::string PlaintextToTls(int, int tls_port) {
  return DescribeFlood(SendRawBytes(tls_port, Handshake(), kFloodTimeout));
}

}  // namespace

const std::vector<AbuseProbe>& AbuseProbes() {
  static const auto* const probes = new std::vector<AbuseProbe>{
      {"ping_flood", PingFlood},
      {"settings_flood", SettingsFlood},
      {"rapid_reset", RapidReset},
      {"continuation_flood", ContinuationFlood},
      {"streams_past_the_limit", StreamsPastTheLimit},
      {"bad_frames", BadFrames},
      {"idle_streams", IdleStreams},
      {"partial_messages", PartialMessages},
      {"tiny_messages", TinyMessages},
      {"silent_connections", SilentConnections},
      {"large_header_list", LargeHeaderList},
      {"plaintext_to_tls", PlaintextToTls},
  };
  return *probes;
}

bool AnswersFreshCall(int port, absl::Duration timeout, std::string* error) {
  const absl::Time deadline = absl::Now() + timeout;
  std::unique_ptr<RawH2Client> client =
      RawH2Client::Connect(port, error, timeout);
  if (client == nullptr) return false;
  RawRequest request;
  request.headers = GrpcRequestHeaders(kUnaryCall, port);
  request.body = GrpcFrame(SimpleRequest().SerializeAsString());
  const RawResponse response = client->Call(request, deadline - absl::Now());
  if (response.Trailer("grpc-status") == "0") return true;
  *error = response.DebugString();
  return false;
}

}  // namespace h2rpc::testing
