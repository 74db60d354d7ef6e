#include "rpc/byte_buffer.h"

#include <string>

#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;

TEST(ByteBufferTest, AssignKeepsTheCapacity) {
  ByteBuffer buffer;
  buffer.Assign(std::string(1000, 'a'));
  EXPECT_EQ(buffer.size(), 1000u);
  const char* storage = buffer.bytes().data();
  buffer.Assign("short");
  EXPECT_EQ(buffer.ToString(), "short");
  buffer.Assign(std::string(900, 'b'));
  EXPECT_EQ(buffer.bytes().data(), storage);  // no new allocation
  buffer.Clear();
  EXPECT_TRUE(buffer.empty());
}

TEST(ByteBufferTest, AdoptTakesTheStringAsIs) {
  std::string bytes(5000, 'c');
  const char* data = bytes.data();
  ByteBuffer buffer;
  buffer.Adopt(std::move(bytes));
  EXPECT_EQ(buffer.bytes().data(), data);
  ByteBuffer copy = buffer.Copy();
  EXPECT_EQ(copy.ToString(), buffer.ToString());
  EXPECT_NE(copy.bytes().data(), data);
  ByteBuffer other("x");
  other.Swap(&buffer);
  EXPECT_EQ(buffer.ToString(), "x");
  EXPECT_EQ(other.bytes().data(), data);
}

TEST(ByteBufferTest, SerializeAndParseRoundTrip) {
  SimpleRequest request;
  request.mutable_payload()->set_body(std::string(300, 'p'));
  request.set_response_size(7);
  ByteBuffer buffer;
  ASSERT_TRUE(buffer.Serialize(request).ok());
  EXPECT_EQ(buffer.ToString(), request.SerializeAsString());
  SimpleRequest parsed;
  ASSERT_TRUE(buffer.Parse(&parsed));
  EXPECT_EQ(parsed.payload().body(), request.payload().body());
  EXPECT_EQ(parsed.response_size(), 7);
  ByteBuffer garbage("\xff\xff\xff");
  EXPECT_FALSE(garbage.Parse(&parsed));
}

TEST(ByteBufferTest, ReaderFollowsTheZeroCopyStreamContract) {
  ByteBuffer buffer("0123456789");
  ByteBufferReader reader(buffer);
  EXPECT_TRUE(reader.Skip(3));
  const void* data;
  int size;
  ASSERT_TRUE(reader.Next(&data, &size));
  EXPECT_EQ(std::string(static_cast<const char*>(data), size), "3456789");
  EXPECT_EQ(reader.ByteCount(), 10);
  reader.BackUp(2);
  EXPECT_EQ(reader.ByteCount(), 8);
  ASSERT_TRUE(reader.Next(&data, &size));
  EXPECT_EQ(std::string(static_cast<const char*>(data), size), "89");
  EXPECT_FALSE(reader.Next(&data, &size));
  EXPECT_FALSE(reader.Skip(1));
  ByteBuffer empty;
  ByteBufferReader empty_reader(empty);
  EXPECT_FALSE(empty_reader.Next(&data, &size));
}

}  // namespace
}  // namespace h2rpc
