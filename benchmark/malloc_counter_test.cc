#include "benchmark/malloc_counter.h"

#include <pthread.h>

#include <cstdlib>
#include <thread>

#include "gtest/gtest.h"

namespace h2rpc::benchmark {
namespace {

// Opaque to the optimizer, so the allocations below really happen.
void* volatile sink;

void AllocateFour() {
  void* a = std::malloc(100);
  void* b = std::calloc(10, 20);
  void* c = std::realloc(nullptr, 300);
  void* d = nullptr;
  ASSERT_EQ(posix_memalign(&d, 64, 400), 0);
  sink = a;
  std::free(a);
  std::free(b);
  std::free(c);
  std::free(d);
}

class MallocCounterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!MallocCounterAvailable()) GTEST_SKIP() << "sanitizer build";
  }
};

TEST_F(MallocCounterTest, NamedThreadsCountForTheirRole) {
  const AllocationCount client0 = AllocationsOf(Role::kClient);
  const AllocationCount server0 = AllocationsOf(Role::kServer);
  std::thread client([] {
    pthread_setname_np(pthread_self(), "h2rpc-channel-1");
    AllocateFour();
  });
  client.join();
  std::thread server([] {
    pthread_setname_np(pthread_self(), "h2rpc-server-0");
    AllocateFour();
  });
  server.join();
  const AllocationCount client1 = AllocationsOf(Role::kClient);
  const AllocationCount server1 = AllocationsOf(Role::kServer);
  EXPECT_EQ(client1.allocations - client0.allocations, 4);
  EXPECT_EQ(client1.bytes - client0.bytes, 100 + 200 + 300 + 400);
  EXPECT_EQ(server1.allocations - server0.allocations, 4);
}

TEST_F(MallocCounterTest, OperatorNewIsCountedOnce) {
  SetThisThreadRole(Role::kHarness);
  const AllocationCount before = AllocationsOf(Role::kHarness);
  int* p = new int[1000];
  sink = p;
  delete[] p;
  const AllocationCount after = AllocationsOf(Role::kHarness);
  EXPECT_EQ(after.allocations - before.allocations, 1);
  EXPECT_EQ(after.bytes - before.bytes, 4000);
}

TEST_F(MallocCounterTest, UnnamedThreadsCountForTheDefaultRole) {
  SetDefaultRole(Role::kServer);
  const AllocationCount before = AllocationsOf(Role::kServer);
  std::thread unnamed([] { AllocateFour(); });
  unnamed.join();
  EXPECT_EQ(AllocationsOf(Role::kServer).allocations - before.allocations, 4);
  SetDefaultRole(Role::kHarness);
}

}  // namespace
}  // namespace h2rpc::benchmark
