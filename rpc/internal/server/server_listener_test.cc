#include "rpc/internal/server/server_listener.h"

#include <errno.h>

#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace h2rpc::internal {
namespace {

TEST(ClassifyAcceptFailureTest, DrainedOnlyForEagain) {
  EXPECT_EQ(ClassifyAcceptFailure(EAGAIN), AcceptFailure::kDrained);
  EXPECT_EQ(ClassifyAcceptFailure(EWOULDBLOCK), AcceptFailure::kDrained);
}

TEST(ClassifyAcceptFailureTest, ResourceErrorsBackOff) {
  for (int error : {EMFILE, ENFILE, ENOBUFS, ENOMEM}) {
    EXPECT_EQ(ClassifyAcceptFailure(error), AcceptFailure::kBackOff)
        << "errno " << error;
  }
}

TEST(ClassifyAcceptFailureTest, ErrorsOfTheListeningSocketBackOff) {
  // Retrying at once would fail the same way: never spin on them.
  for (int error : {EBADF, EINVAL, ENOTSOCK, EFAULT, 0}) {
    EXPECT_EQ(ClassifyAcceptFailure(error), AcceptFailure::kBackOff)
        << "errno " << error;
  }
}

TEST(ClassifyAcceptFailureTest, PerConnectionErrorsSkipTheConnection) {
  for (int error : {ECONNABORTED, EINTR, EPROTO, EPERM, ENETDOWN, EHOSTUNREACH,
                    ENETUNREACH, ETIMEDOUT}) {
    EXPECT_EQ(ClassifyAcceptFailure(error), AcceptFailure::kSkipConnection)
        << "errno " << error;
  }
}

TEST(NextAcceptBackoffTest, DoublesFromTenMillisecondsToOneSecond) {
  std::vector<absl::Duration> pauses;
  absl::Duration pause = absl::ZeroDuration();
  for (int i = 0; i < 10; ++i) {
    pause = NextAcceptBackoff(pause);
    pauses.push_back(pause);
  }
  const std::vector<absl::Duration> expected = {
      absl::Milliseconds(10),  absl::Milliseconds(20),  absl::Milliseconds(40),
      absl::Milliseconds(80),  absl::Milliseconds(160), absl::Milliseconds(320),
      absl::Milliseconds(640), absl::Seconds(1),        absl::Seconds(1),
      absl::Seconds(1)};
  EXPECT_EQ(pauses, expected);
}

}  // namespace
}  // namespace h2rpc::internal
