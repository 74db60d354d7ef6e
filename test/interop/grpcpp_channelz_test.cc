// A real channelz client: gRPC C++ 1.51's grpc.channelz.v1 stub
// (grpc_cpp_plugin's code from Debian's grpc-proto file,
// //proto:channelz_grpc_proto) against h2rpc_interop_server (a child
// process, found through the H2RPC_INTEROP_SERVER environment variable the
// BUILD rule sets) while gRPC C++ clients load it: the server and its
// listening socket, its connections paged one by one, each connection's
// counts, the call counts growing under load and adding up once it stops,
// and NOT_FOUND for what does not exist.

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "proto/grpc/channelz/v1/channelz.grpc.pb.h"
#include "proto/grpc/channelz/v1/channelz.pb.h"
#include "proto/grpc/testing/empty.pb.h"
#include "proto/grpc/testing/messages.pb.h"
#include "proto/grpc/testing/test.grpc.pb.h"
#include "test/interop/interop_server_process.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

namespace channelz = grpc::channelz::v1;
using ::h2rpc::testing::InteropServerProcess;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::WaitFor;

constexpr int kLoadChannels = 3;

// A gRPC C++ channel to 127.0.0.1:`port` with a connection of its own (a
// distinct channel argument keeps gRPC from sharing subchannels).
std::shared_ptr<grpc::Channel> NewChannel(int port, int index) {
  grpc::ChannelArguments args;
  args.SetInt("h2rpc.test.channel_index", index);
  return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port),
                                   grpc::InsecureChannelCredentials(), args);
}

void SetDeadline(grpc::ClientContext* context) {
  context->set_deadline(std::chrono::system_clock::now() +
                        absl::ToChronoSeconds(kHangTimeout));
}

class GrpcppChannelzTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* path = std::getenv("H2RPC_INTEROP_SERVER");
    ASSERT_NE(path, nullptr) << "H2RPC_INTEROP_SERVER is not set";
    std::string error;
    ASSERT_TRUE(server_.Start(path, kHangTimeout, &error)) << error;
    stub_ = channelz::Channelz::NewStub(NewChannel(server_.port(), -1));
  }

  void TearDown() override {
    stop_.store(true);
    for (std::thread& thread : load_) thread.join();
  }

  // kLoadChannels threads calling UnaryCall (with a payload) and EmptyCall
  // in turn until the test ends, each on a channel of its own.
  void StartLoad() {
    for (int i = 0; i < kLoadChannels; ++i) {
      load_.emplace_back([this, i] {
        auto stub = grpc::testing::TestService::NewStub(
            NewChannel(server_.port(), i));
        while (!stop_.load()) {
          grpc::ClientContext unary_context;
          SetDeadline(&unary_context);
          grpc::testing::SimpleRequest request;
          request.set_response_size(64);
          grpc::testing::SimpleResponse response;
          if (stub->UnaryCall(&unary_context, request, &response).ok()) {
            ok_calls_.fetch_add(1);
          }
          grpc::ClientContext empty_context;
          SetDeadline(&empty_context);
          grpc::testing::Empty empty;
          if (stub->EmptyCall(&empty_context, empty, &empty).ok()) {
            ok_calls_.fetch_add(1);
          }
        }
      });
    }
  }
  void StopLoad() {
    stop_.store(true);
    for (std::thread& thread : load_) thread.join();
    load_.clear();
  }

  channelz::Server OnlyServer() {
    grpc::ClientContext context;
    SetDeadline(&context);
    channelz::GetServersResponse response;
    const grpc::Status status =
        stub_->GetServers(&context, channelz::GetServersRequest(), &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_TRUE(response.end());
    EXPECT_EQ(response.server_size(), 1);
    return response.server_size() == 1 ? response.server(0)
                                       : channelz::Server();
  }

  // Every connection of `server_id`, one page of `page_size` at a time.
  std::vector<channelz::SocketRef> AllServerSockets(int64_t server_id,
                                                    int page_size) {
    std::vector<channelz::SocketRef> sockets;
    int64_t start = 0;
    for (int pages = 0; pages < 100; ++pages) {
      grpc::ClientContext context;
      SetDeadline(&context);
      channelz::GetServerSocketsRequest request;
      request.set_server_id(server_id);
      request.set_start_socket_id(start);
      request.set_max_results(page_size);
      channelz::GetServerSocketsResponse response;
      const grpc::Status status =
          stub_->GetServerSockets(&context, request, &response);
      EXPECT_TRUE(status.ok()) << status.error_message();
      if (!status.ok()) break;
      if (page_size > 0) EXPECT_LE(response.socket_ref_size(), page_size);
      for (const auto& ref : response.socket_ref()) {
        EXPECT_GE(ref.socket_id(), start);
        sockets.push_back(ref);
      }
      if (response.end()) break;
      EXPECT_GT(response.socket_ref_size(), 0);
      if (response.socket_ref_size() == 0) break;
      start = response.socket_ref().rbegin()->socket_id() + 1;
    }
    return sockets;
  }

  // The socket `id` of the interop server's channelz, or of `stub`'s.
  channelz::Socket GetSocket(int64_t id,
                             channelz::Channelz::Stub* stub = nullptr) {
    grpc::ClientContext context;
    SetDeadline(&context);
    channelz::GetSocketRequest request;
    request.set_socket_id(id);
    channelz::GetSocketResponse response;
    const grpc::Status status =
        (stub != nullptr ? stub : stub_.get())
            ->GetSocket(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.socket();
  }

  InteropServerProcess server_;
  std::unique_ptr<channelz::Channelz::Stub> stub_;
  std::vector<std::thread> load_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> ok_calls_{0};
};

TEST_F(GrpcppChannelzTest, ShowsTheServerItsSocketsAndTheirCountsUnderLoad) {
  StartLoad();
  ASSERT_TRUE(WaitFor([&] { return ok_calls_.load() >= 300; }));

  const channelz::Server server = OnlyServer();
  EXPECT_GT(server.ref().server_id(), 0);
  EXPECT_GE(server.data().calls_started(), 300);
  EXPECT_TRUE(server.data().has_last_call_started_timestamp());
  ASSERT_EQ(server.listen_socket_size(), 1);
  const channelz::Socket listener =
      GetSocket(server.listen_socket(0).socket_id());
  ASSERT_TRUE(listener.local().has_tcpip_address());
  EXPECT_EQ(listener.local().tcpip_address().port(), server_.port());
  EXPECT_EQ(listener.local().tcpip_address().ip_address(),
            std::string("\x7f\x00\x00\x01", 4));
  EXPECT_FALSE(listener.has_remote());

  // The server's single GetServer agrees with the listing.
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    channelz::GetServerRequest request;
    request.set_server_id(server.ref().server_id());
    channelz::GetServerResponse response;
    ASSERT_TRUE(stub_->GetServer(&context, request, &response).ok());
    EXPECT_EQ(response.server().ref().server_id(), server.ref().server_id());
    EXPECT_GE(response.server().data().calls_started(),
              server.data().calls_started());
  }

  // The load's connections and the channelz client's own, paged one by one
  // and listed whole the same.
  const std::vector<channelz::SocketRef> one_by_one =
      AllServerSockets(server.ref().server_id(), 1);
  const std::vector<channelz::SocketRef> whole =
      AllServerSockets(server.ref().server_id(), 0);
  ASSERT_EQ(one_by_one.size(), kLoadChannels + 1u);
  ASSERT_EQ(whole.size(), one_by_one.size());
  int busy = 0;
  for (size_t i = 0; i < whole.size(); ++i) {
    EXPECT_EQ(whole[i].socket_id(), one_by_one[i].socket_id());
    const channelz::Socket socket = GetSocket(whole[i].socket_id());
    ASSERT_TRUE(socket.remote().has_tcpip_address());
    EXPECT_EQ(socket.local().tcpip_address().port(), server_.port());
    EXPECT_GT(socket.remote().tcpip_address().port(), 0);
    EXPECT_FALSE(socket.has_security());
    const channelz::SocketData& data = socket.data();
    EXPECT_GE(data.streams_started(),
              data.streams_succeeded() + data.streams_failed());
    if (data.streams_started() >= 50) {
      ++busy;
      EXPECT_GT(data.messages_received(), 0);
      EXPECT_GT(data.messages_sent(), 0);
      EXPECT_TRUE(data.has_last_remote_stream_created_timestamp());
      EXPECT_TRUE(data.has_last_message_received_timestamp());
      EXPECT_FALSE(data.has_last_local_stream_created_timestamp());
    }
  }
  EXPECT_EQ(busy, kLoadChannels);

  // Once the load stops, every call it made is counted as ended, each
  // success as one.
  StopLoad();
  const int64_t ok_calls = ok_calls_.load();
  ASSERT_TRUE(WaitFor([&] {
    const channelz::ServerData data = OnlyServer().data();
    // Started: the load's and channelz's own calls, GetServers included.
    return data.calls_succeeded() + data.calls_failed() + 1 ==
           data.calls_started();
  }));
  const channelz::ServerData data = OnlyServer().data();
  EXPECT_GE(data.calls_succeeded(), ok_calls);
  EXPECT_EQ(data.calls_failed(), 0);
}

// h2rpc_proxy --admin between gRPC C++ clients and the interop server: its
// channelz shows its channel to the target, the subchannel and the
// connection its forwarded calls went over.
TEST_F(GrpcppChannelzTest, AProxysChannelItsSubchannelAndItsConnection) {
  const char* path = std::getenv("H2RPC_PROXY");
  ASSERT_NE(path, nullptr) << "H2RPC_PROXY is not set";
  InteropServerProcess proxy;
  std::string error;
  ASSERT_TRUE(proxy.Start(path,
                          {"--listen=127.0.0.1:0",
                           absl::StrCat("--target=127.0.0.1:", server_.port()),
                           "--admin"},
                          kHangTimeout, &error))
      << error;
  auto test_stub =
      grpc::testing::TestService::NewStub(NewChannel(proxy.port(), 0));
  constexpr int kCalls = 20;
  for (int i = 0; i < kCalls; ++i) {
    grpc::ClientContext context;
    SetDeadline(&context);
    grpc::testing::Empty empty;
    ASSERT_TRUE(test_stub->EmptyCall(&context, empty, &empty).ok());
  }
  auto channelz = channelz::Channelz::NewStub(NewChannel(proxy.port(), 1));

  grpc::ClientContext channels_context;
  SetDeadline(&channels_context);
  channelz::GetTopChannelsResponse channels;
  ASSERT_TRUE(channelz
                  ->GetTopChannels(&channels_context,
                                   channelz::GetTopChannelsRequest(), &channels)
                  .ok());
  ASSERT_EQ(channels.channel_size(), 1);
  const channelz::Channel& channel = channels.channel(0);
  EXPECT_EQ(channel.data().target(),
            absl::StrCat("127.0.0.1:", server_.port()));
  EXPECT_EQ(channel.data().state().state(),
            channelz::ChannelConnectivityState::READY);
  EXPECT_EQ(channel.data().calls_started(), kCalls);
  EXPECT_EQ(channel.data().calls_succeeded(), kCalls);
  ASSERT_EQ(channel.subchannel_ref_size(), 1);

  grpc::ClientContext subchannel_context;
  SetDeadline(&subchannel_context);
  channelz::GetSubchannelRequest subchannel_request;
  subchannel_request.set_subchannel_id(channel.subchannel_ref(0).subchannel_id());
  channelz::GetSubchannelResponse subchannel;
  ASSERT_TRUE(channelz
                  ->GetSubchannel(&subchannel_context, subchannel_request,
                                  &subchannel)
                  .ok());
  EXPECT_EQ(subchannel.subchannel().data().state().state(),
            channelz::ChannelConnectivityState::READY);
  EXPECT_EQ(subchannel.subchannel().data().calls_started(), kCalls);
  ASSERT_EQ(subchannel.subchannel().socket_ref_size(), 1);

  const channelz::Socket socket = GetSocket(
      subchannel.subchannel().socket_ref(0).socket_id(), channelz.get());
  ASSERT_TRUE(socket.remote().has_tcpip_address());
  EXPECT_EQ(socket.remote().tcpip_address().port(), server_.port());
  EXPECT_EQ(socket.remote_name(), absl::StrCat("127.0.0.1:", server_.port()));
  EXPECT_EQ(socket.data().streams_started(), kCalls);
  EXPECT_EQ(socket.data().streams_succeeded(), kCalls);
  EXPECT_EQ(socket.data().messages_sent(), kCalls);
  EXPECT_EQ(socket.data().messages_received(), kCalls);
  EXPECT_TRUE(socket.data().has_last_local_stream_created_timestamp());
}

TEST_F(GrpcppChannelzTest, UnknownIdsAreNotFoundAndAServerHasNoChannels) {
  grpc::ClientContext channels_context;
  SetDeadline(&channels_context);
  channelz::GetTopChannelsResponse channels;
  ASSERT_TRUE(stub_
                  ->GetTopChannels(&channels_context,
                                   channelz::GetTopChannelsRequest(), &channels)
                  .ok());
  EXPECT_EQ(channels.channel_size(), 0);
  EXPECT_TRUE(channels.end());

  const int64_t server_id = OnlyServer().ref().server_id();
  grpc::ClientContext channel_context;
  SetDeadline(&channel_context);
  channelz::GetChannelRequest channel_request;
  channel_request.set_channel_id(server_id);  // a server's id, not a channel's
  channelz::GetChannelResponse channel;
  const grpc::Status status =
      stub_->GetChannel(&channel_context, channel_request, &channel);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(status.error_message(), absl::StrCat("no channel ", server_id));

  grpc::ClientContext socket_context;
  SetDeadline(&socket_context);
  channelz::GetSocketRequest socket_request;
  socket_request.set_socket_id(1 << 30);
  channelz::GetSocketResponse socket;
  EXPECT_EQ(stub_->GetSocket(&socket_context, socket_request, &socket)
                .error_code(),
            grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace h2rpc
