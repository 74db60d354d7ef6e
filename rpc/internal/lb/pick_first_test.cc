#include "rpc/internal/lb/pick_first.h"

#include "gtest/gtest.h"
#include "rpc/internal/lb/fake_lb_helper.h"

namespace h2rpc::internal {
namespace {

using S = ConnectivityState;

class PickFirstTest : public ::testing::Test {
 protected:
  FakeLbHelper helper_;
  PickFirst policy_{&helper_};
};

TEST_F(PickFirstTest, StaysIdleUntilAsked) {
  policy_.UpdateAddresses(LoopbackAddresses({1, 2}));
  EXPECT_TRUE(helper_.subchannels.empty());
  EXPECT_EQ(policy_.Pick(), nullptr);
  policy_.ExitIdle();
  ASSERT_EQ(helper_.subchannels.size(), 2u);
  EXPECT_EQ(helper_.state, S::kConnecting);
}

TEST_F(PickFirstTest, TriesTheAddressesInOrderOneAtATime) {
  policy_.UpdateAddresses(LoopbackAddresses({1, 2, 3}));
  policy_.ExitIdle();
  auto* first = helper_.For(1);
  auto* second = helper_.For(2);
  auto* third = helper_.For(3);
  EXPECT_EQ(first->connection_requests, 1);
  EXPECT_EQ(second->connection_requests, 0);
  first->Set(&policy_, S::kConnecting);
  first->Set(&policy_, S::kTransientFailure, "refused 1");
  EXPECT_EQ(helper_.state, S::kConnecting);  // the pass goes on
  EXPECT_EQ(second->connection_requests, 1);
  EXPECT_EQ(third->connection_requests, 0);
  second->Set(&policy_, S::kConnecting);
  second->Set(&policy_, S::kReady);
  EXPECT_EQ(helper_.state, S::kReady);
  EXPECT_EQ(policy_.Pick(), second);
  EXPECT_EQ(policy_.Pick(), second);
  // The others are dropped.
  EXPECT_TRUE(first->orphaned);
  EXPECT_TRUE(third->orphaned);
  EXPECT_FALSE(second->orphaned);
  EXPECT_EQ(third->connection_requests, 0);
}

TEST_F(PickFirstTest, AllFailedIsTransientFailureWithTheLastError) {
  policy_.UpdateAddresses(LoopbackAddresses({1, 2}));
  policy_.ExitIdle();
  helper_.For(1)->Set(&policy_, S::kTransientFailure, "refused 1");
  EXPECT_EQ(helper_.reresolution_requests, 0);
  helper_.For(2)->Set(&policy_, S::kTransientFailure, "refused 2");
  EXPECT_EQ(helper_.state, S::kTransientFailure);
  EXPECT_EQ(helper_.error.message(), "refused 2");
  EXPECT_EQ(helper_.reresolution_requests, 1);
  EXPECT_EQ(policy_.Pick(), nullptr);
  // A subchannel retrying after its backoff: CONNECTING, then the first to
  // connect wins.
  helper_.For(1)->Set(&policy_, S::kConnecting);
  EXPECT_EQ(helper_.state, S::kConnecting);
  helper_.For(1)->Set(&policy_, S::kReady);
  EXPECT_EQ(helper_.state, S::kReady);
  EXPECT_EQ(policy_.Pick(), helper_.For(1));
  EXPECT_TRUE(helper_.For(2)->orphaned);
}

TEST_F(PickFirstTest, TheChosenConnectionEndingMakesItIdle) {
  policy_.UpdateAddresses(LoopbackAddresses({1, 2}));
  policy_.ExitIdle();
  auto* first = helper_.For(1);
  first->Set(&policy_, S::kReady);
  first->Set(&policy_, S::kIdle);
  EXPECT_EQ(helper_.state, S::kIdle);
  EXPECT_EQ(policy_.Pick(), nullptr);
  EXPECT_TRUE(first->orphaned);
  EXPECT_EQ(helper_.reresolution_requests, 1);
  // The next pass starts from the first address again, on new subchannels.
  policy_.ExitIdle();
  EXPECT_EQ(helper_.state, S::kConnecting);
  ASSERT_NE(helper_.For(1), first);
  EXPECT_EQ(helper_.For(1)->connection_requests, 1);
}

TEST_F(PickFirstTest, NewAddressesKeepTheChosenOneWhenListed) {
  policy_.UpdateAddresses(LoopbackAddresses({1, 2}));
  policy_.ExitIdle();
  auto* second = helper_.For(2);
  helper_.For(1)->Set(&policy_, S::kTransientFailure, "refused");
  second->Set(&policy_, S::kReady);
  const size_t made = helper_.subchannels.size();
  policy_.UpdateAddresses(LoopbackAddresses({3, 2}));
  EXPECT_EQ(helper_.subchannels.size(), made);
  EXPECT_EQ(policy_.Pick(), second);
  // Not listed any more: a new pass over the new list.
  policy_.UpdateAddresses(LoopbackAddresses({4, 5}));
  EXPECT_TRUE(second->orphaned);
  EXPECT_EQ(policy_.Pick(), nullptr);
  EXPECT_EQ(helper_.state, S::kConnecting);
  EXPECT_EQ(helper_.For(4)->connection_requests, 1);
  EXPECT_EQ(helper_.For(5)->connection_requests, 0);
}

}  // namespace
}  // namespace h2rpc::internal
