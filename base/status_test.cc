#include "base/status.h"

#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"

namespace h2rpc {
namespace {

TEST(StatusTest, DefaultIsOkAndDoesNotAllocate) {
  testing::AllocationCounter counter;
  Status status;
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kOk);
  EXPECT_EQ(Status::Ok(), status);
  EXPECT_EQ(counter.allocations(), 0);
}

TEST(StatusTest, CarriesCodeMessageAndDetails) {
  Status status(StatusCode::kNotFound, "no such user", std::string("\0\1", 2));
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "no such user");
  EXPECT_EQ(status.details(), std::string("\0\1", 2));
  EXPECT_EQ(status.ToString(), "NOT_FOUND: no such user");
  EXPECT_NE(status, Status(StatusCode::kNotFound, "no such user"));
}

TEST(StatusTest, EveryCodeHasItsWireName) {
  EXPECT_EQ(StatusCodeName(StatusCode::kOk), "OK");
  EXPECT_EQ(StatusCodeName(StatusCode::kDeadlineExceeded), "DEADLINE_EXCEEDED");
  EXPECT_EQ(StatusCodeName(StatusCode::kUnauthenticated), "UNAUTHENTICATED");
  for (int code = 0; code <= kMaxStatusCode; ++code) {
    EXPECT_NE(StatusCodeName(static_cast<StatusCode>(code)), "UNKNOWN_CODE")
        << code;
  }
  EXPECT_EQ(StatusCodeName(static_cast<StatusCode>(17)), "UNKNOWN_CODE");
}

}  // namespace
}  // namespace h2rpc
