// ServerLoop's use of the server's worker pool: each connection gets at
// most its share of the threads; at shutdown, once the loop forgets the
// workers, it no longer touches the pool, while the tasks it handed over
// before still run (and post their completion to the loop) before the pool
// is gone.
#include "rpc/internal/server/server_loop.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "rpc/internal/common/member_task.h"
#include "rpc/internal/common/worker_pool.h"
#include "rpc/internal/server/server_core.h"
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

// A synchronous handler's task as the server's calls use it, for a call on
// connection `connection_id`: runs on a worker (first waiting for
// `release`, if given), then gives back its count against the connection's
// share and posts its completion to the loop that handed it over. May be
// handed over again once completed. Counts each step.
class LoopTask final : public WorkerTask {
 public:
  LoopTask(ServerLoop* loop, uint64_t connection_id,
           Notification* release = nullptr)
      : loop_(loop), connection_id_(connection_id), release_(release) {}

  void Run() override {
    if (release_ != nullptr) {
      EXPECT_TRUE(release_->WaitForNotificationWithTimeout(kHangTimeout));
    }
    Step(&runs_);
  }
  void Done() override {
    SyncTaskDone(&count_);
    Step(&dones_);
    loop_->loop().Post(&completion_);
  }

  // Loop thread: hands the task to the loop's workers.
  Status Submit() {
    loop_->loop().AssertInLoopThread();
    return loop_->SubmitToWorkers(this, connection_id_, &count_);
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
  const uint64_t connection_id_;
  Notification* const release_;
  SyncTaskCount count_;
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
    // Each on a connection of its own: only the pool limits them.
    for (int i = 0; i < 8; ++i) {
      tasks_.push_back(std::make_unique<LoopTask>(loop, /*connection_id=*/i));
    }
  }

  void Run() override {
    const int batch = 1 + static_cast<int>(random_() % 3);
    for (int i = 0; i < batch; ++i) {
      LoopTask& task = *tasks_[next_];
      if (!task.available()) break;
      next_ = (next_ + 1) % tasks_.size();
      const Status status = task.Submit();
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
                                      int max_threads,
                                      int max_threads_per_connection = 0) {
  ServerOptions options;
  options.num_loops = num_loops;
  options.min_sync_threads = min_threads;
  options.max_sync_threads = max_threads;
  options.max_sync_threads_per_connection = max_threads_per_connection;
  Status status;
  std::unique_ptr<ServerCore> core = ServerCore::Start(
      std::move(options), {}, ServerCore::MethodMap(), nullptr, {}, &status);
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
  LoopTask task(loop, /*connection_id=*/1);
  Status status;
  Notification submitted;
  loop->loop().Post([&] {
    status = task.Submit();
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

// Submits `task` on the loop thread; its result.
Status SubmitOnLoop(ServerLoop* loop, LoopTask* task) {
  Status status;
  Notification submitted;
  loop->loop().Post([&] {
    status = task->Submit();
    if (status.ok()) task->CountAccepted();
    submitted.Notify();
  });
  EXPECT_TRUE(submitted.WaitForNotificationWithTimeout(kHangTimeout));
  return status;
}

TEST(ServerLoopTest, EachConnectionGetsAtMostItsShareOfThreads) {
  std::unique_ptr<ServerCore> core =
      StartCore(/*num_loops=*/1, /*min_threads=*/1, /*max_threads=*/4,
                /*max_threads_per_connection=*/2);
  ASSERT_NE(core, nullptr);
  ServerLoop* loop = core->NextLoop();
  Notification release;
  std::vector<std::unique_ptr<LoopTask>> greedy;
  for (int i = 0; i < 3; ++i) {
    greedy.push_back(std::make_unique<LoopTask>(loop, 7, &release));
  }
  // Connection 7 takes its two threads; its third task is refused while
  // the pool still has threads for others.
  EXPECT_TRUE(SubmitOnLoop(loop, greedy[0].get()).ok());
  EXPECT_TRUE(SubmitOnLoop(loop, greedy[1].get()).ok());
  const Status refused = SubmitOnLoop(loop, greedy[2].get());
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.message(),
            "this connection's 2 synchronous handler threads are busy "
            "(ServerOptions::max_sync_threads_per_connection)");
  LoopTask other(loop, 8);
  EXPECT_TRUE(SubmitOnLoop(loop, &other).ok());
  ASSERT_TRUE(WaitFor([&] { return other.completions() == 1; }));

  // Once one of connection 7's tasks has ended, it gets a thread again.
  release.Notify();
  ASSERT_TRUE(WaitFor([&] { return greedy[0]->completions() == 1; }));
  EXPECT_TRUE(SubmitOnLoop(loop, greedy[2].get()).ok());
  ASSERT_TRUE(WaitFor([&] {
    return greedy[1]->completions() == 1 && greedy[2]->completions() == 1;
  }));
  DestroyCore(&core);
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
