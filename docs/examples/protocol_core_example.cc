// The protocol core without sockets: a request header list and a framed
// message going out, and the same message coming back in pieces. Built and
// run by `tools/bazel test //docs/examples:all`.
#include <cstdio>
#include <string>

#include "absl/time/time.h"
#include "transport/core/call_setup.h"
#include "transport/core/message_deframer.h"
#include "transport/core/message_framer.h"
#include "transport/io/monotonic_time.h"

using namespace h2rpc;             // NOLINT: example brevity
using namespace h2rpc::transport;  // NOLINT

struct PrintingListener : MessageDeframer::Listener {
  Status OnMessage(absl::string_view message, bool compressed) override {
    std::printf("received a %zu-byte message\n", message.size());
    return Status();
  }
};

int main() {
  Metadata metadata;
  metadata.Add("x-request-id", "42");
  CallDescription call;
  call.method_path = "/grpc.testing.TestService/UnaryCall";
  call.authority = "localhost:50051";
  // Deadlines are on the monotonic clock, immune to wall-clock steps.
  const io::MonotonicTime now = io::MonotonicTime::Now();
  call.deadline = now + absl::Seconds(5);
  call.metadata = &metadata;
  HeaderList headers;  // reuse it for the next call: no allocation then
  Status status = BuildRequestHeaders(call, now, &headers);
  if (!status.ok()) return 1;
  std::printf("%zu header fields, ready for nghttp2_submit_request\n",
              headers.size());

  std::string wire(kMessagePrefixSize, '\0');
  const std::string payload(1000, 'x');
  EncodeMessagePrefix(/*compressed=*/false, payload.size(), wire.data());
  wire += payload;

  MessageDeframer deframer(MessageDeframer::Options{});
  PrintingListener listener;
  status = deframer.Feed(absl::string_view(wire).substr(0, 3), listener);
  if (status.ok())
    status = deframer.Feed(absl::string_view(wire).substr(3), listener);
  if (status.ok()) status = deframer.Finish();
  std::printf("stream status: %s\n", status.ToString().c_str());
  return status.ok() ? 0 : 1;
}
