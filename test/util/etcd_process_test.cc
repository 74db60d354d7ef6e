#include "test/util/etcd_process.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"

namespace h2rpc::testing {
namespace {

// Generous: only catches hangs (etcd serves in about a second).
constexpr absl::Duration kStartTimeout = absl::Seconds(60);

bool Exists(const std::string& path) {
  struct stat info;
  return lstat(path.c_str(), &info) == 0;
}

// The inodes of the sockets process `pid` has open.
std::set<std::string> SocketInodes(pid_t pid) {
  std::set<std::string> inodes;
  const std::string fd_dir = absl::StrCat("/proc/", pid, "/fd");
  DIR* dir = opendir(fd_dir.c_str());
  if (dir == nullptr) return inodes;
  while (const dirent* entry = readdir(dir)) {
    char target[256];
    const std::string link = absl::StrCat(fd_dir, "/", entry->d_name);
    const ssize_t n = readlink(link.c_str(), target, sizeof(target));
    if (n <= 0) continue;  // "." and ".."
    // "socket:[12345]"
    absl::string_view text(target, static_cast<size_t>(n));
    if (absl::ConsumePrefix(&text, "socket:[") &&
        absl::ConsumeSuffix(&text, "]")) {
      inodes.insert(std::string(text));
    }
  }
  closedir(dir);
  return inodes;
}

// The local addresses ("127.0.0.1:2379"; an IPv6 one as "tcp6 <hex>:port")
// of the listening TCP sockets among `inodes`, from /proc/net/tcp and
// /proc/net/tcp6.
std::vector<std::string> ListeningAddresses(
    const std::set<std::string>& inodes) {
  std::vector<std::string> addresses;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream file(table);
    std::string line;
    std::getline(file, line);  // the column titles
    while (std::getline(file, line)) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when
      // retrnsmt uid timeout inode ...
      const std::vector<absl::string_view> fields =
          absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (fields.size() < 10 || fields[3] != "0A" ||  // TCP_LISTEN
          inodes.count(std::string(fields[9])) == 0) {
        continue;
      }
      const std::vector<absl::string_view> address =
          absl::StrSplit(fields[1], ':');
      uint32_t port = 0;
      if (address.size() != 2 || !absl::SimpleHexAtoi(address[1], &port)) {
        addresses.push_back(absl::StrCat("unparsed ", fields[1]));
        continue;
      }
      uint32_t ip = 0;
      if (address[0].size() == 8 && absl::SimpleHexAtoi(address[0], &ip)) {
        // The kernel prints the address's bytes as a host-order integer.
        in_addr in = {};
        in.s_addr = ip;
        char text[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &in, text, sizeof(text));
        addresses.push_back(absl::StrCat(text, ":", port));
      } else {
        addresses.push_back(absl::StrCat("tcp6 ", address[0], ":", port));
      }
    }
  }
  std::sort(addresses.begin(), addresses.end());
  return addresses;
}

TEST(EtcdProcessTest, ServesPutAndGetThroughEtcdctl) {
  std::string error;
  std::unique_ptr<EtcdProcess> etcd = EtcdProcess::Start(kStartTimeout, &error);
  ASSERT_NE(etcd, nullptr) << error;
  EXPECT_GT(etcd->pid(), 0);
  EXPECT_GT(etcd->client_port(), 0);
  EXPECT_EQ(etcd->endpoint(), absl::StrCat("127.0.0.1:", etcd->client_port()));

  std::string output;
  ASSERT_TRUE(etcd->Etcdctl({"put", "k", "v"}, &output, &error)) << error;
  EXPECT_EQ(output, "OK\n");
  ASSERT_TRUE(
      etcd->Etcdctl({"get", "k", "--print-value-only"}, &output, &error))
      << error;
  EXPECT_EQ(output, "v\n");
}

TEST(EtcdProcessTest, ListensOnlyOnItsTwoLoopbackPorts) {
  std::string error;
  std::unique_ptr<EtcdProcess> etcd = EtcdProcess::Start(kStartTimeout, &error);
  ASSERT_NE(etcd, nullptr) << error;
  std::vector<std::string> expected = {
      absl::StrCat("127.0.0.1:", etcd->client_port()),
      absl::StrCat("127.0.0.1:", etcd->peer_port())};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(ListeningAddresses(SocketInodes(etcd->pid())), expected);
}

TEST(EtcdProcessTest, EtcdctlFailureSaysHowItEnded) {
  std::string error;
  std::unique_ptr<EtcdProcess> etcd = EtcdProcess::Start(kStartTimeout, &error);
  ASSERT_NE(etcd, nullptr) << error;
  std::string output = "untouched";
  error.clear();
  EXPECT_FALSE(etcd->Etcdctl({"no-such-command"}, &output, &error));
  EXPECT_EQ(output, "untouched");
  EXPECT_NE(error.find("exit code"), std::string::npos) << error;
  EXPECT_NE(error.find("no-such-command"), std::string::npos) << error;
}

TEST(EtcdProcessTest, StopEndsEtcdAndRemovesItsData) {
  std::string error;
  std::unique_ptr<EtcdProcess> etcd = EtcdProcess::Start(kStartTimeout, &error);
  ASSERT_NE(etcd, nullptr) << error;
  const std::string data_dir = etcd->data_dir();
  EXPECT_TRUE(Exists(absl::StrCat(data_dir, "/member")));

  std::string how;
  EXPECT_TRUE(etcd->Stop(absl::Seconds(30), &how)) << how;
  EXPECT_EQ(etcd->pid(), -1);
  EXPECT_FALSE(Exists(data_dir));
  // Once stopped, the same answer.
  EXPECT_TRUE(etcd->Stop(absl::Seconds(30), &how)) << how;
}

TEST(EtcdProcessTest, TwoRunSideBySide) {
  std::string error;
  std::unique_ptr<EtcdProcess> first =
      EtcdProcess::Start(kStartTimeout, &error);
  ASSERT_NE(first, nullptr) << error;
  std::unique_ptr<EtcdProcess> second =
      EtcdProcess::Start(kStartTimeout, &error);
  ASSERT_NE(second, nullptr) << error;
  EXPECT_NE(first->data_dir(), second->data_dir());

  ASSERT_TRUE(first->Etcdctl({"put", "k", "first"}, nullptr, &error)) << error;
  ASSERT_TRUE(second->Etcdctl({"put", "k", "second"}, nullptr, &error))
      << error;
  std::string output;
  ASSERT_TRUE(
      first->Etcdctl({"get", "k", "--print-value-only"}, &output, &error))
      << error;
  EXPECT_EQ(output, "first\n");
}

}  // namespace
}  // namespace h2rpc::testing
