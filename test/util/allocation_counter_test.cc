// The allocation counter sees every heap entry point, from any library, per
// thread and per role; in plain and sanitizer builds alike.
#include "test/util/allocation_counter.h"

#include <malloc.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace h2rpc::testing {
namespace {

// Opaque to the optimizer, so the allocations below really happen.
std::atomic<void*> sink;

template <class T>
T* Keep(T* p) {
  sink.store(p, std::memory_order_relaxed);
  return p;
}

// Four allocations of 100 + 200 + 300 + 400 bytes.
void AllocateFour() {
  void* a = Keep(std::malloc(100));
  void* b = Keep(std::calloc(10, 20));
  void* c = Keep(std::realloc(nullptr, 300));
  void* d = nullptr;
  ASSERT_EQ(posix_memalign(&d, 64, 400), 0);
  Keep(d);
  std::free(a);
  std::free(b);
  std::free(c);
  std::free(d);
}

// Runs `fn` on a new thread named `name` (none: empty), and joins it.
template <class Fn>
void OnThread(const char* name, Fn fn) {
  std::thread thread([name, &fn] {
    if (*name != '\0') pthread_setname_np(pthread_self(), name);
    fn();
  });
  thread.join();
}

TEST(AllocationCounterTest, EveryCEntryPointCounts) {
  AllocationCounter counter;
  void* p = Keep(std::malloc(10));
  EXPECT_EQ(counter.allocations(), 1);
  EXPECT_EQ(counter.bytes(), 10);
  p = Keep(std::realloc(p, 1000));
  EXPECT_EQ(counter.allocations(), 2);
  EXPECT_EQ(counter.bytes(), 1010);
  std::free(p);
  std::free(Keep(std::calloc(3, 7)));
  std::free(Keep(aligned_alloc(64, 128)));
  std::free(Keep(memalign(64, 32)));
  std::free(Keep(valloc(16)));
  void* q = nullptr;
  ASSERT_EQ(posix_memalign(&q, 32, 8), 0);
  std::free(Keep(q));
  std::free(Keep(reallocarray(nullptr, 4, 5)));
  EXPECT_EQ(counter.allocations(), 8);
  EXPECT_EQ(counter.bytes(), 1010 + 21 + 128 + 32 + 16 + 8 + 20);
  // Whole pages.
  std::free(Keep(pvalloc(16)));
  EXPECT_EQ(counter.allocations(), 9);
  EXPECT_EQ(counter.bytes(), 1235 + getpagesize());
  // Freeing is not allocating.
  counter.Reset();
  std::free(Keep(std::malloc(1)));
  EXPECT_EQ(counter.allocations(), 1);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerHeap = true;
#else
constexpr bool kSanitizerHeap = false;
#endif

TEST(AllocationCounterTest, AFailedAllocationDoesNotCount) {
  if (kSanitizerHeap) GTEST_SKIP() << "the sanitizer reports the failure";
  AllocationCounter counter;
  void* p = nullptr;
  EXPECT_NE(posix_memalign(&p, 3, 8), 0);  // not a power of two
  const size_t volatile too_many = SIZE_MAX;
  EXPECT_EQ(reallocarray(nullptr, too_many, 2), nullptr);
  EXPECT_EQ(counter.allocations(), 0);
}

TEST(AllocationCounterTest, EveryOperatorNewCountsOnce) {
  AllocationCounter counter;
  delete Keep(new int(1));
  delete[] Keep(new int[1000]);
  delete Keep(new (std::nothrow) int(2));
  delete[] Keep(new (std::nothrow) int[3]);
  struct alignas(64) Wide {
    char bytes[64];
  };
  delete Keep(new Wide);
  delete[] Keep(new Wide[2]);
  delete Keep(new (std::nothrow) Wide);
  delete[] Keep(new (std::nothrow) Wide[3]);
  EXPECT_EQ(counter.allocations(), 8);
  EXPECT_GE(counter.bytes(), 4 + 4000 + 4 + 12 + 64 + 128 + 64 + 192);
}

// OpenSSL (like nghttp2, zlib or libc) calls malloc from its own shared
// library: counted all the same.
TEST(AllocationCounterTest, ADirectMallocInAnotherLibraryCounts) {
  AllocationCounter counter;
  void* from_openssl = Keep(OPENSSL_malloc(100));
  ASSERT_NE(from_openssl, nullptr);
  EXPECT_EQ(counter.allocations(), 1);
  EXPECT_EQ(counter.bytes(), 100);
  OPENSSL_free(from_openssl);
  char* from_libc = Keep(strdup("seven"));
  EXPECT_EQ(counter.allocations(), 2);
  std::free(from_libc);
}

TEST(AllocationCounterTest, CountsAreTheCallingThreads) {
  OnThread("", [] {});  // the process's first thread allocates more
  AllocationCounter counter;
  OnThread("", [] {});
  const int64_t starting_a_thread = counter.allocations();
  counter.Reset();
  OnThread("", [] {
    AllocationCounter other;
    AllocateFour();
    EXPECT_EQ(other.allocations(), 4);
    EXPECT_EQ(other.bytes(), 1000);
  });
  EXPECT_EQ(counter.allocations(), starting_a_thread);
}

TEST(AllocationCounterTest, NamedThreadsCountForTheirRole) {
  const AllocationTotals client0 = AllocationsByRole(ThreadRole::kClient);
  const AllocationTotals server0 = AllocationsByRole(ThreadRole::kServer);
  OnThread("h2rpc-channel-1", AllocateFour);
  OnThread("h2rpc-server-0", AllocateFour);
  OnThread("h2rpc-worker", AllocateFour);
  const AllocationTotals client1 = AllocationsByRole(ThreadRole::kClient);
  const AllocationTotals server1 = AllocationsByRole(ThreadRole::kServer);
  EXPECT_EQ(client1.allocations - client0.allocations, 4);
  EXPECT_EQ(client1.bytes - client0.bytes, 1000);
  EXPECT_EQ(server1.allocations - server0.allocations, 8);
  EXPECT_EQ(server1.bytes - server0.bytes, 2000);
}

// Allocations counted for `role` while `fn` runs on a thread named `name`,
// less those of a thread that does nothing: what starting and ending a
// thread allocates on either thread.
template <class Fn>
int64_t AllocationsOnThread(ThreadRole role, const char* name, Fn fn) {
  const int64_t empty0 = AllocationsByRole(role).allocations;
  OnThread(name, [] {});
  const int64_t empty1 = AllocationsByRole(role).allocations;
  OnThread(name, fn);
  return AllocationsByRole(role).allocations - empty1 - (empty1 - empty0);
}

TEST(AllocationCounterTest, OtherThreadsCountForTheDefaultRole) {
  EXPECT_EQ(AllocationsOnThread(ThreadRole::kOther, "", AllocateFour), 4);
  EXPECT_EQ(
      AllocationsOnThread(ThreadRole::kOther, "grpcpp_sync_ser", AllocateFour),
      4);
  SetDefaultRole(ThreadRole::kServer);
  EXPECT_EQ(AllocationsOnThread(ThreadRole::kServer, "", AllocateFour), 4);
  SetDefaultRole(ThreadRole::kOther);
}

TEST(AllocationCounterTest, ADeclaredRoleWinsOverTheName) {
  const AllocationTotals client0 = AllocationsByRole(ThreadRole::kClient);
  OnThread("h2rpc-server-1", [] {
    SetThisThreadRole(ThreadRole::kClient);
    AllocateFour();
  });
  EXPECT_EQ(
      AllocationsByRole(ThreadRole::kClient).allocations - client0.allocations,
      4);
}

TEST(AllocationCounterTest, AThreadNamedLateCountsForItsRoleSoon) {
  const AllocationTotals server0 = AllocationsByRole(ThreadRole::kServer);
  static constexpr int kBefore = 100;
  OnThread("", [] {
    for (int i = 0; i < kBefore; ++i) std::free(Keep(std::malloc(8)));
    pthread_setname_np(pthread_self(), "h2rpc-server-9");
    for (int i = 0; i < 2 * kBefore; ++i) std::free(Keep(std::malloc(8)));
  });
  // From the 2 x 100 + 1 = 201st allocation on at the latest (what
  // starting a thread allocates on it comes first).
  EXPECT_GE(
      AllocationsByRole(ThreadRole::kServer).allocations - server0.allocations,
      2 * kBefore - (kBefore + 1) - 8);
}

// Slots of exited threads are reused; their counts stay in the totals.
TEST(AllocationCounterTest, ThreadsThatExitedStayCounted) {
  const AllocationTotals client0 = AllocationsByRole(ThreadRole::kClient);
  constexpr int kThreads = 5000;  // more than the slots
  for (int i = 0; i < kThreads; ++i) {
    OnThread("h2rpc-channel", [] { std::free(Keep(std::malloc(3))); });
  }
  EXPECT_EQ(
      AllocationsByRole(ThreadRole::kClient).allocations - client0.allocations,
      kThreads);
}

TEST(AllocationCounterTest, ThreadsAllocatingAtOnceLoseNoCount) {
  const AllocationTotals client0 = AllocationsByRole(ThreadRole::kClient);
  constexpr int kThreads = 64;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([] {
      pthread_setname_np(pthread_self(), "h2rpc-channel");
      for (int j = 0; j < 1000; ++j) std::free(Keep(std::malloc(3)));
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(
      AllocationsByRole(ThreadRole::kClient).allocations - client0.allocations,
      int64_t{kThreads} * 1000);
}

TEST(AllocationCounterTest, LiveBytesFollowAllocationsAndFrees) {
  const int64_t before = LiveHeapBytes();
  void* block = Keep(std::malloc(1 << 20));
  const int64_t held = LiveHeapBytes() - before;
  EXPECT_GE(held, 1 << 20);
  EXPECT_LT(held, (1 << 20) + (64 << 10));
  std::free(block);
  EXPECT_LT(LiveHeapBytes() - before, 64 << 10);
}

TEST(AllocationCounterTest, FreesOnAnotherThreadBalanceTheBooks) {
  const int64_t before = LiveHeapBytes();
  void* block = Keep(std::malloc(1 << 20));
  OnThread("", [block] { std::free(block); });
  EXPECT_LT(LiveHeapBytes() - before, 64 << 10);
}

TEST(AllocationCounterTest, PeakLiveBytesSinceTheReset) {
  ResetPeakLiveHeapBytes();
  const int64_t base = LiveHeapBytes();
  EXPECT_LT(PeakLiveHeapBytes() - base, 64 << 10);
  void* block = Keep(std::malloc(4 << 20));
  std::free(block);
  const int64_t peak = PeakLiveHeapBytes() - base;
  EXPECT_GE(peak, 4 << 20);
  EXPECT_LT(peak, (4 << 20) + (64 << 10));
  EXPECT_LT(LiveHeapBytes() - base, 64 << 10);
  ResetPeakLiveHeapBytes();
  EXPECT_LT(PeakLiveHeapBytes() - LiveHeapBytes(), 64 << 10);
}

}  // namespace
}  // namespace h2rpc::testing
