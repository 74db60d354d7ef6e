// Descriptor exhaustion: a server whose RLIMIT_NOFILE is 64 is sent 100
// connections that stay open, so accept() fails with EMFILE while connections
// are still pending on its level-triggered listener. The server must back off
// instead of spinning on accept() (logging the episode once), keep its CPU use
// low while the connections are held, and serve again once they have closed.
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "test/util/child_process.h"
#include "test/util/server_process.h"
#include "transport/io/socket.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::RunfilesPath;
using ::h2rpc::testing::ServerProcess;
using transport::io::FileDescriptor;

constexpr char kEchoMethod[] = "/grpc.testing.TestService/UnaryCall";
constexpr int kDescriptorLimit = 64;
constexpr int kConnections = 100;
// How long the server's CPU time is measured while the connections are held,
// and the share of one core it may use meanwhile. A listener spinning on
// EMFILE uses all of a core.
constexpr absl::Duration kMeasuringWindow = absl::Seconds(1);
constexpr double kMaxCpuShare = 0.2;

// The client's side of the HTTP/2 handshake (connection preface and an empty
// SETTINGS frame): connections that send it are held by the server until
// they close, not dropped by its handshake timeout.
constexpr char kClientHandshake[] =
    "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    "\x00\x00\x00\x04\x00\x00\x00\x00\x00";
constexpr size_t kClientHandshakeSize = sizeof(kClientHandshake) - 1;

// A TCP connection to 127.0.0.1:`port` that sends the client handshake and
// nothing more. The kernel completes it from the listen backlog whether or
// not the server accepts it.
FileDescriptor Connect(int port) {
  FileDescriptor fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fd;
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&address),
              sizeof(address)) != 0 ||
      send(fd.get(), kClientHandshake, kClientHandshakeSize, MSG_NOSIGNAL) !=
          static_cast<ssize_t>(kClientHandshakeSize)) {
    fd.reset();
  }
  return fd;
}

// UBSan's vptr check handler: not null when this test, and so abuse_server
// (built with the same flags), is built with -fsanitize=undefined.
extern "C" void __ubsan_handle_dynamic_type_cache_miss_abort()
    __attribute__((weak));

int CountOccurrences(const std::string& text, const std::string& part) {
  int count = 0;
  for (size_t at = text.find(part); at != std::string::npos;
       at = text.find(part, at + part.size())) {
    ++count;
  }
  return count;
}

TEST(AcceptBackoffTest, OutOfDescriptorsTheServerBacksOffAndRecovers) {
  if (&__ubsan_handle_dynamic_type_cache_miss_abort != nullptr) {
    // The first time UBSan meets a (type, vptr) pair it probes memory with
    // pipe(); in a process out of descriptors that fails and UBSan reports
    // a valid object as having an "invalid vptr", killing the server. The
    // plain and TSan builds run this test.
    GTEST_SKIP() << "UBSan's vptr check cannot run in a process that is out "
                    "of descriptors";
  }
  std::string error;
  std::unique_ptr<ServerProcess> server =
      ServerProcess::Start("abuse_server",
                           {RunfilesPath("test/abuse/abuse_server"),
                            absl::StrCat("--rlimit_nofile=", kDescriptorLimit)},
                           absl::Seconds(30), &error);
  ASSERT_NE(server, nullptr) << error;
  const int port = server->port();

  std::vector<FileDescriptor> connections;
  for (int i = 0; i < kConnections; ++i) {
    connections.push_back(Connect(port));
    ASSERT_TRUE(connections.back().valid())
        << "connection " << i << ": " << std::strerror(errno);
  }

  const std::string backoff_line =
      absl::StrCat("h2rpc server: accept failed on 127.0.0.1:", port,
                   ": Too many open files; backing off");
  ASSERT_TRUE(server->WaitForStderr(backoff_line, absl::Seconds(30)))
      << "no back-off line within 30 s; server stderr:\n"
      << server->Stderr();

  // A measuring window, not a wait for an event: the CPU time the server
  // uses over it while the connections stay pending.
  absl::Duration cpu_before;
  absl::Duration cpu_after;
  ASSERT_TRUE(server->CpuTime(&cpu_before));
  const absl::Time window_start = absl::Now();
  absl::SleepFor(kMeasuringWindow);
  ASSERT_TRUE(server->CpuTime(&cpu_after));
  const absl::Duration window = absl::Now() - window_start;
  const double share = absl::FDivDuration(cpu_after - cpu_before, window);
  std::printf("server CPU while out of descriptors: %.1f%% of one core\n",
              100 * share);
  EXPECT_LT(share, kMaxCpuShare)
      << "the server used " << absl::FormatDuration(cpu_after - cpu_before)
      << " of CPU in " << absl::FormatDuration(window)
      << " while out of descriptors";
  // One line for the whole episode, however many retries it took.
  const std::string held_stderr = server->Stderr();
  EXPECT_EQ(CountOccurrences(held_stderr, "backing off"), 1) << held_stderr;

  // Descriptors free up: the server accepts again (the pending connections,
  // now closed, and the channel's).
  connections.clear();
  std::shared_ptr<Channel> channel =
      CreateChannel(absl::StrCat("127.0.0.1:", port));
  ClientContext context;
  context.set_timeout(absl::Seconds(20));
  SimpleRequest request;
  request.mutable_payload()->set_body("after the flood");
  SimpleResponse response;
  const Status status =
      channel->UnaryCall(&context, kEchoMethod, request, &response);
  ASSERT_TRUE(status.ok()) << status.ToString() << "\nserver stderr:\n"
                           << server->Stderr();
  EXPECT_EQ(response.payload().body(), "after the flood");

  std::string how;
  EXPECT_TRUE(server->Stop(absl::Seconds(10), &how))
      << how << "\nserver stderr:\n"
      << server->Stderr();
}

}  // namespace
}  // namespace h2rpc
