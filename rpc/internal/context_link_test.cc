// ClientContexts made from a ServerContext: what they inherit, and how the
// parent's cancellation and end reach them (a fake call stands for the
// channel's).
#include "rpc/internal/context_link.h"

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "rpc/client_context.h"
#include "rpc/internal/client/client_context_access.h"
#include "rpc/internal/server/server_context_access.h"
#include "rpc/server_context.h"

namespace h2rpc::internal {
namespace {

class FakeCall : public CancellableClientCall {
 public:
  void RequestCancel(CancelCause cause) override {
    cause_ = cause;
    requests_.fetch_add(1, std::memory_order_relaxed);
  }
  int requests() const { return requests_.load(); }
  CancelCause cause() const { return cause_; }

 private:
  std::atomic<int> requests_{0};
  CancelCause cause_ = CancelCause::kTryCancel;
};

// A context for a server call to own, on the heap.
std::unique_ptr<ServerContext> NewParent() {
  return std::unique_ptr<ServerContext>(
      new ServerContext(ServerContextAccess::Make()));
}

TEST(ContextLinkTest, DeadlineIsTheEarlierOfTheParentsAndItsOwn) {
  // A parent without a deadline leaves the child's own.
  ServerContext parent = ServerContextAccess::Make();
  ClientContext child(parent);
  EXPECT_EQ(child.deadline(), absl::InfiniteFuture());
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  child.set_deadline(deadline);
  EXPECT_LE(absl::AbsDuration(child.deadline() - deadline),
            absl::Milliseconds(100));
}

TEST(ContextLinkTest, ParentCancelReachesARunningChild) {
  ServerContext parent = ServerContextAccess::Make();
  ClientContext child(parent);
  FakeCall call;
  ASSERT_TRUE(ClientContextAccess::Bind(&child, &call).ok());
  ServerContextAccess::MarkCancelled(&parent);
  EXPECT_EQ(call.requests(), 1);
  EXPECT_EQ(call.cause(), CancelCause::kParentCancelled);
  ClientContextAccess::Unbind(&child);
  ServerContextAccess::Reset(&parent);
  EXPECT_EQ(call.requests(), 1);  // over: untouched by the parent's end
}

TEST(ContextLinkTest, ParentCancelBeforeTheChildsCallFailsItAtStart) {
  ServerContext parent = ServerContextAccess::Make();
  ClientContext child(parent);
  ServerContextAccess::MarkCancelled(&parent);
  FakeCall call;
  const Status status = ClientContextAccess::Bind(&child, &call);
  EXPECT_EQ(status.code(), StatusCode::kCancelled);
  EXPECT_EQ(status.message(),
            "the server call this call was made for was cancelled");
  ServerContextAccess::Reset(&parent);
  EXPECT_EQ(call.requests(), 0);
}

TEST(ContextLinkTest, ChildOfACancelledParentIsCancelledAtOnce) {
  ServerContext parent = ServerContextAccess::Make();
  ServerContextAccess::MarkCancelled(&parent);
  ClientContext child(parent);
  FakeCall call;
  EXPECT_EQ(ClientContextAccess::Bind(&child, &call).code(),
            StatusCode::kCancelled);
  ServerContextAccess::Reset(&parent);
}

TEST(ContextLinkTest, ChildOfAnEndedParentIsCancelledAtOnce) {
  ServerContext parent = ServerContextAccess::Make();
  ServerContextAccess::Reset(&parent);
  ClientContext child(parent);
  FakeCall call;
  const Status status = ClientContextAccess::Bind(&child, &call);
  EXPECT_EQ(status.code(), StatusCode::kCancelled);
  EXPECT_EQ(status.message(), "the server call this call was made for is over");
}

TEST(ContextLinkTest, ParentEndCancelsRunningChildrenOnly) {
  ServerContext parent = ServerContextAccess::Make();
  ClientContext running(parent);
  ClientContext finished(parent);
  auto destroyed = std::make_unique<ClientContext>(parent);
  FakeCall running_call, finished_call;
  ASSERT_TRUE(ClientContextAccess::Bind(&running, &running_call).ok());
  ASSERT_TRUE(ClientContextAccess::Bind(&finished, &finished_call).ok());
  ClientContextAccess::Unbind(&finished);
  destroyed.reset();  // unlinks (ASan would see a use after free otherwise)
  ServerContextAccess::Reset(&parent);
  EXPECT_EQ(running_call.requests(), 1);
  EXPECT_EQ(running_call.cause(), CancelCause::kParentEnded);
  EXPECT_EQ(finished_call.requests(), 0);
  // Detached: a cancel of the context's next use (the parent's object serving
  // another call) does not reach them.
  ServerContextAccess::MarkCancelled(&parent);
  EXPECT_EQ(running_call.requests(), 1);
}

TEST(ContextLinkTest, ChildrenOutliveTheirParentsObject) {
  auto parent = NewParent();
  ClientContext child(*parent);
  ServerContextAccess::Reset(parent.get());
  parent.reset();
  FakeCall call;
  EXPECT_EQ(ClientContextAccess::Bind(&child, &call).code(),
            StatusCode::kCancelled);
  // ~ClientContext locks the stripe and finds the child detached.
}

TEST(ContextLinkTest, OptionsTurnEachOff) {
  ServerContext parent = ServerContextAccess::Make();
  ClientContext child(parent,
                      PropagationOptions().disable_cancellation_propagation());
  FakeCall call;
  ASSERT_TRUE(ClientContextAccess::Bind(&child, &call).ok());
  ServerContextAccess::MarkCancelled(&parent);
  ServerContextAccess::Reset(&parent);
  EXPECT_EQ(call.requests(), 0);
  ClientContextAccess::Unbind(&child);

  EXPECT_FALSE(PropagationOptions()
                   .disable_deadline_propagation()
                   .is_deadline_propagated());
  EXPECT_TRUE(PropagationOptions().is_deadline_propagated());
  EXPECT_TRUE(PropagationOptions().is_cancellation_propagated());
}

TEST(ContextLinkTest, FromServerContextIsTheSameOnTheHeap) {
  ServerContext parent = ServerContextAccess::Make();
  std::unique_ptr<ClientContext> child =
      ClientContext::FromServerContext(parent);
  FakeCall call;
  ASSERT_TRUE(ClientContextAccess::Bind(child.get(), &call).ok());
  ServerContextAccess::MarkCancelled(&parent);
  EXPECT_EQ(call.requests(), 1);
  ClientContextAccess::Unbind(child.get());
  ServerContextAccess::Reset(&parent);
}

// Children linked and bound on several threads while the parent is
// cancelled, then destroyed while the parent ends: every child whose call
// started is cancelled, and nothing is touched after being freed (ASan,
// TSan). Children are made only while the parent's handler would run
// (before Reset), as the API requires.
TEST(ContextLinkTest, LinksRaceCancellationAndEnd) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 300;
  constexpr int kChildrenPerThread = 4;
  for (int round = 0; round < kRounds; ++round) {
    std::unique_ptr<ServerContext> parent = NewParent();
    std::atomic<int> started{0};
    std::atomic<bool> cancel_returned{false};
    std::atomic<int> linked{0};
    std::atomic<int> missed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        started.fetch_add(1);
        std::unique_ptr<ClientContext> children[kChildrenPerThread];
        FakeCall calls[kChildrenPerThread];
        bool bound[kChildrenPerThread] = {};
        for (int i = 0; i < kChildrenPerThread; ++i) {
          children[i] = std::make_unique<ClientContext>(*parent);
          bound[i] =
              ClientContextAccess::Bind(children[i].get(), &calls[i]).ok();
        }
        // A call that started was linked before the cancellation reached
        // the list: it must have been cancelled by the time MarkCancelled
        // returns.
        while (!cancel_returned.load()) std::this_thread::yield();
        for (int i = 0; i < kChildrenPerThread; ++i) {
          if (bound[i] && calls[i].requests() == 0) missed.fetch_add(1);
        }
        linked.fetch_add(1);
        // Racing the parent's end.
        for (int i = 0; i < kChildrenPerThread; ++i) {
          if (bound[i]) ClientContextAccess::Unbind(children[i].get());
          children[i].reset();
        }
      });
    }
    while (started.load() < kThreads) std::this_thread::yield();
    ServerContextAccess::MarkCancelled(parent.get());
    cancel_returned.store(true);
    while (linked.load() < kThreads) std::this_thread::yield();
    ServerContextAccess::Reset(parent.get());
    for (std::thread& thread : threads) thread.join();
    EXPECT_EQ(missed.load(), 0) << "round " << round;
  }
}

}  // namespace
}  // namespace h2rpc::internal
