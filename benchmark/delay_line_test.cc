#include "benchmark/delay_line.h"

#include <string>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace h2rpc::benchmark {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1000);

// Takes everything Ready() offers at `now`.
std::string Drain(DelayLine& line, absl::Time now) {
  std::string out;
  for (absl::string_view ready = line.Ready(now); !ready.empty();
       ready = line.Ready(now)) {
    out.append(ready.data(), ready.size());
    line.Consume(ready.size());
  }
  return out;
}

TEST(DelayLineTest, BytesLeaveAfterTheDelay) {
  DelayLine::Options options;
  options.delay = absl::Milliseconds(25);
  DelayLine line(options);
  line.Push(kStart, "hello");
  line.Push(kStart + absl::Milliseconds(10), " world");
  EXPECT_EQ(line.NextRelease(), kStart + absl::Milliseconds(25));
  EXPECT_EQ(Drain(line, kStart + absl::Milliseconds(24)), "");
  EXPECT_EQ(Drain(line, kStart + absl::Milliseconds(25)), "hello");
  EXPECT_EQ(line.NextRelease(), kStart + absl::Milliseconds(35));
  EXPECT_EQ(Drain(line, kStart + absl::Milliseconds(35)), " world");
  EXPECT_EQ(line.queued_bytes(), 0u);
  EXPECT_EQ(line.NextRelease(), absl::InfiniteFuture());
}

TEST(DelayLineTest, PartialWritesKeepTheRest) {
  DelayLine line(DelayLine::Options{});
  line.Push(kStart, "abcdef");
  EXPECT_EQ(line.Ready(kStart), "abcdef");
  line.Consume(2);
  EXPECT_EQ(line.queued_bytes(), 4u);
  EXPECT_EQ(Drain(line, kStart), "cdef");
}

TEST(DelayLineTest, AReusedBufferHoldsOnlyItsNewBytes) {
  DelayLine line(DelayLine::Options{});
  line.Push(kStart, "a longer first read");
  EXPECT_EQ(Drain(line, kStart), "a longer first read");
  line.Push(kStart, "short");  // into the first read's buffer
  line.Push(kStart, "and new");
  EXPECT_EQ(line.queued_bytes(), 12u);
  EXPECT_EQ(Drain(line, kStart), "shortand new");
}

TEST(DelayLineTest, TheRateSpreadsBytesOverTime) {
  DelayLine::Options options;
  options.delay = absl::Milliseconds(10);
  options.bytes_per_second = 16 << 20;  // a 16 KiB piece per ~1 ms
  DelayLine line(options);
  line.Push(kStart, std::string(64 << 10, 'x'));  // four pieces
  // The first piece is carried in 1/1024 s, then delayed.
  const absl::Duration piece = absl::Seconds(1.0 / 1024);
  EXPECT_EQ(line.NextRelease(), kStart + piece + absl::Milliseconds(10));
  EXPECT_EQ(Drain(line, kStart + 2 * piece + absl::Milliseconds(10)).size(),
            32u << 10);
  EXPECT_EQ(Drain(line, kStart + 4 * piece + absl::Milliseconds(10)).size(),
            32u << 10);
  // A later push waits for the link only if it is still busy.
  line.Push(kStart + absl::Seconds(1), "y");
  EXPECT_LT(line.NextRelease(),
            kStart + absl::Seconds(1) + piece + absl::Milliseconds(10));
}

TEST(DelayLineTest, JitterNeverReorders) {
  DelayLine::Options options;
  options.delay = absl::Milliseconds(5);
  options.jitter = absl::Milliseconds(20);
  DelayLine line(options);
  absl::Time last = absl::InfinitePast();
  std::string expected;
  for (int i = 0; i < 100; ++i) {
    const absl::Time now = kStart + absl::Microseconds(100 * i);
    const std::string byte(1, static_cast<char>('a' + i % 26));
    line.Push(now, byte);
    expected += byte;
  }
  std::string out;
  while (line.queued_bytes() > 0) {
    const absl::Time release = line.NextRelease();
    EXPECT_GE(release, last);
    EXPECT_LE(release, kStart + absl::Milliseconds(40));
    last = release;
    out += Drain(line, release);
  }
  EXPECT_EQ(out, expected);
}

TEST(DelayLineTest, TheEndFollowsTheBytesBeforeIt) {
  DelayLine::Options options;
  options.delay = absl::Milliseconds(5);
  DelayLine line(options);
  line.Push(kStart, "last");
  line.PushEnd(kStart + absl::Milliseconds(1));
  EXPECT_FALSE(line.ended(kStart + absl::Milliseconds(10)));  // bytes first
  EXPECT_EQ(Drain(line, kStart + absl::Milliseconds(5)), "last");
  EXPECT_FALSE(line.ended(kStart + absl::Milliseconds(5)));
  EXPECT_TRUE(line.ended(kStart + absl::Milliseconds(6)));
}

}  // namespace
}  // namespace h2rpc::benchmark
