// An HTTP/1.1 server connection fed arbitrary client bytes: the bridge
// (http1::ServerBridge, which parses them with http_parser) in front of a
// server session with the web protocols on and an echo call layer behind
// it, time on a fake clock.
//
// Input: one control byte, then the client's bytes. The control byte sets
// the size of the chunks they arrive in (bits 0-3: 1 << n bytes), whether
// calls hold their messages' flow-control credit (bit 4), and whether the
// output is taken in small writes (bit 5), as a slow socket would. Bytes
// that begin with HTTP/2's preface take the pass-through path.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "rpc/internal/common/protobuf_connect_codec.h"
#include "transport/core/memory_quota.h"
#include "transport/http1/server_bridge.h"
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
  options.web.grpc_web = true;
  options.web.connect = true;
  static const auto* const connect_codec =
      new std::shared_ptr<const ConnectCodec>(
          std::make_shared<const ::h2rpc::internal::ProtobufConnectCodec>());
  options.web.connect_codec = *connect_codec;
  options.web.http1.max_header_bytes = options.max_header_list_size;
  options.web.http1.max_buffered_input = 4096;
  MemoryQuota quota(1 << 20);
  testing::EchoDispatcher dispatcher;
  dispatcher.hold_messages = (control & 0x10) != 0;
  ServerSession session(&scheduler, "fuzz-client", options, &quota, &dispatcher,
                        &dispatcher);
  http1::ServerBridge bridge(&scheduler, options.web.http1, /*secure=*/false);
  bridge.Attach(&session);
  testing::MemoryWire wire(&bridge);
  wire.Start();
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
