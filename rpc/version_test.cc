#include "rpc/version.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "rpc/channel.h"
#include "test/util/allocation_counter.h"

namespace h2rpc {
namespace {

using ::h2rpc::testing::AllocationCounter;

// The VERSION file at the top of the source tree, without its newline.
std::string VersionFile() {
  std::ifstream in("VERSION");
  std::stringstream content;
  content << in.rdbuf();
  std::string version = content.str();
  while (!version.empty() &&
         (version.back() == '\n' || version.back() == ' ')) {
    version.pop_back();
  }
  return version;
}

TEST(VersionTest, HeaderAndLibraryCarryTheVersionFile) {
  ASSERT_FALSE(VersionFile().empty()) << "VERSION is not in the runfiles";
  EXPECT_EQ(kH2rpcVersion, VersionFile());
  EXPECT_EQ(std::string(Version()), VersionFile());
  char parts[64];
  std::snprintf(parts, sizeof(parts), "%d.%d.%d", H2RPC_VERSION_MAJOR,
                H2RPC_VERSION_MINOR, H2RPC_VERSION_PATCH);
  EXPECT_EQ(parts, VersionFile());
  EXPECT_EQ(H2RPC_VERSION_STRING, VersionFile());
}

TEST(VersionTest, DefaultUserAgentNamesTheVersion) {
  EXPECT_EQ(ChannelOptions().user_agent, "h2rpc-cpp/" + VersionFile());
}

// The default user agent fits std::string's inline buffer, so a default
// ChannelOptions allocates nothing for it.
TEST(VersionTest, DefaultUserAgentDoesNotAllocate) {
  AllocationCounter counter;
  std::string user_agent = kH2rpcUserAgent;
  EXPECT_EQ(counter.allocations(), 0) << user_agent;
}

}  // namespace
}  // namespace h2rpc
