#include "benchmark/frame_tracer.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace h2rpc::benchmark {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::string Frame(uint8_t type, uint8_t flags, uint32_t stream,
                  const std::string& payload) {
  const uint32_t length = payload.size();
  std::string frame = {
      static_cast<char>(length >> 16), static_cast<char>(length >> 8),
      static_cast<char>(length),       static_cast<char>(type),
      static_cast<char>(flags),        static_cast<char>(stream >> 24),
      static_cast<char>(stream >> 16), static_cast<char>(stream >> 8),
      static_cast<char>(stream)};
  return frame + payload;
}

std::string Be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
          static_cast<char>(v >> 8), static_cast<char>(v)};
}

TEST(FrameTracerTest, SkipsThePrefaceAndNamesFramesFedByteByByte) {
  const std::string bytes =
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" +
      Frame(4, 0, 0, std::string("\x00\x04", 2) + Be32(1 << 20)) +
      Frame(8, 0, 0, Be32(524288)) + Frame(0, 1, 3, std::string(100, 'x')) +
      Frame(6, 1, 0, "pingpong") + Frame(3, 0, 5, Be32(8));
  FrameTracer tracer(/*client_to_server=*/true);
  std::vector<std::string> lines;
  for (char c : bytes) {
    for (std::string& line : tracer.Feed(std::string(1, c))) {
      lines.push_back(std::move(line));
    }
  }
  EXPECT_THAT(lines,
              ElementsAre("SETTINGS stream=0 len=6 flags=0x0 4=1048576",
                          "WINDOW_UPDATE stream=0 len=4 flags=0x0 "
                          "increment=524288",
                          "DATA stream=3 len=100 flags=0x1",
                          "PING stream=0 len=8 flags=0x1 "
                          "opaque=70696e67706f6e67",
                          "RST_STREAM stream=5 len=4 flags=0x0 error=8"));
}

TEST(FrameTracerTest, ServerToClientHasNoPrefaceAndWaitsForWholeHeaders) {
  FrameTracer tracer(/*client_to_server=*/false);
  const std::string data = Frame(0, 0, 1, std::string(16384, 'y'));
  EXPECT_THAT(tracer.Feed(data.substr(0, 5)), IsEmpty());
  EXPECT_THAT(tracer.Feed(data.substr(5, 100)),
              ElementsAre("DATA stream=1 len=16384 flags=0x0"));
  EXPECT_THAT(
      tracer.Feed(data.substr(105) + Frame(7, 0, 0, Be32(3) + Be32(11))),
      ElementsAre("GOAWAY stream=0 len=8 flags=0x0 error=11"));
}

}  // namespace
}  // namespace h2rpc::benchmark
