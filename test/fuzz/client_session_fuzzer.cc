// A client session with calls in flight fed arbitrary server bytes, time on
// a fake clock: a unary call with a deadline, a streaming call still
// sending, and a call that cancels itself half-way.
//
// Input: one control byte, then the server's bytes (from its SETTINGS on).
// The control byte sets the size of the chunks they arrive in (bits 0-3:
// 1 << n bytes), whether the output is taken in small writes (bit 5), and
// whether keepalive runs on short timers (bit 6: a PING after 300 ms without
// a frame, dead 200 ms later; bit 7: also without calls).
#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
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
  const size_t max_write = (control & 0x20) ? 7 : SIZE_MAX;

  io::FakeScheduler scheduler;
  ConnectionOptions options;
  options.max_receive_message_size = 64 << 10;
  options.max_header_list_size = 8192;
  options.initial_stream_window = 64 << 10;
  options.connection_window = 1 << 20;
  if ((control & 0x40) != 0) {
    options.keepalive.time = absl::Milliseconds(300);
    options.keepalive.timeout = absl::Milliseconds(200);
    options.keepalive.permit_without_calls = (control & 0x80) != 0;
  }
  // Declared before the session: the calls outlive its streams.
  std::deque<testing::RecordingCall> calls(3);
  testing::RecordingClientListener listener;
  ClientSession session(&scheduler, "fuzz-server", options, &listener);
  testing::MemoryWire wire(&session);
  wire.Start();
  for (size_t i = 0; i < calls.size(); ++i) {
    ClientStream& stream = calls[i].stream;
    stream.description.method_path = calls[i].path;
    stream.description.authority = "fuzz-server";
    stream.outgoing().buffer() = testing::Framed("request");
    if (i == 0) {
      stream.description.deadline = scheduler.Now() + absl::Seconds(1);
      stream.outgoing().set_end_of_data();
    }
    session.StartCall(&stream);
  }
  static_cast<void>(wire.TakeOutput(max_write));
  int round = 0;
  while (!input.empty() && !wire.closed()) {
    const absl::string_view piece = input.substr(0, chunk);
    input.remove_prefix(piece.size());
    wire.Feed(piece);
    static_cast<void>(wire.TakeOutput(max_write));
    scheduler.AdvanceBy(absl::Milliseconds(100));
    if (calls[2].stream.active()) {
      calls[2].stream.Cancel(Status(StatusCode::kCancelled, "fuzz cancel"));
    }
    // The streaming call sends a few more messages, then waits.
    if (++round <= 4 && calls[1].stream.active()) {
      calls[1].stream.outgoing().buffer() += testing::Framed("more");
      calls[1].stream.ResumeSend();
    }
    static_cast<void>(wire.TakeOutput(max_write));
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
