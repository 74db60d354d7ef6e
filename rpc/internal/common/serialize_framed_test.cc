#include "rpc/internal/common/serialize_framed.h"

#include <climits>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/message_lite.h"
#include "gtest/gtest.h"
#include "rpc/byte_buffer.h"
#include "transport/compression/thread_codecs.h"
#include "transport/core/message_framer.h"

namespace h2rpc::internal {
namespace {

using ::testing::HasSubstr;

// A message that claims any serialized size (without holding the bytes):
// it serializes to `size` 'm' bytes and counts how often it is serialized.
class SizedMessage final : public google::protobuf::MessageLite {
 public:
  explicit SizedMessage(size_t size) : size_(size) {}

  int serialize_calls() const { return serialize_calls_; }

  std::string GetTypeName() const override { return "h2rpc.test.Sized"; }
  MessageLite* New(google::protobuf::Arena*) const override { return nullptr; }
  void Clear() override {}
  bool IsInitialized() const override { return true; }
  void CheckTypeAndMergeFrom(const MessageLite&) override {}
  size_t ByteSizeLong() const override { return size_; }
  int GetCachedSize() const override { return static_cast<int>(size_); }
  uint8_t* _InternalSerialize(
      uint8_t* target,
      google::protobuf::io::EpsCopyOutputStream* stream) const override {
    ++serialize_calls_;
    const std::string bytes(size_, 'm');
    return stream->WriteRaw(bytes.data(), static_cast<int>(bytes.size()),
                            target);
  }

 private:
  const size_t size_;
  mutable int serialize_calls_ = 0;
};

constexpr size_t kNoLimit = std::numeric_limits<size_t>::max();
constexpr char kBefore[] = "bytes already queued";

class SerializeFramedTest
    : public ::testing::TestWithParam<CompressionAlgorithm> {};

TEST_P(SerializeFramedTest, RefusesWhatProtobufCannotSerialize) {
  // One byte past protobuf's limit, and past the 4 GiB of the gRPC prefix;
  // neither is ever allocated.
  for (const size_t size : {size_t{INT_MAX} + 1, size_t{0xFFFFFFFFu} + 1}) {
    for (const size_t limit : {size_t{0xFFFFFFFFu}, kNoLimit}) {
      SizedMessage message(size);
      std::string out = kBefore;
      const Status status = SerializeFramed(message, GetParam(), limit, &out);
      EXPECT_EQ(status.code(), StatusCode::kResourceExhausted)
          << size << " " << limit;
      EXPECT_THAT(status.message(),
                  HasSubstr(absl::StrCat("sent message of ", size,
                                         " bytes exceeds the limit of ")));
      EXPECT_EQ(out, kBefore);
      EXPECT_EQ(message.serialize_calls(), 0);
    }
  }
}

TEST_P(SerializeFramedTest, NamesProtobufsLimitWhenTheOptionAllowsMore) {
  SizedMessage message(size_t{INT_MAX} + 1);
  std::string out;
  const Status status = SerializeFramed(message, GetParam(), 0xFFFFFFFFu, &out);
  EXPECT_EQ(status.message(),
            "sent message of 2147483648 bytes exceeds the limit of "
            "2147483647 (the largest message protobuf serializes)");
}

TEST_P(SerializeFramedTest, RefusesAboveMaxSendMessageSize) {
  SizedMessage message(101);
  std::string out = kBefore;
  const Status status = SerializeFramed(message, GetParam(), 100, &out);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(),
            "sent message of 101 bytes exceeds the limit of 100 "
            "(max_send_message_size)");
  EXPECT_EQ(out, kBefore);
  EXPECT_EQ(message.serialize_calls(), 0);

  // The configured limit wins when it is the smaller one.
  SizedMessage huge(size_t{INT_MAX} + 1);
  EXPECT_THAT(
      SerializeFramed(huge, GetParam(), 4 << 20, &out).message(),
      HasSubstr("exceeds the limit of 4194304 (max_send_message_size)"));
  EXPECT_EQ(huge.serialize_calls(), 0);
}

TEST_P(SerializeFramedTest, SendsAMessageAtTheLimit) {
  SizedMessage message(100);
  std::string out = kBefore;
  ASSERT_TRUE(SerializeFramed(message, GetParam(), 100, &out).ok());
  EXPECT_EQ(message.serialize_calls(), 1);
  ASSERT_GT(out.size(), sizeof(kBefore) - 1 + transport::kMessagePrefixSize);
  EXPECT_EQ(out.substr(0, sizeof(kBefore) - 1), kBefore);
  const char* frame = out.data() + sizeof(kBefore) - 1;
  const transport::MessagePrefix prefix = transport::DecodeMessagePrefix(frame);
  const absl::string_view body(frame + transport::kMessagePrefixSize,
                               prefix.length);
  ASSERT_EQ(out.size(), sizeof(kBefore) - 1 + transport::kMessagePrefixSize +
                            prefix.length);
  absl::string_view message_bytes = body;
  if (prefix.flag == 1) {
    ASSERT_NE(GetParam(), CompressionAlgorithm::kIdentity);
    ASSERT_TRUE(transport::compression::DecompressMessage(
                    body, GetParam(), 1 << 20, &message_bytes)
                    .ok());
  } else {
    EXPECT_EQ(prefix.flag, 0);
  }
  EXPECT_EQ(message_bytes, std::string(100, 'm'));
}

// A ByteBuffer's bytes are framed as they are: after what was queued, the
// same frame a message of those bytes gives, within the same limits.
TEST_P(SerializeFramedTest, FramesAByteBufferAsAMessageOfItsBytes) {
  const ByteBuffer buffer(std::string(100, 'm'));
  std::string out = kBefore;
  ASSERT_TRUE(SerializeFramed(&buffer, GetParam(), 100, &out).ok());
  EXPECT_EQ(FramedMessageSize(&buffer), 100u);
  std::string from_message = kBefore;
  SizedMessage message(100);
  ASSERT_TRUE(SerializeFramed(&message, GetParam(), 100, &from_message).ok());
  EXPECT_EQ(out, from_message);

  // An empty message is a frame too (a prefix of length 0).
  const ByteBuffer empty;
  std::string empty_out = kBefore;
  ASSERT_TRUE(SerializeFramed(&empty, GetParam(), 100, &empty_out).ok());
  std::string empty_message_out = kBefore;
  SizedMessage empty_message(0);
  ASSERT_TRUE(
      SerializeFramed(&empty_message, GetParam(), 100, &empty_message_out)
          .ok());
  EXPECT_EQ(empty_out, empty_message_out);
  EXPECT_GE(empty_out.size(),
            sizeof(kBefore) - 1 + transport::kMessagePrefixSize);

  std::string untouched = kBefore;
  const Status status = SerializeFramed(&buffer, GetParam(), 99, &untouched);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(untouched, kBefore);
}

INSTANTIATE_TEST_SUITE_P(IdentityAndCompressed, SerializeFramedTest,
                         ::testing::Values(CompressionAlgorithm::kIdentity,
                                           CompressionAlgorithm::kGzip,
                                           CompressionAlgorithm::kDeflate));

}  // namespace
}  // namespace h2rpc::internal
