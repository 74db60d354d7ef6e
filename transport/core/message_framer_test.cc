#include "transport/core/message_framer.h"

#include <cstdint>
#include <limits>
#include <string>

#include "base/status.h"
#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"

namespace h2rpc::transport {
namespace {

using ::h2rpc::testing::AllocationCounter;

std::string Prefix(bool compressed, uint32_t length) {
  std::string out(kMessagePrefixSize, '\xAA');
  EncodeMessagePrefix(compressed, length, out.data());
  return out;
}

TEST(EncodeMessagePrefixTest, WritesFlagThenBigEndianLength) {
  EXPECT_EQ(Prefix(false, 0x01020304u), std::string("\x00\x01\x02\x03\x04", 5));
  EXPECT_EQ(Prefix(true, 0x01020304u), std::string("\x01\x01\x02\x03\x04", 5));
  EXPECT_EQ(Prefix(false, 0), std::string("\x00\x00\x00\x00\x00", 5));
  EXPECT_EQ(Prefix(true, 0xFFFFFFFFu), std::string("\x01\xFF\xFF\xFF\xFF", 5));
  EXPECT_EQ(Prefix(false, 300), std::string("\x00\x00\x00\x01\x2C", 5));
}

TEST(EncodeMessagePrefixTest, WritesExactlyFiveBytesWithoutAllocating) {
  char buffer[7] = {'x', 'x', 'x', 'x', 'x', 'x', 'x'};
  AllocationCounter counter;
  EncodeMessagePrefix(true, 0x00AB00CDu, buffer + 1);
  EXPECT_EQ(counter.allocations(), 0);
  EXPECT_EQ(std::string(buffer, 7), std::string("x\x01\x00\xAB\x00\xCDx", 7));
}

TEST(DecodeMessagePrefixTest, InvertsEncodeAndKeepsTheRawFlag) {
  for (uint32_t length :
       {0u, 1u, 255u, 256u, 65536u, 0x80000000u, 0xFFFFFFFFu}) {
    for (bool compressed : {false, true}) {
      const std::string prefix = Prefix(compressed, length);
      const MessagePrefix decoded = DecodeMessagePrefix(prefix.data());
      EXPECT_EQ(decoded.flag, compressed ? 1 : 0);
      EXPECT_EQ(decoded.length, length);
    }
  }
  const MessagePrefix bad = DecodeMessagePrefix("\xFE\x00\x00\x10\x00");
  EXPECT_EQ(bad.flag, 0xFE);
  EXPECT_EQ(bad.length, 4096u);
}

TEST(CheckSendMessageSizeTest, AcceptsUpToTheLimit) {
  AllocationCounter counter;
  EXPECT_TRUE(CheckSendMessageSize(0, 0).ok());
  EXPECT_TRUE(CheckSendMessageSize(4194304, 4194304).ok());
  EXPECT_TRUE(
      CheckSendMessageSize(0xFFFFFFFFu, std::numeric_limits<size_t>::max())
          .ok());
  EXPECT_EQ(counter.allocations(), 0);
}

TEST(CheckSendMessageSizeTest, RefusesAboveTheLimitNamingBothNumbers) {
  const Status status = CheckSendMessageSize(5242880, 4194304);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(),
            "sent message of 5242880 bytes exceeds the limit of 4194304 "
            "(max_send_message_size)");
  EXPECT_EQ(CheckSendMessageSize(1, 0).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(CheckSendMessageSize(4194305, 4194304).code(),
            StatusCode::kResourceExhausted);
}

TEST(CheckSendMessageSizeTest, RefusesSizesBeyondThe32BitPrefix) {
  if (sizeof(size_t) <= 4) GTEST_SKIP() << "size_t cannot exceed 32 bits";
  const size_t too_big = size_t{0xFFFFFFFFu} + 1;
  const Status status =
      CheckSendMessageSize(too_big, std::numeric_limits<size_t>::max());
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(),
            "sent message of 4294967296 bytes exceeds the limit of 4294967295 "
            "(the 32-bit gRPC message length prefix)");
}

TEST(AppendFramedMessageTest, AppendsPrefixAndMessageAfterExistingBytes) {
  std::string out = "head";
  ASSERT_TRUE(AppendFramedMessage("hello", false, 100, &out).ok());
  ASSERT_TRUE(AppendFramedMessage("", true, 100, &out).ok());
  EXPECT_EQ(out,
            std::string("head\x00\x00\x00\x00\x05hello\x01\x00\x00\x00\x00",
                        4 + 10 + 5));
}

TEST(AppendFramedMessageTest, AllocatesOnceToExactlyWhatIsNeeded) {
  const std::string message(1000, 'm');
  std::string out;
  AllocationCounter counter;
  ASSERT_TRUE(AppendFramedMessage(message, false, 4096, &out).ok());
  EXPECT_EQ(counter.allocations(), 1);
  EXPECT_EQ(out.size(), 1005u);
  EXPECT_EQ(out.capacity(), 1005u);
  EXPECT_EQ(out.substr(5), message);
}

TEST(AppendFramedMessageTest, DoesNotAllocateWhenCapacitySuffices) {
  const std::string message(1000, 'm');
  std::string out;
  out.reserve(3 * 1005);
  AllocationCounter counter;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(AppendFramedMessage(message, i == 1, 4096, &out).ok());
  }
  EXPECT_EQ(counter.allocations(), 0);
  EXPECT_EQ(out.size(), 3 * 1005u);
  EXPECT_EQ(out[1005], '\x01');
}

TEST(AppendFramedMessageTest, LeavesOutputUntouchedOnError) {
  std::string out = "keep";
  const Status status = AppendFramedMessage("too long", false, 7, &out);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(),
            "sent message of 8 bytes exceeds the limit of 7 "
            "(max_send_message_size)");
  EXPECT_EQ(out, "keep");
}

}  // namespace
}  // namespace h2rpc::transport
