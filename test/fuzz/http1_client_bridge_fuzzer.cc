// A client connection speaking HTTP/1.1 (http1::ClientBridge, which parses
// the answers with http_parser) in front of a client session, fed
// arbitrary server bytes while calls are under way, time on a fake clock.
//
// Input: one control byte, then the server's bytes. The control byte sets
// the size of the chunks they arrive in (bits 0-3: 1 << n bytes), how many
// calls are started (bits 4-5: 1 to 4; they take turns), and whether the
// server closes at the end (bit 6) or the calls are cancelled (bit 7).
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "transport/http1/client_bridge.h"
#include "transport/http2/client_session.h"
#include "transport/http2/testing/session_harness.h"
#include "transport/io/fake_scheduler.h"

namespace h2rpc::transport::http2 {
namespace {

void Run(absl::string_view input) {
  if (input.empty()) return;
  const uint8_t control = static_cast<uint8_t>(input[0]);
  input.remove_prefix(1);
  const size_t chunk = size_t{1} << (control & 0x0f);
  const int calls = 1 + ((control >> 4) & 0x03);

  io::FakeScheduler scheduler;
  ConnectionOptions options;
  options.max_receive_message_size = 64 << 10;
  testing::RecordingClientListener listener;
  ClientSession session(&scheduler, "fuzz-server", options, &listener);
  http1::Http1Options http1;
  http1.max_buffered_input = 4096;
  http1::ClientBridge bridge(http1);
  bridge.Attach(&session);
  testing::MemoryWire wire(&bridge);
  wire.Start();
  std::deque<testing::RecordingCall> started;
  for (int i = 0; i < calls; ++i) {
    testing::RecordingCall& call = started.emplace_back();
    call.stream.description.method_path = call.path;
    call.stream.description.authority = "fuzz-server";
    call.stream.description.connect_unary = (control & 0x40) != 0;
    call.stream.outgoing().buffer() = std::string("\0\0\0\0\x02hi", 7);
    call.stream.outgoing().set_end_of_data();
    call.stream.description.deadline =
        scheduler.Now() + absl::Milliseconds(500 + 100 * i);
    session.StartCall(&call.stream);
  }
  static_cast<void>(wire.TakeOutput());
  while (!input.empty() && !wire.closed()) {
    const absl::string_view piece = input.substr(0, chunk);
    input.remove_prefix(piece.size());
    wire.Feed(piece);
    static_cast<void>(wire.TakeOutput());
    scheduler.AdvanceBy(absl::Milliseconds(50));
    static_cast<void>(wire.TakeOutput());
  }
  if ((control & 0x80) != 0) {
    for (auto& call : started) {
      call.stream.Cancel(Status(StatusCode::kCancelled, "fuzz cancel"));
    }
    static_cast<void>(wire.TakeOutput());
  }
  wire.PeerCloses();
  scheduler.AdvanceBy(absl::Seconds(60));
  if (!listener.closed) {
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
