#include "rpc/internal/tracing/trace_context.h"

#include <string>

#include "gtest/gtest.h"

namespace h2rpc::internal {
namespace {

constexpr char kValid[] =
    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

TEST(TraceparentTest, ParsesAndFormatsVersion00) {
  TraceContext context;
  ASSERT_TRUE(ParseTraceparent(kValid, &context));
  EXPECT_EQ(context.trace_id[0], 0x0a);
  EXPECT_EQ(context.trace_id[15], 0x9c);
  EXPECT_EQ(context.span_id[0], 0xb7);
  EXPECT_EQ(context.span_id[7], 0x31);
  EXPECT_TRUE(context.sampled());
  char out[kTraceparentSize];
  FormatTraceparent(context, out);
  EXPECT_EQ(std::string(out, kTraceparentSize), kValid);
}

TEST(TraceparentTest, AcceptsSurroundingWhitespaceAndLaterVersions) {
  TraceContext context;
  EXPECT_TRUE(ParseTraceparent(std::string(" \t") + kValid + "\t ", &context));
  EXPECT_TRUE(ParseTraceparent(
      "cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-future",
      &context));
  EXPECT_TRUE(ParseTraceparent(
      "cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", &context));
  // Unknown flags are cleared; the random flag stays.
  ASSERT_TRUE(ParseTraceparent(
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-ff", &context));
  EXPECT_EQ(context.flags, 0x03);
}

TEST(TraceparentTest, RejectsWhatW3cSaysToRestart) {
  const char* kInvalid[] = {
      "",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01.",
      "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      "cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01.what",
      "00-00000000000000000000000000000000-b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
      "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319-b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319cc-b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333x-01",
      "0x-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0g",
  };
  for (const char* value : kInvalid) {
    TraceContext context;
    context.flags = 0x42;
    EXPECT_FALSE(ParseTraceparent(value, &context)) << value;
    EXPECT_EQ(context.flags, 0x42) << "changed by " << value;
  }
}

TEST(TracestateTest, KeepsWellFormedListsAndDropsOthers) {
  EXPECT_TRUE(ValidTracestate(""));
  EXPECT_TRUE(ValidTracestate("congo=t61rcWkgMzE"));
  EXPECT_TRUE(ValidTracestate("rojo=00f067aa0ba902b7, congo=t61rcWkgMzE"));
  EXPECT_TRUE(ValidTracestate("tenant@vendor=a b,, ,x=y"));
  EXPECT_FALSE(ValidTracestate("Rojo=1"));
  EXPECT_FALSE(ValidTracestate("rojo"));
  EXPECT_FALSE(ValidTracestate("rojo=a=b"));
  EXPECT_FALSE(ValidTracestate("rojo="));
  std::string members;
  for (int i = 0; i < 32; ++i) members += "k" + std::to_string(i) + "=v,";
  members.pop_back();
  EXPECT_TRUE(ValidTracestate(members));
  EXPECT_FALSE(ValidTracestate(members + ",k32=v"));
  EXPECT_FALSE(ValidTracestate("k=" + std::string(kMaxTracestateSize, 'v')));
}

TEST(TraceIdsTest, AreRandomAndNeverZero) {
  const TraceId a = NewTraceId();
  const TraceId b = NewTraceId();
  EXPECT_NE(a, b);
  EXPECT_NE(a, TraceId{});
  EXPECT_NE(NewSpanId(), SpanId{});
}

TEST(SamplingTest, RatioDecidesByTheTraceIdsLowBytes) {
  TraceId low{};
  low[15] = 1;
  TraceId high{};
  high[8] = 0x7f;
  EXPECT_TRUE(SampledByRatio(low, 0.01));
  EXPECT_FALSE(SampledByRatio(high, 0.01));
  EXPECT_TRUE(SampledByRatio(high, 1.0));
  EXPECT_FALSE(SampledByRatio(low, 0.0));
  int sampled = 0;
  for (int i = 0; i < 10000; ++i) sampled += SampledByRatio(NewTraceId(), 0.1);
  EXPECT_GT(sampled, 800);
  EXPECT_LT(sampled, 1200);
}

}  // namespace
}  // namespace h2rpc::internal
