// ServerLoop's use of the server's worker pool at shutdown: once the loop
// forgets the workers, it no longer touches the pool, while the tasks it
// handed over before still run (and post their completion to the loop)
// before the pool is gone.
#include "rpc/internal/server_loop.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "rpc/internal/member_task.h"
#include "rpc/internal/server_core.h"
#include "rpc/internal/worker_pool.h"
#include "rpc/server.h"
#include "rpc/status.h"
#include "test/util/jitter.h"
#include "test/util/notification.h"
#include "test/util/wait_for.h"
#include "transport/io/event_loop.h"

namespace h2rpc::internal {
namespace {

using ::h2rpc::testing::Jitter;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::Notification;
using ::h2rpc::testing::WaitFor;

// Set while no server exists; a task step taken then is late.
std::atomic<bool> no_server{true};
std::atomic<int> late_steps{0};

// A synchronous handler's task as the server's calls use it: runs on a
// worker, then posts its completion to the loop that handed it over. May be
// handed over again once completed. Counts each step.
class LoopTask final : public WorkerTask {
 public:
  explicit LoopTask(ServerLoop* loop) : loop_(loop) {}

  void Run() override { Step(&runs_); }
  void Done() override {
    Step(&dones_);
    loop_->loop().Post(&completion_);
  }

  // Loop thread (the submitter's).
  void CountAccepted() { ++accepted_; }
  bool available() const { return completions_.load() == accepted_; }

  // Once the server is gone.
  int accepted() const { return accepted_; }
  int runs() const { return runs_.load(); }
  int dones() const { return dones_.load(); }
  int completions() const { return completions_.load(); }

 private:
  static void Step(std::atomic<int>* count) {
    if (no_server.load()) late_steps.fetch_add(1);
    count->fetch_add(1);
  }
  void Complete() { Step(&completions_); }

  ServerLoop* const loop_;
  int accepted_ = 0;
  std::atomic<int> runs_{0};
  std::atomic<int> dones_{0};
  std::atomic<int> completions_{0};
  MemberTask<LoopTask, &LoopTask::Complete> completion_{this};
};

// On a loop, as the loop's calls would: hands its tasks (those not in use)
// to the workers, one to three per run, and posts itself again, until the
// loop refuses a task because it forgot the workers.
class Submitter final : public transport::io::Task {
 public:
  Submitter(ServerLoop* loop, uint32_t seed) : loop_(loop), random_(seed) {
    for (int i = 0; i < 8; ++i) {
      tasks_.push_back(std::make_unique<LoopTask>(loop));
    }
  }

  void Run() override {
    const int batch = 1 + static_cast<int>(random_() % 3);
    for (int i = 0; i < batch; ++i) {
      LoopTask& task = *tasks_[next_];
      if (!task.available()) break;
      next_ = (next_ + 1) % tasks_.size();
      const Status status = loop_->SubmitToWorkers(&task);
      if (status.ok()) {
        task.CountAccepted();
      } else if (status.code() == StatusCode::kUnavailable) {
        EXPECT_EQ(status.message(), "the server is shutting down");
        refused_for_shutdown_.store(true);
        return;
      } else {
        EXPECT_EQ(status.code(), StatusCode::kResourceExhausted)
            << status.ToString();
      }
    }
    runs_.fetch_add(1);
    loop_->loop().Post(this);
  }

  ServerLoop* loop() const { return loop_; }
  int runs() const { return runs_.load(); }
  // Once the server is gone.
  bool refused_for_shutdown() const { return refused_for_shutdown_.load(); }
  const std::vector<std::unique_ptr<LoopTask>>& tasks() const { return tasks_; }

 private:
  ServerLoop* const loop_;
  std::mt19937 random_;
  std::vector<std::unique_ptr<LoopTask>> tasks_;
  size_t next_ = 0;
  std::atomic<int> runs_{0};
  std::atomic<bool> refused_for_shutdown_{false};
};

// A server with `num_loops` loops, no ports and no methods.
std::unique_ptr<ServerCore> StartCore(int num_loops, int min_threads,
                                      int max_threads) {
  ServerOptions options;
  options.num_loops = num_loops;
  options.min_sync_threads = min_threads;
  options.max_sync_threads = max_threads;
  Status status;
  std::unique_ptr<ServerCore> core = ServerCore::Start(
      std::move(options), {}, ServerCore::MethodMap(), &status);
  EXPECT_TRUE(status.ok()) << status.ToString();
  if (core != nullptr) no_server.store(false);
  return core;
}

// Destroys `core` (Shutdown, which forgets the workers, destroys the pool,
// then the loops) and marks the server gone.
void DestroyCore(std::unique_ptr<ServerCore>* core) {
  core->reset();
  no_server.store(true);
}

TEST(ServerLoopTest, SubmitToWorkersAfterForgetWorkersIsRefused) {
  std::unique_ptr<ServerCore> core =
      StartCore(/*num_loops=*/1, /*min_threads=*/1, /*max_threads=*/1);
  ASSERT_NE(core, nullptr);
  ServerLoop* loop = core->NextLoop();
  loop->ForgetWorkers();
  LoopTask task(loop);
  Status status;
  Notification submitted;
  loop->loop().Post([&] {
    status = loop->SubmitToWorkers(&task);
    submitted.Notify();
  });
  ASSERT_TRUE(submitted.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "the server is shutting down");
  DestroyCore(&core);
  EXPECT_EQ(task.runs(), 0);
  EXPECT_EQ(task.dones(), 0);
  EXPECT_EQ(late_steps.load(), 0);
}

TEST(ServerLoopTest, ShutdownWhileLoopsHandTasksToWorkers) {
  // Two loops keep handing tasks over (their wake-ups due at the end of
  // each iteration) until the server shuts down, at a different moment each
  // round; they stop at the first refusal for the shutdown, which must come
  // (a loop that went on using the pool would outlive it). Every task
  // accepted runs, finishes and posts its completion before the server is
  // gone.
  std::mt19937 random(7);
  for (int round = 0; round < 100; ++round) {
    // Threads all started and asleep (deferred wake-ups needed), or started
    // on demand.
    const int min_threads = round % 2 == 0 ? 4 : 1;
    std::unique_ptr<ServerCore> core =
        StartCore(/*num_loops=*/2, min_threads, /*max_threads=*/4);
    ASSERT_NE(core, nullptr);
    std::vector<std::unique_ptr<Submitter>> submitters;
    for (int i = 0; i < 2; ++i) {
      submitters.push_back(
          std::make_unique<Submitter>(core->NextLoop(), random()));
    }
    for (auto& submitter : submitters) {
      submitter->loop()->loop().Post(submitter.get());
    }
    // Each loop has handed over a batch.
    ASSERT_TRUE(WaitFor([&] {
      for (auto& submitter : submitters) {
        if (submitter->runs() == 0) return false;
      }
      return true;
    }));
    Jitter(absl::Microseconds(random() % 200));
    DestroyCore(&core);
    // The first task handed over found a thread.
    int accepted = 0;
    for (auto& submitter : submitters) {
      EXPECT_TRUE(submitter->refused_for_shutdown()) << "round " << round;
      for (const auto& task : submitter->tasks()) {
        accepted += task->accepted();
        EXPECT_EQ(task->runs(), task->accepted()) << "round " << round;
        EXPECT_EQ(task->dones(), task->accepted()) << "round " << round;
        EXPECT_EQ(task->completions(), task->accepted()) << "round " << round;
      }
    }
    EXPECT_GT(accepted, 0) << "round " << round;
    ASSERT_FALSE(HasFailure()) << "round " << round;
  }
  EXPECT_EQ(late_steps.load(), 0);
}

}  // namespace
}  // namespace h2rpc::internal
