#include "rpc/internal/lb/round_robin.h"

#include <map>

#include "gtest/gtest.h"
#include "rpc/internal/lb/fake_lb_helper.h"
#include "test/util/allocation_counter.h"

namespace h2rpc::internal {
namespace {

using S = ConnectivityState;

class RoundRobinTest : public ::testing::Test {
 protected:
  // Connects every subchannel of `ports` to READY.
  void Ready(std::vector<int> ports) {
    for (int port : ports) helper_.For(port)->Set(&policy_, S::kReady);
  }
  // How many of `n` picks each port gets.
  std::map<int, int> Spread(int n) {
    std::map<int, int> out;
    for (int i = 0; i < n; ++i) {
      LbSubchannel* picked = policy_.Pick();
      ++out[PortOf(picked)];
    }
    return out;
  }

  FakeLbHelper helper_;
  RoundRobin policy_{&helper_};
};

TEST_F(RoundRobinTest, ConnectsEveryAddressAtOnce) {
  policy_.UpdateAddresses(LoopbackAddresses({1, 2, 3}));
  EXPECT_EQ(helper_.state, S::kIdle);
  policy_.ExitIdle();
  for (int port : {1, 2, 3}) {
    EXPECT_EQ(helper_.For(port)->connection_requests, 1) << port;
  }
  EXPECT_EQ(helper_.state, S::kConnecting);
}

TEST_F(RoundRobinTest, SpreadsPicksEvenlyOverTheReadyOnes) {
  policy_.UpdateAddresses(LoopbackAddresses({1, 2, 3}));
  policy_.ExitIdle();
  Ready({1});
  EXPECT_EQ(helper_.state, S::kReady);
  EXPECT_EQ(Spread(4), (std::map<int, int>{{1, 4}}));
  Ready({2, 3});
  EXPECT_EQ(Spread(300), (std::map<int, int>{{1, 100}, {2, 100}, {3, 100}}));
}

TEST_F(RoundRobinTest, SkipsAFailedSubchannelUntilItRecovers) {
  policy_.UpdateAddresses(LoopbackAddresses({1, 2, 3}));
  policy_.ExitIdle();
  Ready({1, 2, 3});
  // Its connection ends: reconnected at once, skipped meanwhile.
  helper_.For(2)->Set(&policy_, S::kIdle);
  EXPECT_EQ(helper_.For(2)->connection_requests, 2);
  EXPECT_GE(helper_.reresolution_requests, 1);
  helper_.For(2)->Set(&policy_, S::kTransientFailure, "refused");
  EXPECT_EQ(helper_.state, S::kReady);
  EXPECT_EQ(Spread(200), (std::map<int, int>{{1, 100}, {3, 100}}));
  Ready({2});
  EXPECT_EQ(Spread(300), (std::map<int, int>{{1, 100}, {2, 100}, {3, 100}}));
}

TEST_F(RoundRobinTest, AggregatesTheStatesAsGrpcDoes) {
  policy_.UpdateAddresses(LoopbackAddresses({1, 2}));
  policy_.ExitIdle();
  helper_.For(1)->Set(&policy_, S::kTransientFailure, "refused 1");
  EXPECT_EQ(helper_.state, S::kConnecting);  // 2 is still connecting
  helper_.For(2)->Set(&policy_, S::kConnecting);
  helper_.For(2)->Set(&policy_, S::kTransientFailure, "refused 2");
  EXPECT_EQ(helper_.state, S::kTransientFailure);
  EXPECT_EQ(helper_.error.message(), "refused 2");
  EXPECT_EQ(policy_.Pick(), nullptr);
  helper_.For(1)->Set(&policy_, S::kConnecting);
  EXPECT_EQ(helper_.state, S::kConnecting);
  Ready({1});
  EXPECT_EQ(helper_.state, S::kReady);
}

TEST_F(RoundRobinTest, NewAddressesKeepTheSubchannelsStillListed) {
  policy_.UpdateAddresses(LoopbackAddresses({1, 2}));
  policy_.ExitIdle();
  Ready({1, 2});
  auto* first = helper_.For(1);
  auto* second = helper_.For(2);
  policy_.UpdateAddresses(LoopbackAddresses({2, 3}));
  EXPECT_TRUE(first->orphaned);
  EXPECT_FALSE(second->orphaned);
  EXPECT_EQ(helper_.For(2), second);
  EXPECT_EQ(helper_.For(3)->connection_requests, 1);
  EXPECT_EQ(Spread(4), (std::map<int, int>{{2, 4}}));
}

TEST_F(RoundRobinTest, APickAllocatesNothing) {
  policy_.UpdateAddresses(LoopbackAddresses({1, 2, 3}));
  policy_.ExitIdle();
  Ready({1, 2, 3});
  h2rpc::testing::AllocationCounter counter;
  for (int i = 0; i < 1000; ++i) ASSERT_NE(policy_.Pick(), nullptr);
  EXPECT_EQ(counter.allocations(), 0);
}

}  // namespace
}  // namespace h2rpc::internal
