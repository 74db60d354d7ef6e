#include "transport/compression/thread_codecs.h"

#include <zlib.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"
#include "transport/core/message_framer.h"

namespace h2rpc::transport::compression {
namespace {

using ::h2rpc::testing::AllocationCounter;
using ::testing::HasSubstr;

struct Framed {
  bool compressed;
  std::string body;
};

Framed Unframe(const std::string& wire) {
  EXPECT_GE(wire.size(), kMessagePrefixSize);
  const MessagePrefix prefix = DecodeMessagePrefix(wire.data());
  EXPECT_EQ(wire.size(), kMessagePrefixSize + prefix.length);
  return {prefix.flag == 1, wire.substr(kMessagePrefixSize)};
}

class ThreadCodecsTest : public ::testing::TestWithParam<CompressionAlgorithm> {
};

TEST_P(ThreadCodecsTest, CompressibleMessageRoundTripsFlaggedCompressed) {
  const std::string message(64 * 1024, 'a');
  std::string wire = "x";  // appended after existing bytes
  ASSERT_TRUE(
      AppendCompressedFramedMessage(message, GetParam(), 1 << 20, &wire).ok());
  ASSERT_EQ(wire[0], 'x');
  const Framed framed = Unframe(wire.substr(1));
  EXPECT_TRUE(framed.compressed);
  EXPECT_LT(framed.body.size(), message.size() / 10);

  absl::string_view out;
  ASSERT_TRUE(
      DecompressMessage(framed.body, GetParam(), message.size(), &out).ok());
  EXPECT_EQ(out, message);
}

TEST_P(ThreadCodecsTest, IncompressibleMessageIsSentAsIs) {
  std::string message;
  for (int i = 0; i < 64; ++i) message.push_back(static_cast<char>(i * 37));
  std::string wire;
  ASSERT_TRUE(
      AppendCompressedFramedMessage(message, GetParam(), 1 << 20, &wire).ok());
  const Framed framed = Unframe(wire);
  EXPECT_FALSE(framed.compressed);
  EXPECT_EQ(framed.body, message);
}

TEST_P(ThreadCodecsTest, SendLimitAppliesToTheUncompressedSize) {
  const std::string message(1000, 'a');
  std::string wire = "keep";
  const Status status =
      AppendCompressedFramedMessage(message, GetParam(), 999, &wire);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(wire, "keep");
}

TEST_P(ThreadCodecsTest, InflatingStopsAtTheLimit) {
  std::string wire;
  ASSERT_TRUE(AppendCompressedFramedMessage(std::string(1 << 20, '\0'),
                                            GetParam(), 1 << 20, &wire)
                  .ok());
  const Framed framed = Unframe(wire);
  absl::string_view out;
  const Status status =
      DecompressMessage(framed.body, GetParam(), (1 << 20) - 1, &out);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("1048575"));
}

TEST_P(ThreadCodecsTest, CorruptInputIsInternal) {
  absl::string_view out;
  const Status status =
      DecompressMessage("definitely not zlib", GetParam(), 1 << 20, &out);
  EXPECT_EQ(status.code(), StatusCode::kInternal);
}

TEST_P(ThreadCodecsTest, WarmThreadMakesNoAllocation) {
  const std::string message(1024, 'b');
  std::string wire;
  wire.reserve(4096);
  absl::string_view out;
  // Warm up this thread's codecs and scratch buffer.
  ASSERT_TRUE(
      AppendCompressedFramedMessage(message, GetParam(), 1 << 20, &wire).ok());
  ASSERT_TRUE(
      DecompressMessage(Unframe(wire).body, GetParam(), 1 << 20, &out).ok());
  const std::string body = Unframe(wire).body;

  AllocationCounter counter;
  for (int i = 0; i < 10; ++i) {
    wire.clear();
    ASSERT_TRUE(
        AppendCompressedFramedMessage(message, GetParam(), 1 << 20, &wire)
            .ok());
    ASSERT_TRUE(DecompressMessage(body, GetParam(), 1 << 20, &out).ok());
  }
  EXPECT_EQ(counter.allocations(), 0);
  EXPECT_EQ(out, message);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, ThreadCodecsTest,
                         ::testing::Values(CompressionAlgorithm::kDeflate,
                                           CompressionAlgorithm::kGzip),
                         [](const auto& info) {
                           return std::string(
                               CompressionAlgorithmName(info.param));
                         });

TEST(ThreadCodecsIdentityTest, IdentityFramesAsIs) {
  std::string wire;
  ASSERT_TRUE(AppendCompressedFramedMessage(std::string(100, 'a'),
                                            CompressionAlgorithm::kIdentity,
                                            1 << 20, &wire)
                  .ok());
  const Framed framed = Unframe(wire);
  EXPECT_FALSE(framed.compressed);
  EXPECT_EQ(framed.body, std::string(100, 'a'));
}

TEST(ThreadCodecsIdentityTest, DecompressingIdentityIsAnError) {
  absl::string_view out;
  EXPECT_EQ(DecompressMessage("abc", CompressionAlgorithm::kIdentity, 100, &out)
                .code(),
            StatusCode::kInternal);
}

}  // namespace
}  // namespace h2rpc::transport::compression
