#include "transport/http1/bridge_parts.h"

#include <string>

#include "gtest/gtest.h"

namespace h2rpc::transport::http1 {
namespace {

TEST(PendingBodyTest, HandsOutWhatArrivedThenTheEnd) {
  PendingBody body;
  uint8_t buf[8];
  uint32_t flags = 0;
  bool drained_full = false;
  // Nothing yet, not ended: nghttp2 waits.
  EXPECT_EQ(body.Take(buf, sizeof(buf), &flags, 100, &drained_full),
            NGHTTP2_ERR_DEFERRED);
  body.Append("0123456789");
  EXPECT_EQ(body.held(), 10u);
  EXPECT_EQ(body.Take(buf, sizeof(buf), &flags, 100, &drained_full), 8);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(buf), 8), "01234567");
  EXPECT_EQ(flags, 0u);
  EXPECT_EQ(body.Take(buf, sizeof(buf), &flags, 100, &drained_full), 2);
  EXPECT_EQ(flags, 0u);
  EXPECT_FALSE(drained_full);
  body.set_complete();
  EXPECT_EQ(body.Take(buf, sizeof(buf), &flags, 100, &drained_full), 0);
  EXPECT_EQ(flags, NGHTTP2_DATA_FLAG_EOF);
}

TEST(PendingBodyTest, SaysWhenAFullBodyDrains) {
  PendingBody body;
  body.Append(std::string(16, 'x'));
  uint8_t buf[16];
  uint32_t flags = 0;
  bool drained_full = false;
  EXPECT_EQ(body.Take(buf, 8, &flags, 16, &drained_full), 8);
  EXPECT_FALSE(drained_full);
  EXPECT_EQ(body.Take(buf, 8, &flags, 16, &drained_full), 8);
  EXPECT_TRUE(drained_full);
  EXPECT_EQ(body.held(), 0u);
}

TEST(PendingBodyTest, DropHeldKeepsTheEndAndResetStartsOver) {
  PendingBody body;
  body.Append("abc");
  body.set_complete();
  body.DropHeld();
  EXPECT_EQ(body.held(), 0u);
  EXPECT_TRUE(body.complete());
  body.Reset();
  EXPECT_FALSE(body.complete());
}

TEST(IsConnectionSpecificTest, NamesHttp1sConnectionFields) {
  for (const char* name : {"connection", "keep-alive", "proxy-connection",
                           "transfer-encoding", "upgrade"}) {
    EXPECT_TRUE(IsConnectionSpecific(name)) << name;
  }
  EXPECT_FALSE(IsConnectionSpecific("content-type"));
  EXPECT_FALSE(IsConnectionSpecific("te"));
}

}  // namespace
}  // namespace h2rpc::transport::http1
