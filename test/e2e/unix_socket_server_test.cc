// An h2rpc Server listening on unix-domain sockets (a path, "unix:///abs",
// an abstract name), driven by a raw HTTP/2 client over the socket: what it
// serves, the peer it reports, and the socket file's life (a stale one
// replaced, another kind of file refused, the file removed at shutdown).
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "test/util/loopback_socket.h"
#include "test/util/raw_h2_client.h"
#include "test/util/stub_server.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::ConnectToUnix;
using ::h2rpc::testing::GrpcFrame;
using ::h2rpc::testing::GrpcRequestHeaders;
using ::h2rpc::testing::ParseGrpcFrames;
using ::h2rpc::testing::RawH2Client;
using ::h2rpc::testing::RawRequest;
using ::h2rpc::testing::RawResponse;
using ::h2rpc::testing::SetHeader;
using ::h2rpc::testing::StubServer;
using ::testing::HasSubstr;

constexpr char kPeer[] = "/h2rpc.test.Unix/Peer";

// A fresh directory under /tmp (Bazel's TEST_TMPDIR can be too long for
// sun_path), removed with the files the tests leave in it.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/h2rpc_unix_test_XXXXXX";
    if (mkdtemp(pattern) != nullptr) path_ = pattern;
    EXPECT_FALSE(path_.empty()) << "mkdtemp: " << strerror(errno);
  }
  ~TempDir() {
    for (const char* name : {"s", "t", "file"}) unlink(File(name).c_str());
    rmdir(path_.c_str());
  }
  // `name` in the directory ("s", "t" or "file": the destructor removes
  // those).
  std::string File(const char* name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

bool Exists(const std::string& path) {
  struct stat info;
  return lstat(path.c_str(), &info) == 0;
}

bool IsSocketFile(const std::string& path) {
  struct stat info;
  return lstat(path.c_str(), &info) == 0 && S_ISSOCK(info.st_mode);
}

// Starts `server` on `addresses`, answering kPeer with the peer its
// ServerContext reports; Start()'s status.
Status StartServer(StubServer* server,
                   const std::vector<std::string>& addresses) {
  for (const std::string& address : addresses) server->ListenOn(address);
  server->builder().RegisterUnary<SimpleRequest, SimpleResponse>(
      kPeer, [](ServerContext* context, const SimpleRequest&,
                SimpleResponse* response) {
        response->mutable_payload()->set_body(context->peer());
        return Status();
      });
  return server->Start();
}

// Calls kPeer over `client`; the peer the server reported, or "(failed: ...)".
std::string CallPeer(RawH2Client* client) {
  RawRequest request;
  request.headers = GrpcRequestHeaders(kPeer, 0);
  SetHeader(&request.headers, ":authority", "localhost");
  request.body = GrpcFrame(SimpleRequest().SerializeAsString());
  const RawResponse response = client->Call(request, absl::Seconds(30));
  std::vector<std::string> messages;
  SimpleResponse reply;
  if (response.Trailer("grpc-status") != "0" ||
      !ParseGrpcFrames(response.body, &messages) || messages.size() != 1 ||
      !reply.ParseFromString(messages[0])) {
    return "(failed: " + response.DebugString() + ")";
  }
  return reply.payload().body();
}

// Connects to the unix socket at `path` (or the abstract `path`) and calls
// kPeer.
std::string ConnectAndCallPeer(const std::string& path, bool abstract) {
  const int fd = ConnectToUnix(path, abstract);
  if (fd < 0) return absl::StrCat("(connect failed: ", strerror(errno), ")");
  std::string error;
  std::unique_ptr<RawH2Client> client = RawH2Client::Adopt(fd, &error);
  if (client == nullptr) return "(failed: " + error + ")";
  return CallPeer(client.get());
}

TEST(UnixSocketServerTest, ServesOnAPathAndRemovesTheFileAtShutdown) {
  TempDir dir;
  const std::string path = dir.File("s");
  StubServer server;
  const Status status = StartServer(&server, {"unix:" + path});
  ASSERT_TRUE(server.started()) << status.ToString();
  EXPECT_EQ(server.port(0), 0);
  EXPECT_TRUE(IsSocketFile(path));

  // The client's socket is unnamed: the peer is the server's socket, as
  // gRPC C++ reports it.
  EXPECT_EQ(ConnectAndCallPeer(path, false), "unix:" + path);
  EXPECT_EQ(ConnectAndCallPeer(path, false), "unix:" + path);

  server.server().Shutdown(absl::Now());
  EXPECT_FALSE(Exists(path));
  EXPECT_LT(ConnectToUnix(path), 0);
}

TEST(UnixSocketServerTest, ServesOnAnAbsolutePathWithThreeSlashes) {
  TempDir dir;
  const std::string path = dir.File("s");
  StubServer server;
  const Status status = StartServer(&server, {"unix://" + path});
  ASSERT_TRUE(server.started()) << status.ToString();
  EXPECT_EQ(ConnectAndCallPeer(path, false), "unix:" + path);
  server.Stop();
  EXPECT_FALSE(Exists(path));
}

TEST(UnixSocketServerTest, ServesOnAnAbstractName) {
  const std::string name = absl::StrCat("h2rpc_unix_test/", getpid());
  StubServer server;
  const Status status = StartServer(&server, {"unix-abstract:" + name});
  ASSERT_TRUE(server.started()) << status.ToString();
  EXPECT_EQ(server.port(0), 0);
  EXPECT_EQ(ConnectAndCallPeer(name, true), "unix-abstract:" + name);
  server.server().Shutdown(absl::Now());
  // The name is released with the socket.
  EXPECT_LT(ConnectToUnix(name, true), 0);
}

// A channel's target keeps every byte of an abstract name (a byte outside
// printable ASCII, a backslash), as the policy's canonical address text
// writes them escaped.
TEST(UnixSocketServerTest, AChannelReachesAnAbstractNameWithAnyBytes) {
  const std::string name =
      absl::StrCat("h2rpc_unix_test\x01\\", getpid(), std::string(1, '\0'));
  StubServer server;
  const Status status = StartServer(&server, {"unix-abstract:" + name});
  ASSERT_TRUE(server.started()) << status.ToString();
  std::shared_ptr<Channel> channel = CreateChannel("unix-abstract:" + name);
  ClientContext context;
  context.set_timeout(absl::Seconds(30));
  SimpleRequest request;
  SimpleResponse response;
  const Status call = channel->UnaryCall(&context, kPeer, request, &response);
  EXPECT_TRUE(call.ok()) << call.ToString();
}

TEST(UnixSocketServerTest, ServesTcpAndUnixPortsTogether) {
  TempDir dir;
  StubServer server;
  const Status status =
      StartServer(&server, {"127.0.0.1:0", "unix:" + dir.File("s")});
  ASSERT_TRUE(server.started()) << status.ToString();
  ASSERT_GT(server.port(0), 0);
  EXPECT_EQ(server.port(1), 0);
  std::string error;
  std::unique_ptr<RawH2Client> tcp =
      RawH2Client::Connect(server.port(0), &error);
  ASSERT_NE(tcp, nullptr) << error;
  EXPECT_THAT(CallPeer(tcp.get()), ::testing::StartsWith("127.0.0.1:"));
  EXPECT_EQ(ConnectAndCallPeer(dir.File("s"), false), "unix:" + dir.File("s"));
}

TEST(UnixSocketServerTest, ReplacesAStaleSocketFile) {
  TempDir dir;
  const std::string path = dir.File("s");
  // What a server that exited without shutting down leaves: a socket file
  // nothing listens on.
  {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    ASSERT_LT(path.size(), sizeof(addr.sun_path));
    memcpy(addr.sun_path, path.data(), path.size());
    ASSERT_EQ(bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)),
              0)
        << strerror(errno);
    close(fd);
  }
  ASSERT_TRUE(IsSocketFile(path));
  StubServer server;
  const Status status = StartServer(&server, {"unix:" + path});
  ASSERT_TRUE(server.started()) << status.ToString();
  EXPECT_EQ(ConnectAndCallPeer(path, false), "unix:" + path);
}

TEST(UnixSocketServerTest, RefusesARegularFileAndLeavesIt) {
  TempDir dir;
  const std::string path = dir.File("file");
  {
    const int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "data", 4), 4);
    close(fd);
  }
  StubServer server;
  const Status status = StartServer(&server, {"unix:" + path});
  EXPECT_FALSE(server.started());
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(),
            "cannot listen on unix:" + path +
                ": a regular file exists at that path (only a socket file "
                "left there is replaced)");
  struct stat info;
  ASSERT_EQ(lstat(path.c_str(), &info), 0);
  EXPECT_TRUE(S_ISREG(info.st_mode));
  EXPECT_EQ(info.st_size, 4);
}

TEST(UnixSocketServerTest, AFailedLaterPortRemovesTheFileBoundBefore) {
  TempDir dir;
  {
    const int fd =
        open(dir.File("file").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    close(fd);
  }
  StubServer server;
  const Status status = StartServer(
      &server, {"unix:" + dir.File("s"), "unix:" + dir.File("file")});
  EXPECT_FALSE(server.started());
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_FALSE(Exists(dir.File("s")));
  EXPECT_TRUE(Exists(dir.File("file")));
}

TEST(UnixSocketServerTest, RefusesMalformedUnixAddresses) {
  const std::string too_long = "/tmp/" + std::string(103, 'x');  // 108 bytes
  const std::pair<std::string, std::string> cases[] = {
      {"unix:", "empty unix socket path"},
      {"unix-abstract:", "empty abstract unix socket name"},
      {"unix://host/x", "an authority ('host') is not allowed"},
      {"unix:" + too_long, "is 108 bytes; the limit is 107 (sun_path)"},
  };
  for (const auto& [address, why] : cases) {
    StubServer server;
    const Status status = StartServer(&server, {address});
    EXPECT_FALSE(server.started()) << address;
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << address;
    EXPECT_THAT(status.message(), HasSubstr(why)) << address;
    EXPECT_THAT(status.message(), HasSubstr("'" + address + "'")) << address;
  }
  EXPECT_FALSE(Exists("/tmp/" + std::string(103, 'x')));
}

}  // namespace
}  // namespace h2rpc
