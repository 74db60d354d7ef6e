#include "transport/core/header_list.h"

#include <string>

#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"

namespace h2rpc::transport {
namespace {

using ::h2rpc::testing::AllocationCounter;

std::string Name(const nghttp2_nv& nv) {
  return std::string(reinterpret_cast<char*>(nv.name), nv.namelen);
}
std::string Value(const nghttp2_nv& nv) {
  return std::string(reinterpret_cast<char*>(nv.value), nv.valuelen);
}

TEST(HeaderListTest, PointsAtCallerStorageWithoutCopying) {
  const std::string value = "localhost:443";
  HeaderList list;
  list.Start(1, 0);
  list.Add(":authority", value);
  ASSERT_EQ(list.size(), 1u);
  const nghttp2_nv& nv = list.fields()[0];
  EXPECT_EQ(reinterpret_cast<const char*>(nv.value), value.data());
  EXPECT_EQ(nv.flags,
            NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE);
}

TEST(HeaderListTest, DecimalValuesHaveExactDigits) {
  for (uint32_t value : {0u, 9u, 10u, 99u, 100u, 4294967295u}) {
    HeaderList list;
    list.Start(1, HeaderList::DecimalDigits(value));
    list.AddDecimal("grpc-status", value);
    EXPECT_EQ(Value(list.fields()[0]), std::to_string(value));
  }
  EXPECT_EQ(HeaderList::DecimalDigits(0), 1u);
  EXPECT_EQ(HeaderList::DecimalDigits(4294967295u), 10u);
}

TEST(HeaderListTest, ScratchValuesStayValidAsTheListGrows) {
  HeaderList list;
  list.Start(3, 3 + 300 + 1);
  list.AddWithScratchValue("a", "abc");
  list.AddWithScratchValue("b", std::string(300, 'x'));
  list.AddDecimal("c", 7, NGHTTP2_NV_FLAG_NO_INDEX);
  EXPECT_EQ(Value(list.fields()[0]), "abc");
  EXPECT_EQ(Value(list.fields()[1]), std::string(300, 'x'));
  EXPECT_EQ(Value(list.fields()[2]), "7");
  EXPECT_TRUE(list.fields()[2].flags & NGHTTP2_NV_FLAG_NO_INDEX);
}

TEST(HeaderListTest, MetadataBinaryValuesAreBase64EncodedIntoScratch) {
  Metadata md;
  md.Add("a-bin", "\xff\xfe\xfd");
  md.Add("b", "text");
  EXPECT_EQ(HeaderList::MetadataScratchBytes(md), 4u);
  HeaderList list;
  list.Start(md.size(), HeaderList::MetadataScratchBytes(md));
  list.AddMetadata(md);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(Name(list.fields()[0]), "a-bin");
  EXPECT_EQ(Value(list.fields()[0]), "//79");
  EXPECT_EQ(Value(list.fields()[1]), "text");
}

TEST(HeaderListTest, RestartingKeepsCapacity) {
  HeaderList list;
  list.Start(8, 64);
  for (int i = 0; i < 8; ++i) list.AddWithScratchValue("k", "12345678");
  AllocationCounter counter;
  list.Start(4, 32);
  for (int i = 0; i < 4; ++i) list.AddWithScratchValue("k", "12345678");
  EXPECT_EQ(counter.allocations(), 0);
  EXPECT_EQ(list.size(), 4u);
  EXPECT_EQ(list.capacity(), 8u);
}

}  // namespace
}  // namespace h2rpc::transport
