#include "rpc/internal/common/stream_quota.h"

#include "gtest/gtest.h"

namespace h2rpc::internal {
namespace {

TEST(StreamQuotaTest, BoundsTheTotalAndEachConnection) {
  StreamQuota quota(3, 2, "watches", "Options::max_watches");
  EXPECT_TRUE(quota.Acquire(1).ok());
  EXPECT_TRUE(quota.Acquire(1).ok());
  Status refused = quota.Acquire(1);
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.message(),
            "2 watches are open on this connection, the limit "
            "(Options::max_watches_per_connection)");
  EXPECT_TRUE(quota.Acquire(2).ok());
  refused = quota.Acquire(3);
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.message(),
            "3 watches are open, the limit (Options::max_watches)");
  EXPECT_EQ(quota.open(), 3u);

  // A released stream makes room on its connection and in all.
  quota.Release(1);
  EXPECT_EQ(quota.open(), 2u);
  EXPECT_TRUE(quota.Acquire(1).ok());
  quota.Release(2);
  quota.Release(1);
  quota.Release(1);
  EXPECT_EQ(quota.open(), 0u);
  EXPECT_TRUE(quota.Acquire(2).ok());
  EXPECT_TRUE(quota.Acquire(2).ok());
}

}  // namespace
}  // namespace h2rpc::internal
