// Tracer's batch span processor (OpenTelemetry's BatchSpanProcessor) with a
// fake exporter recording the batches it gets: the batch size bound, drops
// when the queue is full, ForceFlush, the export on the schedule delay, a
// failing or late exporter, the destructor's flush and its bound, and the
// checks of TracerOptions.

#include "rpc/tracing.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/internal/common/misuse.h"
#include "rpc/status.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using ::h2rpc::testing::kHangTimeout;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::SizeIs;

// Records the names of the spans of each batch. Block() makes Export wait
// (after recording its batch) until Unblock(), so a test can hold the export
// thread and fill the queue.
class FakeExporter : public SpanExporter {
 public:
  Status Export(const std::vector<SpanData>& spans) override {
    std::function<void()> hook;
    Status result;
    {
      MutexLock lock(&mu_);
      std::vector<std::string> names;
      for (const SpanData& span : spans) names.push_back(span.name);
      batches_.push_back(std::move(names));
      times_.push_back(absl::Now());
      spans_ += spans.size();
      changed_.SignalAll();
      while (blocked_) changed_.Wait(&mu_);
      hook = hook_;
      result = result_;
    }
    if (hook) hook();
    return result;
  }

  void Block() {
    MutexLock lock(&mu_);
    blocked_ = true;
  }
  void Unblock() {
    MutexLock lock(&mu_);
    blocked_ = false;
    changed_.SignalAll();
  }
  void set_result(Status result) {
    MutexLock lock(&mu_);
    result_ = std::move(result);
  }
  // Runs at the end of each Export, on the export thread.
  void set_hook(std::function<void()> hook) {
    MutexLock lock(&mu_);
    hook_ = std::move(hook);
  }

  // Waits until Export has been given `batches` batches (true) or for
  // kHangTimeout (false).
  bool WaitForBatches(size_t batches) {
    const absl::Time give_up = absl::Now() + kHangTimeout;
    MutexLock lock(&mu_);
    while (batches_.size() < batches) {
      const absl::Duration left = give_up - absl::Now();
      if (left <= absl::ZeroDuration()) return false;
      changed_.WaitWithTimeout(&mu_, left);
    }
    return true;
  }

  std::vector<std::vector<std::string>> batches() {
    MutexLock lock(&mu_);
    return batches_;
  }
  std::vector<absl::Time> times() {
    MutexLock lock(&mu_);
    return times_;
  }
  size_t spans() {
    MutexLock lock(&mu_);
    return spans_;
  }

 private:
  Mutex mu_;
  CondVar changed_;  // a batch arrived, or Unblock()
  bool blocked_ ABSL_GUARDED_BY(mu_) = false;
  Status result_ ABSL_GUARDED_BY(mu_);
  std::function<void()> hook_ ABSL_GUARDED_BY(mu_);
  std::vector<std::vector<std::string>> batches_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Time> times_ ABSL_GUARDED_BY(mu_);
  size_t spans_ ABSL_GUARDED_BY(mu_) = 0;
};

SpanData Span(std::string name) {
  SpanData span;
  span.trace_id[0] = 1;
  span.span_id[0] = 2;
  span.name = std::move(name);
  return span;
}

void Submit(Tracer& tracer, std::string name) {
  internal::TracerAccess::Submit(tracer, Span(std::move(name)));
}

// Options exporting only full batches and on ForceFlush.
TracerOptions Options(std::shared_ptr<FakeExporter> exporter) {
  TracerOptions options;
  options.exporter = std::move(exporter);
  options.schedule_delay = absl::InfiniteDuration();
  return options;
}

absl::Time HangDeadline() { return absl::Now() + kHangTimeout; }

bool MisuseIsFatalByDefault() {
#ifdef NDEBUG
  return false;
#else
  return true;
#endif
}

TEST(TracerTest, ExportsFullBatchesAtOnceAndTheRestOnForceFlush) {
  auto exporter = std::make_shared<FakeExporter>();
  TracerOptions options = Options(exporter);
  options.max_export_batch_size = 3;
  Tracer tracer(options);
  for (int i = 0; i < 10; ++i) Submit(tracer, absl::StrCat("s", i));
  // Three full batches go without a flush (the schedule delay is infinite).
  ASSERT_TRUE(exporter->WaitForBatches(3));
  ASSERT_TRUE(tracer.ForceFlush(HangDeadline()));
  EXPECT_THAT(
      exporter->batches(),
      ElementsAre(ElementsAre("s0", "s1", "s2"), ElementsAre("s3", "s4", "s5"),
                  ElementsAre("s6", "s7", "s8"), ElementsAre("s9")));
  const Tracer::Stats stats = tracer.stats();
  EXPECT_EQ(stats.ended, 10u);
  EXPECT_EQ(stats.exported, 10u);
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_EQ(stats.failed, 0u);
}

TEST(TracerTest, AFullQueueDropsAndCountsSpans) {
  auto exporter = std::make_shared<FakeExporter>();
  TracerOptions options = Options(exporter);
  options.max_queue_size = 4;
  options.max_export_batch_size = 2;
  Tracer tracer(options);
  exporter->Block();
  // A full batch: the export thread takes it and blocks in Export, the
  // queue empty.
  Submit(tracer, "a0");
  Submit(tracer, "a1");
  ASSERT_TRUE(exporter->WaitForBatches(1));
  // Four fill the queue; three more find it full.
  for (int i = 0; i < 7; ++i) Submit(tracer, absl::StrCat("b", i));
  Tracer::Stats stats = tracer.stats();
  EXPECT_EQ(stats.ended, 9u);
  EXPECT_EQ(stats.dropped, 3u);
  EXPECT_EQ(stats.exported, 0u);

  exporter->Unblock();
  ASSERT_TRUE(tracer.ForceFlush(HangDeadline()));
  EXPECT_THAT(exporter->batches(),
              ElementsAre(ElementsAre("a0", "a1"), ElementsAre("b0", "b1"),
                          ElementsAre("b2", "b3")));
  stats = tracer.stats();
  EXPECT_EQ(stats.ended, 9u);
  EXPECT_EQ(stats.exported, 6u);
  EXPECT_EQ(stats.dropped, 3u);
  EXPECT_EQ(stats.failed, 0u);
}

TEST(TracerTest, ForceFlushExportsWhatIsQueuedAtOnce) {
  auto exporter = std::make_shared<FakeExporter>();
  Tracer tracer(Options(exporter));
  // Nothing queued: nothing to wait for, no export.
  EXPECT_TRUE(tracer.ForceFlush(absl::Now()));
  for (int i = 0; i < 5; ++i) Submit(tracer, absl::StrCat("s", i));
  ASSERT_TRUE(tracer.ForceFlush(HangDeadline()));
  EXPECT_THAT(exporter->batches(),
              ElementsAre(ElementsAre("s0", "s1", "s2", "s3", "s4")));
  EXPECT_EQ(tracer.stats().exported, 5u);
  EXPECT_TRUE(tracer.ForceFlush(absl::Now()));
  EXPECT_THAT(exporter->batches(), SizeIs(1));
}

TEST(TracerTest, ForceFlushGivesUpAtItsDeadline) {
  auto exporter = std::make_shared<FakeExporter>();
  Tracer tracer(Options(exporter));
  exporter->Block();
  Submit(tracer, "s0");
  EXPECT_FALSE(tracer.ForceFlush(absl::Now() + absl::Milliseconds(20)));
  // The flush goes on after the deadline: the span is with the exporter.
  ASSERT_TRUE(exporter->WaitForBatches(1));
  EXPECT_FALSE(tracer.ForceFlush(absl::Now()));
  exporter->Unblock();
  EXPECT_TRUE(tracer.ForceFlush(HangDeadline()));
  EXPECT_EQ(tracer.stats().exported, 1u);
}

TEST(TracerTest, ForceFlushFromExportReturnsFalseAtOnce) {
  Mutex mu;
  std::vector<bool> results;
  auto exporter = std::make_shared<FakeExporter>();
  Tracer tracer(Options(exporter));
  exporter->set_hook([&] {
    const bool result = tracer.ForceFlush(HangDeadline());
    MutexLock lock(&mu);
    results.push_back(result);
  });
  Submit(tracer, "s0");
  ASSERT_TRUE(tracer.ForceFlush(HangDeadline()));
  MutexLock lock(&mu);
  EXPECT_THAT(results, ElementsAre(false));
}

TEST(TracerTest, ExportsAPartialBatchAfterTheScheduleDelay) {
  auto exporter = std::make_shared<FakeExporter>();
  TracerOptions options = Options(exporter);
  options.schedule_delay = absl::Milliseconds(50);
  const absl::Time constructed = absl::Now();
  Tracer tracer(options);
  Submit(tracer, "s0");
  Submit(tracer, "s1");
  // No flush, no full batch: the delay's timer sends them.
  ASSERT_TRUE(exporter->WaitForBatches(1));
  EXPECT_THAT(exporter->batches(), ElementsAre(ElementsAre("s0", "s1")));
  EXPECT_GE(exporter->times()[0] - constructed, options.schedule_delay);
  // And the next ones a delay after that export.
  Submit(tracer, "s2");
  ASSERT_TRUE(exporter->WaitForBatches(2));
  EXPECT_THAT(exporter->batches()[1], ElementsAre("s2"));
  EXPECT_GE(exporter->times()[1] - exporter->times()[0],
            options.schedule_delay);
  EXPECT_TRUE(
      ::h2rpc::testing::WaitFor([&] { return tracer.stats().exported == 3; }));
}

TEST(TracerTest, AFailingExporterCountsItsSpansAsFailed) {
  auto exporter = std::make_shared<FakeExporter>();
  exporter->set_result(Status(StatusCode::kUnavailable, "collector down"));
  TracerOptions options = Options(exporter);
  options.max_export_batch_size = 2;
  Tracer tracer(options);
  for (int i = 0; i < 3; ++i) Submit(tracer, absl::StrCat("s", i));
  // Failed spans are not retried.
  ASSERT_TRUE(tracer.ForceFlush(HangDeadline()));
  EXPECT_THAT(exporter->batches(), ElementsAre(SizeIs(2), SizeIs(1)));
  const Tracer::Stats stats = tracer.stats();
  EXPECT_EQ(stats.ended, 3u);
  EXPECT_EQ(stats.failed, 3u);
  EXPECT_EQ(stats.exported, 0u);
}

TEST(TracerTest, AnExportReturningAfterExportTimeoutCountsAsFailed) {
  auto exporter = std::make_shared<FakeExporter>();
  // A slow exporter is what is tested: its Export lasts at least 20 ms,
  // however loaded the machine, against an export_timeout of 1 ms.
  exporter->set_hook([] { absl::SleepFor(absl::Milliseconds(20)); });
  TracerOptions options = Options(exporter);
  options.export_timeout = absl::Milliseconds(1);
  Tracer tracer(options);
  Submit(tracer, "s0");
  ASSERT_TRUE(tracer.ForceFlush(HangDeadline()));
  EXPECT_EQ(tracer.stats().failed, 1u);
  EXPECT_EQ(tracer.stats().exported, 0u);
}

TEST(TracerTest, TheDestructorExportsWhatIsQueued) {
  auto exporter = std::make_shared<FakeExporter>();
  TracerOptions options = Options(exporter);
  options.max_export_batch_size = 4;
  {
    Tracer tracer(options);
    exporter->Block();
    for (int i = 0; i < 4; ++i) Submit(tracer, absl::StrCat("a", i));
    ASSERT_TRUE(exporter->WaitForBatches(1));
    for (int i = 0; i < 6; ++i) Submit(tracer, absl::StrCat("b", i));
    exporter->Unblock();
  }
  EXPECT_THAT(exporter->batches(),
              ElementsAre(SizeIs(4), ElementsAre("b0", "b1", "b2", "b3"),
                          ElementsAre("b4", "b5")));
}

TEST(TracerTest, TheDestructorStartsNoExportAfterExportTimeout) {
  auto exporter = std::make_shared<FakeExporter>();
  // A slow exporter is what is tested: each Export lasts at least 30 ms, so
  // however loaded the machine, at most two start within the destructor's
  // 50 ms (a slower machine starts fewer, never more).
  exporter->set_hook([] { absl::SleepFor(absl::Milliseconds(30)); });
  TracerOptions options = Options(exporter);
  options.max_export_batch_size = 1;
  options.export_timeout = absl::Milliseconds(50);
  {
    Tracer tracer(options);
    exporter->Block();
    Submit(tracer, "s0");
    ASSERT_TRUE(exporter->WaitForBatches(1));
    for (int i = 1; i < 20; ++i) Submit(tracer, absl::StrCat("s", i));
    exporter->Unblock();
  }
  // The first batch before the destructor, at most two more within its
  // 50 ms: far from the 20 queued.
  EXPECT_GE(exporter->spans(), 1u);
  EXPECT_LT(exporter->spans(), 10u);
}

TEST(TracerTest, SubmitsFromManyThreadsAreAllAccountedFor) {
  auto exporter = std::make_shared<FakeExporter>();
  TracerOptions options = Options(exporter);
  options.max_queue_size = 64;
  options.max_export_batch_size = 8;
  options.schedule_delay = absl::Milliseconds(1);
  Tracer tracer(options);
  constexpr int kThreads = 4;
  constexpr int kSpans = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&tracer, t] {
      for (int i = 0; i < kSpans; ++i) {
        Submit(tracer, absl::StrCat(t, ".", i));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(tracer.ForceFlush(HangDeadline()));
  const Tracer::Stats stats = tracer.stats();
  EXPECT_EQ(stats.ended, uint64_t{kThreads * kSpans});
  EXPECT_EQ(stats.exported + stats.dropped, stats.ended);
  EXPECT_EQ(stats.exported, exporter->spans());
  EXPECT_THAT(exporter->batches(), Each(SizeIs(::testing::Le(8u))));
}

TEST(TracerOptionsTest, Defaults) {
  const TracerOptions options;
  EXPECT_EQ(options.exporter, nullptr);
  EXPECT_EQ(options.sampling_probability, 1.0);
  EXPECT_EQ(options.max_queue_size, 2048u);
  EXPECT_EQ(options.max_export_batch_size, 512u);
  EXPECT_EQ(options.schedule_delay, absl::Seconds(5));
  EXPECT_EQ(options.export_timeout, absl::Seconds(30));
}

TEST(TracerMisuseTest, ANullExporterAbortsWhenMisuseIsFatal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  internal::SetMisuseIsFatalForTest(true);
  EXPECT_DEATH(Tracer{TracerOptions()},
               "API misuse: TracerOptions::exporter is null");
  internal::SetMisuseIsFatalForTest(MisuseIsFatalByDefault());
}

TEST(TracerMisuseTest, WithoutExporterEverySpanFails) {
  internal::SetMisuseIsFatalForTest(false);
  {
    Tracer tracer{TracerOptions()};
    Submit(tracer, "s0");
    Submit(tracer, "s1");
    EXPECT_TRUE(tracer.ForceFlush(absl::Now()));
    const Tracer::Stats stats = tracer.stats();
    EXPECT_EQ(stats.ended, 2u);
    EXPECT_EQ(stats.failed, 2u);
    EXPECT_EQ(stats.exported, 0u);
  }
  internal::SetMisuseIsFatalForTest(MisuseIsFatalByDefault());
}

TEST(TracerMisuseTest, AnOptionOutOfRangeAbortsWhenMisuseIsFatal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  internal::SetMisuseIsFatalForTest(true);
  TracerOptions options = Options(std::make_shared<FakeExporter>());
  options.max_queue_size = 10;
  options.max_export_batch_size = 11;
  EXPECT_DEATH(Tracer{options},
               "API misuse: TracerOptions::max_export_batch_size is 11; it "
               "must be at most max_queue_size \\(10\\)");
  internal::SetMisuseIsFatalForTest(MisuseIsFatalByDefault());
}

TEST(TracerMisuseTest, OptionsOutOfRangeAreReplaced) {
  internal::SetMisuseIsFatalForTest(false);
  {
    TracerOptions options = Options(std::make_shared<FakeExporter>());
    options.sampling_probability = 1.5;
    options.max_queue_size = 10;
    options.max_export_batch_size = 11;
    options.schedule_delay = absl::ZeroDuration();
    options.export_timeout = -absl::Seconds(1);
    Tracer tracer(options);
    EXPECT_EQ(tracer.options().sampling_probability, 1.0);
    EXPECT_EQ(tracer.options().max_queue_size, 10u);
    EXPECT_EQ(tracer.options().max_export_batch_size, 10u);
    EXPECT_EQ(tracer.options().schedule_delay, absl::Seconds(5));
    EXPECT_EQ(tracer.options().export_timeout, absl::Seconds(30));
  }
  {
    TracerOptions options = Options(std::make_shared<FakeExporter>());
    options.sampling_probability = -0.5;
    options.max_queue_size = 0;
    options.max_export_batch_size = 0;
    Tracer tracer(options);
    EXPECT_EQ(tracer.options().sampling_probability, 0.0);
    EXPECT_EQ(tracer.options().max_queue_size, 2048u);
    EXPECT_EQ(tracer.options().max_export_batch_size, 512u);
  }
  internal::SetMisuseIsFatalForTest(MisuseIsFatalByDefault());
}

}  // namespace
}  // namespace h2rpc
