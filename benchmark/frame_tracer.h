#ifndef H2RPC_BENCHMARK_FRAME_TRACER_H_
#define H2RPC_BENCHMARK_FRAME_TRACER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace h2rpc::benchmark {

// Splits one direction of an HTTP/2 connection's bytes into frames and
// describes each in a line ("HEADERS stream=1 len=40 flags=0x4",
// "WINDOW_UPDATE stream=0 increment=524288", "PING ack"...), for tracing
// what a relay carries. A client-to-server direction starts with the
// 24-byte connection preface, which is skipped. Bytes of any shape are
// accepted: what is not HTTP/2 gives odd lines, never a crash. Not
// thread-safe.
class FrameTracer {
 public:
  explicit FrameTracer(bool client_to_server)
      : preface_left_(client_to_server ? 24 : 0) {}

  // The frames whose header arrived in `bytes` (in pieces of any size),
  // one line each; WINDOW_UPDATE, SETTINGS, PING, RST_STREAM and GOAWAY
  // lines are written once their payload is complete.
  std::vector<std::string> Feed(absl::string_view bytes);

 private:
  // The frame whose header is in header_: its line.
  std::string Describe() const;

  size_t preface_left_;
  std::string header_;   // the current frame's header, up to 9 bytes
  std::string payload_;  // a described frame's payload, while gathered
  size_t payload_left_ = 0;
  bool gather_payload_ = false;
};

}  // namespace h2rpc::benchmark

#endif  // H2RPC_BENCHMARK_FRAME_TRACER_H_
