// A server session fed arbitrary client bytes after the connection
// preface, with an echo call layer behind it (transport-level handlers
// that echo, hold, or refuse calls) and time on a fake clock.
//
// Input: one control byte, then the client's bytes. The control byte sets
// the size of the chunks they arrive in (bits 0-3: 1 << n bytes), whether
// calls hold their messages' flow-control credit (bit 4), whether the
// output is taken in small writes (bit 5), as a slow socket would, and
// whether connection management runs on short timers (bit 6: keepalive
// PINGs and their timeout, PING enforcement, connection age and its grace,
// all within a few 100 ms steps of the clock; bit 7: PINGs permitted
// without calls). gRPC-Web, Connect (JSON for grpc.testing.TestService's
// methods) and CORS (origin https://a.test) are on, so their requests,
// preflights and origins take their own paths.
#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "rpc/internal/common/protobuf_connect_codec.h"
#include "test/util/raw_frames.h"
#include "transport/core/memory_quota.h"
#include "transport/http2/server_session.h"
#include "transport/http2/testing/session_harness.h"
#include "transport/io/fake_scheduler.h"

namespace h2rpc::transport::http2 {
namespace {

void Run(absl::string_view input) {
  if (input.empty()) return;
  const uint8_t control = static_cast<uint8_t>(input[0]);
  input.remove_prefix(1);
  const size_t chunk = size_t{1} << (control & 0x0f);
  const size_t max_write = (control & 0x20) ? 7 : SIZE_MAX;

  io::FakeScheduler scheduler;
  ConnectionOptions options;
  options.max_receive_message_size = 64 << 10;
  options.memory_quota_share = 256 << 10;
  options.max_header_list_size = 8192;
  options.initial_stream_window = 64 << 10;
  options.connection_window = 1 << 20;
  options.max_concurrent_streams = 16;
  options.keepalive.max_connection_idle = absl::Seconds(30);
  options.web.grpc_web = true;
  static const auto* const cors =
      new std::shared_ptr<const CorsPolicy>(std::make_shared<const CorsPolicy>(
          std::vector<std::string>{"https://a.test"}, 60));
  options.web.cors = *cors;
  options.web.connect = true;
  static const auto* const connect_codec =
      new std::shared_ptr<const ConnectCodec>(
          std::make_shared<const ::h2rpc::internal::ProtobufConnectCodec>());
  options.web.connect_codec = *connect_codec;
  if ((control & 0x40) != 0) {
    options.keepalive.time = absl::Milliseconds(300);
    options.keepalive.timeout = absl::Milliseconds(200);
    options.keepalive.min_time = absl::Milliseconds(250);
    options.keepalive.max_connection_age = absl::Milliseconds(500);
    options.keepalive.max_connection_age_grace = absl::Seconds(1);
    options.keepalive.permit_without_calls = (control & 0x80) != 0;
    options.keepalive.permit_pings_without_calls = (control & 0x80) != 0;
  }
  MemoryQuota quota(1 << 20);
  testing::EchoDispatcher dispatcher;
  dispatcher.hold_messages = (control & 0x10) != 0;
  ServerSession session(&scheduler, "fuzz-client", options, &quota, &dispatcher,
                        &dispatcher);
  testing::MemoryWire wire(&session);
  wire.Start();
  wire.Feed(::h2rpc::testing::kClientPreface);
  static_cast<void>(wire.TakeOutput(max_write));
  while (!input.empty() && !wire.closed()) {
    const absl::string_view piece = input.substr(0, chunk);
    input.remove_prefix(piece.size());
    wire.Feed(piece);
    static_cast<void>(wire.TakeOutput(max_write));
    scheduler.AdvanceBy(absl::Milliseconds(100));
    static_cast<void>(wire.TakeOutput(max_write));
  }
  // The call layer finishes what it holds, then the peer goes away.
  for (auto& call : dispatcher.calls) {
    if (call->released) continue;
    call->ReleaseHeldMessages();
    call->Finish(Status(StatusCode::kAborted, "fuzz over"));
  }
  static_cast<void>(wire.TakeOutput(max_write));
  wire.PeerCloses();
  scheduler.AdvanceBy(absl::Seconds(60));
  if (!dispatcher.closed) {
    session.Close(Status(StatusCode::kUnavailable, "fuzz over"));
  }
}

}  // namespace
}  // namespace h2rpc::transport::http2

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  h2rpc::transport::http2::Run(
      absl::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
