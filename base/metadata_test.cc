#include "base/metadata.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"

namespace h2rpc {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

Pairs ToPairs(const Metadata& md) {
  Pairs out;
  for (Metadata::Entry e : md) out.emplace_back(e.key, e.value);
  return out;
}

TEST(MetadataTest, KeepsOrderAndDuplicates) {
  Metadata md;
  EXPECT_TRUE(md.empty());
  md.Add("b", "1");
  md.Add("a", "2");
  md.Add("b", "3");
  md.Add("c", "");
  EXPECT_FALSE(md.empty());
  ASSERT_EQ(md.size(), 4u);
  EXPECT_EQ(ToPairs(md),
            (Pairs{{"b", "1"}, {"a", "2"}, {"b", "3"}, {"c", ""}}));
  EXPECT_EQ(md[2].key, "b");
  EXPECT_EQ(md[2].value, "3");
  EXPECT_EQ(md.byte_size(), 7u);
}

TEST(MetadataTest, GetReturnsTheFirstExactMatch) {
  Metadata md;
  md.Add("key", "first");
  md.Add("key-2", "other");
  md.Add("key", "second");
  md.Add("empty", "");
  EXPECT_EQ(md.Get("key"), absl::string_view("first"));
  EXPECT_EQ(md.Get("key-2"), absl::string_view("other"));
  EXPECT_EQ(md.Get("empty"), absl::string_view(""));
  EXPECT_EQ(md.Get("ke"), absl::nullopt);
  EXPECT_EQ(md.Get("key-"), absl::nullopt);
  EXPECT_EQ(md.Get("KEY"), absl::nullopt);
  EXPECT_EQ(md.Get(""), absl::nullopt);
  // A key made of another entry's key and value bytes is not a match.
  EXPECT_EQ(md.Get("keyfirst"), absl::nullopt);
}

TEST(MetadataTest, BinaryValuesAreRawBytesIncludingNul) {
  const std::string raw("\0\x01\xFF\0x,", 6);
  Metadata md;
  md.Add("trace-bin", raw);
  md.Add("after", "v");
  ASSERT_EQ(md.size(), 2u);
  EXPECT_EQ(md[0].value, raw);
  EXPECT_EQ(md[0].value.size(), 6u);
  EXPECT_EQ(md.Get("trace-bin"), absl::string_view(raw));
  EXPECT_EQ(md[1].value, "v");
  EXPECT_TRUE(IsBinaryHeaderKey("trace-bin"));
  EXPECT_TRUE(IsBinaryHeaderKey("-bin"));
  EXPECT_FALSE(IsBinaryHeaderKey("trace-bin2"));
  EXPECT_FALSE(IsBinaryHeaderKey("binary"));
  EXPECT_FALSE(IsBinaryHeaderKey("trace-BIN"));
  EXPECT_FALSE(IsBinaryHeaderKey("bin"));
}

TEST(MetadataTest, AddWithoutReserveGrows) {
  // Shows the counter sees Metadata growth, so the zero counts below mean
  // something.
  Metadata md;
  h2rpc::testing::AllocationCounter counter;
  for (int i = 0; i < 100; ++i) md.Add("a-long-enough-key", "and-a-value");
  EXPECT_GT(counter.allocations(), 2);
}

TEST(MetadataTest, ReserveThenAddsMakeNoAllocation) {
  for (size_t n : {1u, 10u, 100u, 1000u}) {
    std::vector<std::string> keys;
    size_t bytes = 0;
    for (size_t i = 0; i < n; ++i) {
      keys.push_back(absl::StrCat("x-key-", i));
      bytes += keys.back().size() + 5;
    }
    Metadata md;
    h2rpc::testing::AllocationCounter counter;
    md.Reserve(n, bytes);
    EXPECT_LE(counter.allocations(), 2) << n;
    EXPECT_EQ(md.entry_capacity(), n);
    EXPECT_GE(md.byte_capacity(), bytes);
    counter.Reset();
    for (size_t i = 0; i < n; ++i) md.Add(keys[i], "value");
    EXPECT_EQ(counter.allocations(), 0) << n;
    EXPECT_EQ(md.size(), n);
    EXPECT_EQ(md.byte_size(), bytes);
    EXPECT_EQ(md[n - 1].key, keys[n - 1]);
    EXPECT_EQ(md[n - 1].value, "value");
  }
}

TEST(MetadataTest, ReserveIsOnTopOfWhatIsHeld) {
  Metadata md;
  md.Add("a", "1");
  md.Add("b", "2");
  md.Reserve(3, 100);
  EXPECT_GE(md.entry_capacity(), 5u);
  EXPECT_GE(md.byte_capacity(), 104u);
  const std::string key(16, 'k'), value(16, 'v');
  h2rpc::testing::AllocationCounter counter;
  for (int i = 0; i < 3; ++i) md.Add(key, value);
  EXPECT_EQ(counter.allocations(), 0);
  // Reserving what is already there allocates nothing.
  md.Clear();
  counter.Reset();
  md.Reserve(5, 100);
  EXPECT_EQ(counter.allocations(), 0);
}

TEST(MetadataTest, ClearKeepsCapacityAndReuseMakesNoAllocation) {
  Metadata md;
  for (int i = 0; i < 50; ++i) md.Add(absl::StrCat("key-", i), "some value");
  const size_t entry_capacity = md.entry_capacity();
  const size_t byte_capacity = md.byte_capacity();
  md.Clear();
  EXPECT_TRUE(md.empty());
  EXPECT_EQ(md.byte_size(), 0u);
  EXPECT_EQ(md.entry_capacity(), entry_capacity);
  EXPECT_EQ(md.byte_capacity(), byte_capacity);
  EXPECT_EQ(md.Get("key-0"), absl::nullopt);

  const std::string key = "key-xx";
  h2rpc::testing::AllocationCounter counter;
  for (int i = 0; i < 50; ++i) md.Add(key, "some value");
  EXPECT_EQ(counter.allocations(), 0);
  EXPECT_EQ(md.size(), 50u);
  EXPECT_EQ(md[49].value, "some value");
}

TEST(MetadataTest, AddUninitializedThenShrink) {
  Metadata md;
  md.Add("first", "1");
  char* out = md.AddUninitialized("data-bin", 8);
  ASSERT_NE(out, nullptr);
  // The space is there (and zeroed) before it is written.
  EXPECT_EQ(md[1].value, std::string(8, '\0'));
  std::memcpy(out, "abc\0e", 5);
  md.ShrinkLastValue(5);
  ASSERT_EQ(md.size(), 2u);
  EXPECT_EQ(md[1].key, "data-bin");
  EXPECT_EQ(md[1].value, absl::string_view("abc\0e", 5));
  EXPECT_EQ(md.byte_size(), 6u + 8 + 5);
  // The next entry starts right after the shrunk value.
  md.Add("next", "2");
  EXPECT_EQ(md[1].value, absl::string_view("abc\0e", 5));
  EXPECT_EQ(md[2].key, "next");
  EXPECT_EQ(md[2].value, "2");
  EXPECT_EQ(md.byte_size(), 6u + 8 + 5 + 5);

  // Shrinking to zero and to the same size.
  md.AddUninitialized("empty-bin", 3);
  md.ShrinkLastValue(3);
  EXPECT_EQ(md[3].value.size(), 3u);
  md.ShrinkLastValue(0);
  EXPECT_EQ(md[3].value, "");
  EXPECT_EQ(md[3].key, "empty-bin");
  // A zero-sized uninitialized value.
  md.AddUninitialized("zero-bin", 0);
  EXPECT_EQ(md[4].value, "");
  EXPECT_EQ(md.size(), 5u);
}

TEST(MetadataTest, AddUninitializedWithinReserveMakesNoAllocation) {
  Metadata md;
  md.Reserve(2, 100);
  h2rpc::testing::AllocationCounter counter;
  char* out = md.AddUninitialized("a-bin", 40);
  std::memset(out, 'x', 10);
  md.ShrinkLastValue(10);
  md.AddUninitialized("b-bin", 50);
  EXPECT_EQ(counter.allocations(), 0);
  EXPECT_EQ(md[0].value, std::string(10, 'x'));
}

TEST(MetadataDeathTest, ShrinkLastValueChecksItsPrecondition) {
  Metadata md;
  EXPECT_DEATH(md.ShrinkLastValue(0), "");
  md.Add("k", "abc");
  EXPECT_DEATH(md.ShrinkLastValue(4), "");
}

TEST(MetadataTest, AddMayCopyFromItself) {
  // Growth reallocates the storage the arguments point into.
  Metadata md;
  md.Add("key", "value");
  for (int i = 0; i < 12; ++i) {
    const Metadata::Entry last = md[md.size() - 1];
    md.Add(last.value, last.key);
  }
  md.AddUninitialized(md[0].key, 100);
  ASSERT_EQ(md.size(), 14u);
  EXPECT_EQ(md[11].key, "value");
  EXPECT_EQ(md[11].value, "key");
  EXPECT_EQ(md[12].key, "key");
  EXPECT_EQ(md[12].value, "value");
  EXPECT_EQ(md[13].key, "key");
}

TEST(MetadataTest, WorksWithStandardAlgorithms) {
  Metadata md;
  md.Add("a", "1");
  md.Add("b", "2");
  md.Add("b", "3");
  EXPECT_EQ(std::distance(md.begin(), md.end()), 3);
  auto it = std::find_if(md.begin(), md.end(),
                         [](Metadata::Entry e) { return e.value == "2"; });
  ASSERT_NE(it, md.end());
  EXPECT_EQ((*it).key, "b");
  EXPECT_EQ(std::count_if(md.begin(), md.end(),
                          [](Metadata::Entry e) { return e.key == "b"; }),
            2);
}

TEST(MetadataTest, CopiesAreIndependent) {
  Metadata md;
  md.Add("a", "1");
  Metadata copy = md;
  md.Clear();
  md.Add("b", "2");
  EXPECT_EQ(ToPairs(copy), (Pairs{{"a", "1"}}));
  Metadata moved = std::move(copy);
  EXPECT_EQ(ToPairs(moved), (Pairs{{"a", "1"}}));
}

TEST(MetadataValidationTest, Keys) {
  const struct {
    absl::string_view key;
    bool valid;
  } kCases[] = {
      {"a", true},
      {"x-user-id", true},
      {"0123456789", true},
      {"abcdefghijklmnopqrstuvwxyz", true},
      {"a_b.c-d", true},
      {"-", true},
      {"trace-bin", true},
      {"", false},
      {"Foo", false},
      {"x-User", false},
      {"A", false},
      {"x y", false},
      {" x", false},
      {":path", false},
      {"a:b", false},
      {"a/b", false},
      {"a\tb", false},
      {absl::string_view("a\0b", 3), false},
      {"caf\xC3\xA9", false},
      {"\x80", false},
      {"a,b", false},
      {"a=b", false},
      {"a@b", false},
  };
  for (const auto& c : kCases) {
    EXPECT_EQ(IsValidMetadataKey(c.key), c.valid) << "'" << c.key << "'";
  }
}

TEST(MetadataValidationTest, ReservedKeys) {
  const absl::string_view kReserved[] = {
      ":path",
      ":authority",
      ":status",
      ":anything",
      ":",
      "grpc-status",
      "grpc-message",
      "grpc-timeout",
      "grpc-foo",
      "grpc-",
      "grpc-trace-bin",
      "te",
      "content-type",
      "user-agent",
      "host",
      "connection",
      "keep-alive",
      "proxy-connection",
      "transfer-encoding",
      "upgrade",
  };
  for (absl::string_view key : kReserved) {
    EXPECT_TRUE(IsReservedMetadataKey(key)) << key;
  }
  const absl::string_view kFree[] = {
      "grpc-retry-pushback-ms",
      "",
      "grpc",
      "grpcfoo",
      "x-grpc-status",
      "tea",
      "t",
      "content-types",
      "content-length",
      "hostname",
      "x-host",
      "user-agents",
      "my-user-agent",
      "upgrade-x",
      "connections",
      "authorization",
      "cookie",
      "accept",
      "x-user-id",
      "trace-bin",
  };
  for (absl::string_view key : kFree) {
    EXPECT_FALSE(IsReservedMetadataKey(key)) << key;
  }
}

TEST(MetadataValidationTest, AsciiValues) {
  EXPECT_TRUE(IsValidAsciiMetadataValue(""));
  EXPECT_TRUE(IsValidAsciiMetadataValue(" "));
  EXPECT_TRUE(IsValidAsciiMetadataValue("~"));
  EXPECT_TRUE(IsValidAsciiMetadataValue("Bearer abc.DEF-123 ,;=\"'!"));
  std::string printable;
  for (int c = 0x20; c <= 0x7E; ++c) printable.push_back(static_cast<char>(c));
  EXPECT_TRUE(IsValidAsciiMetadataValue(printable));
  for (int c = 0; c < 256; ++c) {
    if (c >= 0x20 && c <= 0x7E) continue;
    const std::string value =
        absl::StrCat("ok", std::string(1, static_cast<char>(c)), "ok");
    EXPECT_FALSE(IsValidAsciiMetadataValue(value)) << c;
  }
  EXPECT_FALSE(IsValidAsciiMetadataValue("\t"));
  EXPECT_FALSE(IsValidAsciiMetadataValue("\x7F"));
  EXPECT_FALSE(IsValidAsciiMetadataValue("caf\xC3\xA9"));
  EXPECT_FALSE(IsValidAsciiMetadataValue(absl::string_view("\0", 1)));
}

Status ValidateOne(absl::string_view key, absl::string_view value) {
  Metadata md;
  md.Add("fine", "ok");
  md.Add(key, value);
  md.Add("also-fine", "ok");
  return ValidateOutgoingMetadata(md);
}

TEST(MetadataValidationTest, ValidateOutgoingMetadataNamesTheKey) {
  const struct {
    absl::string_view key;
    absl::string_view value;
    absl::string_view message;  // empty: OK
  } kCases[] = {
      {"x-user", "alice", ""},
      {"x-empty", "", ""},
      {"trace-bin", absl::string_view("\0\xFF\n\t", 4), ""},
      {"Foo", "v",
       "metadata key 'Foo' is invalid: keys may contain only [0-9a-z_.-]"},
      {"", "v",
       "metadata key '' is invalid: keys may contain only [0-9a-z_.-] and "
       "may not be empty"},
      {"a\nb", "v",
       "metadata key 'a\\nb' is invalid: keys may contain only [0-9a-z_.-]"},
      {":path", "/x",
       "metadata key ':path' is invalid: keys may contain only [0-9a-z_.-]"},
      {"grpc-foo", "v",
       "metadata key 'grpc-foo' is reserved for the transport"},
      {"grpc-status", "0",
       "metadata key 'grpc-status' is reserved for the transport"},
      {"te", "trailers", "metadata key 'te' is reserved for the transport"},
      {"host", "h", "metadata key 'host' is reserved for the transport"},
      {"user-agent", "me",
       "metadata key 'user-agent' is reserved for the transport"},
      {"x", "a\tb",
       "metadata value of key 'x' has a byte outside 0x20-0x7E (0x09 at "
       "offset 1); use a key ending in -bin for binary values"},
      {"x", "caf\xC3\xA9",
       "metadata value of key 'x' has a byte outside 0x20-0x7E (0xC3 at "
       "offset 3); use a key ending in -bin for binary values"},
      {"x", "\x7F",
       "metadata value of key 'x' has a byte outside 0x20-0x7E (0x7F at "
       "offset 0); use a key ending in -bin for binary values"},
  };
  for (const auto& c : kCases) {
    const Status status = ValidateOne(c.key, c.value);
    if (c.message.empty()) {
      EXPECT_TRUE(status.ok()) << c.key << ": " << status.ToString();
    } else {
      EXPECT_EQ(status.code(), StatusCode::kInternal) << c.key;
      EXPECT_EQ(status.message(), c.message);
    }
  }
}

TEST(MetadataValidationTest, ValidMetadataValidatesWithoutAllocating) {
  Metadata md;
  for (int i = 0; i < 100; ++i) {
    md.Add(absl::StrCat("x-key-", i), "value");
    md.Add(absl::StrCat("x-key-", i, "-bin"), std::string("\0\1\2", 3));
  }
  h2rpc::testing::AllocationCounter counter;
  EXPECT_TRUE(ValidateOutgoingMetadata(md).ok());
  EXPECT_TRUE(ValidateOutgoingMetadata(Metadata()).ok());
  EXPECT_EQ(counter.allocations(), 0);
}

TEST(MetadataValidationTest, ReportsTheFirstBadEntry) {
  Metadata md;
  md.Add("ok", "v");
  md.Add("grpc-first", "v");
  md.Add("Second", "v");
  EXPECT_EQ(ValidateOutgoingMetadata(md).message(),
            "metadata key 'grpc-first' is reserved for the transport");
}

}  // namespace
}  // namespace h2rpc
