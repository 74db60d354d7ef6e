// ChannelzService with an h2rpc client (the generated
// grpc::channelz::v1::Channelz::Stub) over loopback TCP, on entities
// registered directly in the Channelz's registry: every method's mapping of
// refs, states, targets, call, stream and message counts and timestamps;
// IPv4, IPv6 and unix-domain (path, abstract, unnamed) addresses; TLS
// details; listening sockets; pages (ids increasing, `end`, the default
// and the largest page); NOT_FOUND for unknown ids and other kinds' ids; a
// null Channelz reported as misuse.

#include "rpc/channelz_service.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "google/protobuf/timestamp.pb.h"
#include "gtest/gtest.h"
#include "proto/grpc/channelz/v1/channelz.h2rpc.pb.h"
#include "proto/grpc/channelz/v1/channelz.pb.h"
#include "rpc/channel.h"
#include "rpc/channelz.h"
#include "rpc/client_context.h"
#include "rpc/connectivity_state.h"
#include "rpc/internal/channelz/channelz_registry.h"
#include "rpc/internal/common/misuse.h"
#include "rpc/server.h"
#include "rpc/status.h"
#include "transport/http2/connection_stats.h"
#include "transport/io/monotonic_time.h"
#include "transport/io/socket.h"

namespace h2rpc {
namespace {

namespace channelz = ::grpc::channelz::v1;
using internal::ChannelzAccess;
using internal::ChannelzNode;
using internal::ChannelzRegistry;
using internal::ChannelzTlsData;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using transport::io::MonotonicTime;
using transport::io::SocketAddress;

constexpr absl::Duration kTimeout = absl::Seconds(30);

SocketAddress Tcp(const std::string& target) {
  std::vector<SocketAddress> addresses;
  const Status status = transport::io::ResolveNumericTarget(target, &addresses);
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(addresses.size(), 1u) << target;
  return addresses.empty() ? SocketAddress() : addresses[0];
}

SocketAddress Unix(const std::string& name, bool abstract) {
  SocketAddress address;
  const Status status =
      transport::io::UnixSocketAddress(name, abstract, &address);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return address;
}

// A unix-domain address with no name (a client's end, as accept() reports
// it).
SocketAddress UnnamedUnix() {
  SocketAddress address;
  address.storage.ss_family = AF_UNIX;
  address.size = offsetof(sockaddr_un, sun_path);
  return address;
}

absl::Time TimeOf(const google::protobuf::Timestamp& timestamp) {
  return absl::FromUnixSeconds(timestamp.seconds()) +
         absl::Nanoseconds(timestamp.nanos());
}

std::string Bytes(std::vector<uint8_t> bytes) {
  return std::string(bytes.begin(), bytes.end());
}

class ChannelzServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    channelz_ = std::make_shared<Channelz>();
    registry_ = &ChannelzAccess::Registry(*channelz_);
    int port = 0;
    Status status;
    Server::Builder builder;
    builder.AddListeningPort("127.0.0.1:0", &port);
    // The service object need not outlive the server.
    ChannelzService(channelz_).AddTo(builder);
    server_ = builder.BuildAndStart(&status);
    ASSERT_NE(server_, nullptr) << status.ToString();
    stub_ = std::make_unique<channelz::Channelz::Stub>(
        CreateChannel("127.0.0.1:" + std::to_string(port)));
  }

  // Calls `method` of the stub with a deadline of kTimeout.
  template <class Request, class Response>
  Status Call(Status (channelz::Channelz::Stub::*method)(ClientContext*,
                                                         const Request&,
                                                         Response*),
              const Request& request, Response* response) {
    ClientContext context;
    context.set_timeout(kTimeout);
    return ((*stub_).*method)(&context, request, response);
  }

  channelz::GetTopChannelsResponse TopChannels(int64_t start,
                                               int64_t max_results) {
    channelz::GetTopChannelsRequest request;
    request.set_start_channel_id(start);
    request.set_max_results(max_results);
    channelz::GetTopChannelsResponse response;
    const Status status =
        Call(&channelz::Channelz::Stub::GetTopChannels, request, &response);
    EXPECT_TRUE(status.ok()) << status.ToString();
    return response;
  }
  channelz::GetServersResponse Servers(int64_t start, int64_t max_results) {
    channelz::GetServersRequest request;
    request.set_start_server_id(start);
    request.set_max_results(max_results);
    channelz::GetServersResponse response;
    const Status status =
        Call(&channelz::Channelz::Stub::GetServers, request, &response);
    EXPECT_TRUE(status.ok()) << status.ToString();
    return response;
  }
  channelz::GetServerSocketsResponse ServerSockets(int64_t server,
                                                   int64_t start,
                                                   int64_t max_results) {
    channelz::GetServerSocketsRequest request;
    request.set_server_id(server);
    request.set_start_socket_id(start);
    request.set_max_results(max_results);
    channelz::GetServerSocketsResponse response;
    const Status status =
        Call(&channelz::Channelz::Stub::GetServerSockets, request, &response);
    EXPECT_TRUE(status.ok()) << status.ToString();
    return response;
  }
  Status GetChannel(int64_t id, channelz::Channel* channel) {
    channelz::GetChannelRequest request;
    request.set_channel_id(id);
    channelz::GetChannelResponse response;
    const Status status =
        Call(&channelz::Channelz::Stub::GetChannel, request, &response);
    *channel = response.channel();
    return status;
  }
  Status GetSubchannel(int64_t id, channelz::Subchannel* subchannel) {
    channelz::GetSubchannelRequest request;
    request.set_subchannel_id(id);
    channelz::GetSubchannelResponse response;
    const Status status =
        Call(&channelz::Channelz::Stub::GetSubchannel, request, &response);
    *subchannel = response.subchannel();
    return status;
  }
  Status GetServer(int64_t id, channelz::Server* server) {
    channelz::GetServerRequest request;
    request.set_server_id(id);
    channelz::GetServerResponse response;
    const Status status =
        Call(&channelz::Channelz::Stub::GetServer, request, &response);
    *server = response.server();
    return status;
  }
  Status GetSocket(int64_t id, channelz::Socket* socket) {
    channelz::GetSocketRequest request;
    request.set_socket_id(id);
    channelz::GetSocketResponse response;
    const Status status =
        Call(&channelz::Channelz::Stub::GetSocket, request, &response);
    *socket = response.socket();
    return status;
  }

  std::shared_ptr<Channelz> channelz_;
  ChannelzRegistry* registry_ = nullptr;
  std::unique_ptr<Server> server_;
  std::unique_ptr<channelz::Channelz::Stub> stub_;
};

TEST_F(ChannelzServiceTest, GetChannelMapsStateTargetCallsAndSubchannels) {
  const absl::Time before = absl::Now();
  std::unique_ptr<ChannelzNode> channel =
      registry_->AddChannel("dns:///backend.example:443");
  channel->SetState(ConnectivityState::kReady);
  transport::http2::CallCounts* calls = channel->NewCallCounts();
  calls->started.Add(5);
  calls->succeeded.Add(3);
  calls->failed.Add(1);
  calls->last_started.Set(MonotonicTime::Now());
  // A second set of counts (another writer) adds to the first.
  channel->NewCallCounts()->started.Add(2);
  std::unique_ptr<ChannelzNode> first =
      registry_->AddSubchannel(*channel, "10.0.0.1:443");
  std::unique_ptr<ChannelzNode> second =
      registry_->AddSubchannel(*channel, "10.0.0.2:443");
  const absl::Time after = absl::Now();

  channelz::Channel got;
  const Status status = GetChannel(channel->id(), &got);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(got.ref().channel_id(), channel->id());
  EXPECT_EQ(got.ref().name(), "dns:///backend.example:443");
  EXPECT_EQ(got.data().state().state(),
            channelz::ChannelConnectivityState::READY);
  EXPECT_EQ(got.data().target(), "dns:///backend.example:443");
  EXPECT_EQ(got.data().calls_started(), 7);
  EXPECT_EQ(got.data().calls_succeeded(), 3);
  EXPECT_EQ(got.data().calls_failed(), 1);
  ASSERT_TRUE(got.data().has_last_call_started_timestamp());
  const absl::Time started = TimeOf(got.data().last_call_started_timestamp());
  EXPECT_GE(started, before - absl::Seconds(1));
  EXPECT_LE(started, after + absl::Seconds(1));
  EXPECT_FALSE(got.data().has_trace());
  ASSERT_EQ(got.subchannel_ref_size(), 2);
  EXPECT_EQ(got.subchannel_ref(0).subchannel_id(), first->id());
  EXPECT_EQ(got.subchannel_ref(0).name(), "10.0.0.1:443");
  EXPECT_EQ(got.subchannel_ref(1).subchannel_id(), second->id());
  EXPECT_EQ(got.subchannel_ref(1).name(), "10.0.0.2:443");
  EXPECT_THAT(got.channel_ref(), IsEmpty());
  EXPECT_THAT(got.socket_ref(), IsEmpty());
}

TEST_F(ChannelzServiceTest, EachConnectivityStateIsMapped) {
  std::unique_ptr<ChannelzNode> channel = registry_->AddChannel("target");
  const struct {
    ConnectivityState state;
    channelz::ChannelConnectivityState::State expected;
  } cases[] = {
      {ConnectivityState::kIdle, channelz::ChannelConnectivityState::IDLE},
      {ConnectivityState::kConnecting,
       channelz::ChannelConnectivityState::CONNECTING},
      {ConnectivityState::kReady, channelz::ChannelConnectivityState::READY},
      {ConnectivityState::kTransientFailure,
       channelz::ChannelConnectivityState::TRANSIENT_FAILURE},
      {ConnectivityState::kShutdown,
       channelz::ChannelConnectivityState::SHUTDOWN},
  };
  for (const auto& c : cases) {
    channel->SetState(c.state);
    channelz::Channel got;
    ASSERT_TRUE(GetChannel(channel->id(), &got).ok());
    EXPECT_EQ(got.data().state().state(), c.expected)
        << ConnectivityStateName(c.state);
  }
}

TEST_F(ChannelzServiceTest, ChannelWithoutCallsHasNoLastCallTimestamp) {
  std::unique_ptr<ChannelzNode> channel = registry_->AddChannel("idle");
  channelz::Channel got;
  ASSERT_TRUE(GetChannel(channel->id(), &got).ok());
  EXPECT_EQ(got.data().state().state(),
            channelz::ChannelConnectivityState::IDLE);
  EXPECT_EQ(got.data().calls_started(), 0);
  EXPECT_FALSE(got.data().has_last_call_started_timestamp());
  EXPECT_THAT(got.subchannel_ref(), IsEmpty());
}

TEST_F(ChannelzServiceTest, GetSubchannelMapsItsDataAndSockets) {
  std::unique_ptr<ChannelzNode> channel = registry_->AddChannel("target");
  std::unique_ptr<ChannelzNode> subchannel =
      registry_->AddSubchannel(*channel, "127.0.0.1:5000");
  subchannel->SetState(ConnectivityState::kTransientFailure);
  transport::http2::CallCounts* calls = subchannel->NewCallCounts();
  calls->started.Add(4);
  calls->succeeded.Add(2);
  calls->failed.Add(2);
  std::unique_ptr<ChannelzNode> socket =
      registry_->AddSocket(*subchannel, Tcp("127.0.0.1:40000"),
                           Tcp("127.0.0.1:5000"), "127.0.0.1:5000");

  channelz::Subchannel got;
  const Status status = GetSubchannel(subchannel->id(), &got);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(got.ref().subchannel_id(), subchannel->id());
  EXPECT_EQ(got.ref().name(), "127.0.0.1:5000");
  EXPECT_EQ(got.data().state().state(),
            channelz::ChannelConnectivityState::TRANSIENT_FAILURE);
  EXPECT_EQ(got.data().target(), "127.0.0.1:5000");
  EXPECT_EQ(got.data().calls_started(), 4);
  EXPECT_EQ(got.data().calls_succeeded(), 2);
  EXPECT_EQ(got.data().calls_failed(), 2);
  // Counts never stamped a start.
  EXPECT_FALSE(got.data().has_last_call_started_timestamp());
  ASSERT_EQ(got.socket_ref_size(), 1);
  EXPECT_EQ(got.socket_ref(0).socket_id(), socket->id());
  EXPECT_EQ(got.socket_ref(0).name(), "127.0.0.1:40000 -> 127.0.0.1:5000");
  EXPECT_THAT(got.subchannel_ref(), IsEmpty());
}

TEST_F(ChannelzServiceTest, GetSocketMapsAnIpv4ConnectionAndItsCounts) {
  std::unique_ptr<ChannelzNode> channel = registry_->AddChannel("target");
  std::unique_ptr<ChannelzNode> subchannel =
      registry_->AddSubchannel(*channel, "10.1.2.3:5000");
  std::unique_ptr<ChannelzNode> socket =
      registry_->AddSocket(*subchannel, Tcp("192.168.1.7:40001"),
                           Tcp("10.1.2.3:5000"), "10.1.2.3:5000");
  const absl::Time before = absl::Now();
  transport::http2::ConnectionStats& stats = socket->connection_stats();
  stats.streams_started.Add(10);
  stats.streams_succeeded.Add(8);
  stats.streams_failed.Add(2);
  stats.messages_sent.Add(12);
  stats.messages_received.Add(11);
  stats.keepalives_sent.Add(3);
  stats.last_local_stream_created.Set(MonotonicTime::Now());
  stats.last_message_sent.Set(MonotonicTime::Now());
  stats.last_message_received.Set(MonotonicTime::Now());
  const absl::Time after = absl::Now();

  channelz::Socket got;
  const Status status = GetSocket(socket->id(), &got);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(got.ref().socket_id(), socket->id());
  EXPECT_EQ(got.ref().name(), "192.168.1.7:40001 -> 10.1.2.3:5000");
  ASSERT_TRUE(got.local().has_tcpip_address());
  EXPECT_EQ(got.local().tcpip_address().ip_address(), Bytes({192, 168, 1, 7}));
  EXPECT_EQ(got.local().tcpip_address().port(), 40001);
  ASSERT_TRUE(got.remote().has_tcpip_address());
  EXPECT_EQ(got.remote().tcpip_address().ip_address(), Bytes({10, 1, 2, 3}));
  EXPECT_EQ(got.remote().tcpip_address().port(), 5000);
  EXPECT_EQ(got.remote_name(), "10.1.2.3:5000");
  const channelz::SocketData& data = got.data();
  EXPECT_EQ(data.streams_started(), 10);
  EXPECT_EQ(data.streams_succeeded(), 8);
  EXPECT_EQ(data.streams_failed(), 2);
  EXPECT_EQ(data.messages_sent(), 12);
  EXPECT_EQ(data.messages_received(), 11);
  EXPECT_EQ(data.keep_alives_sent(), 3);
  for (const google::protobuf::Timestamp* timestamp :
       {&data.last_local_stream_created_timestamp(),
        &data.last_message_sent_timestamp(),
        &data.last_message_received_timestamp()}) {
    EXPECT_GE(TimeOf(*timestamp), before - absl::Seconds(1));
    EXPECT_LE(TimeOf(*timestamp), after + absl::Seconds(1));
  }
  EXPECT_TRUE(data.has_last_local_stream_created_timestamp());
  EXPECT_TRUE(data.has_last_message_sent_timestamp());
  EXPECT_TRUE(data.has_last_message_received_timestamp());
  // Never set: a client's socket has no remote streams.
  EXPECT_FALSE(data.has_last_remote_stream_created_timestamp());
  EXPECT_FALSE(data.has_local_flow_control_window());
  EXPECT_FALSE(got.has_security());
}

TEST_F(ChannelzServiceTest, GetSocketMapsAnIpv6ServerConnectionWithTls) {
  std::unique_ptr<ChannelzNode> server = registry_->AddServer();
  std::unique_ptr<ChannelzNode> socket = registry_->AddSocket(
      *server, Tcp("[::1]:443"), Tcp("[2001:db8::5]:50123"), "");
  socket->connection_stats().last_remote_stream_created.Set(
      MonotonicTime::Now());
  const std::string local_der("\x30\x82\x01\x0a\x00\xff", 6);
  socket->SetTls(ChannelzTlsData{"TLS_AES_128_GCM_SHA256", local_der,
                                 "remote certificate"});

  channelz::Socket got;
  const Status status = GetSocket(socket->id(), &got);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(got.ref().name(), "[::1]:443 -> [2001:db8::5]:50123");
  ASSERT_TRUE(got.local().has_tcpip_address());
  EXPECT_EQ(got.local().tcpip_address().ip_address(),
            Bytes({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(got.local().tcpip_address().port(), 443);
  ASSERT_TRUE(got.remote().has_tcpip_address());
  EXPECT_EQ(
      got.remote().tcpip_address().ip_address(),
      Bytes({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5}));
  EXPECT_EQ(got.remote().tcpip_address().port(), 50123);
  EXPECT_EQ(got.remote_name(), "");
  EXPECT_TRUE(got.data().has_last_remote_stream_created_timestamp());
  EXPECT_FALSE(got.data().has_last_local_stream_created_timestamp());
  ASSERT_TRUE(got.security().has_tls());
  EXPECT_EQ(got.security().tls().standard_name(), "TLS_AES_128_GCM_SHA256");
  EXPECT_EQ(got.security().tls().local_certificate(), local_der);
  EXPECT_EQ(got.security().tls().remote_certificate(), "remote certificate");
}

TEST_F(ChannelzServiceTest, GetSocketMapsUnixAddresses) {
  std::unique_ptr<ChannelzNode> server = registry_->AddServer();
  // A pathname server end and an unnamed client end.
  std::unique_ptr<ChannelzNode> path_socket = registry_->AddSocket(
      *server, Unix("/tmp/h2rpc-channelz.sock", false), UnnamedUnix(), "");
  // An abstract name; a path with bytes outside printable ASCII.
  std::unique_ptr<ChannelzNode> abstract_listen =
      registry_->AddListenSocket(*server, Unix("h2rpc-channelz", true));
  std::unique_ptr<ChannelzNode> escaped_listen = registry_->AddListenSocket(
      *server, Unix("/tmp/caf\xc3\xa9\\.sock", false));

  channelz::Socket got;
  ASSERT_TRUE(GetSocket(path_socket->id(), &got).ok());
  ASSERT_TRUE(got.local().has_uds_address());
  EXPECT_EQ(got.local().uds_address().filename(), "/tmp/h2rpc-channelz.sock");
  ASSERT_TRUE(got.remote().has_uds_address());
  EXPECT_EQ(got.remote().uds_address().filename(), "");

  ASSERT_TRUE(GetSocket(abstract_listen->id(), &got).ok());
  ASSERT_TRUE(got.local().has_uds_address());
  EXPECT_EQ(got.local().uds_address().filename(), "@h2rpc-channelz");

  ASSERT_TRUE(GetSocket(escaped_listen->id(), &got).ok());
  ASSERT_TRUE(got.local().has_uds_address());
  EXPECT_EQ(got.local().uds_address().filename(),
            "/tmp/caf\\xc3\\xa9\\x5c.sock");
}

TEST_F(ChannelzServiceTest, ListenSocketHasOnlyItsRefAndLocalAddress) {
  std::unique_ptr<ChannelzNode> server = registry_->AddServer();
  std::unique_ptr<ChannelzNode> listen =
      registry_->AddListenSocket(*server, Tcp("0.0.0.0:8443"));

  channelz::Socket got;
  const Status status = GetSocket(listen->id(), &got);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(got.ref().socket_id(), listen->id());
  EXPECT_EQ(got.ref().name(), "0.0.0.0:8443");
  ASSERT_TRUE(got.local().has_tcpip_address());
  EXPECT_EQ(got.local().tcpip_address().ip_address(), Bytes({0, 0, 0, 0}));
  EXPECT_EQ(got.local().tcpip_address().port(), 8443);
  EXPECT_FALSE(got.has_remote());
  EXPECT_FALSE(got.has_data());
  EXPECT_FALSE(got.has_security());
  EXPECT_EQ(got.remote_name(), "");
}

TEST_F(ChannelzServiceTest, GetServerMapsCallsAndListenSockets) {
  const absl::Time before = absl::Now();
  std::unique_ptr<ChannelzNode> server = registry_->AddServer();
  transport::http2::CallCounts* calls = server->NewCallCounts();
  calls->started.Add(9);
  calls->succeeded.Add(6);
  calls->failed.Add(2);
  calls->last_started.Set(MonotonicTime::Now());
  std::unique_ptr<ChannelzNode> listen_v4 =
      registry_->AddListenSocket(*server, Tcp("127.0.0.1:50051"));
  std::unique_ptr<ChannelzNode> listen_v6 =
      registry_->AddListenSocket(*server, Tcp("[::1]:50051"));
  // A connection is not a listening socket.
  std::unique_ptr<ChannelzNode> connection = registry_->AddSocket(
      *server, Tcp("127.0.0.1:50051"), Tcp("127.0.0.1:40000"), "");
  const absl::Time after = absl::Now();

  channelz::Server got;
  const Status status = GetServer(server->id(), &got);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(got.ref().server_id(), server->id());
  EXPECT_EQ(got.data().calls_started(), 9);
  EXPECT_EQ(got.data().calls_succeeded(), 6);
  EXPECT_EQ(got.data().calls_failed(), 2);
  ASSERT_TRUE(got.data().has_last_call_started_timestamp());
  const absl::Time started = TimeOf(got.data().last_call_started_timestamp());
  EXPECT_GE(started, before - absl::Seconds(1));
  EXPECT_LE(started, after + absl::Seconds(1));
  EXPECT_FALSE(got.data().has_trace());
  ASSERT_EQ(got.listen_socket_size(), 2);
  EXPECT_EQ(got.listen_socket(0).socket_id(), listen_v4->id());
  EXPECT_EQ(got.listen_socket(0).name(), "127.0.0.1:50051");
  EXPECT_EQ(got.listen_socket(1).socket_id(), listen_v6->id());
  EXPECT_EQ(got.listen_socket(1).name(), "[::1]:50051");
}

TEST_F(ChannelzServiceTest, GetTopChannelsPagesByIncreasingId) {
  std::vector<std::unique_ptr<ChannelzNode>> nodes;
  std::vector<int64_t> channel_ids;
  for (int i = 0; i < 5; ++i) {
    nodes.push_back(registry_->AddChannel("channel-" + std::to_string(i)));
    channel_ids.push_back(nodes.back()->id());
    // Entities of other kinds between the channels: not listed.
    nodes.push_back(registry_->AddSubchannel(*nodes.back(), "10.0.0.1:1"));
    nodes.push_back(registry_->AddServer());
  }

  std::vector<int64_t> seen;
  int64_t start = 0;
  std::vector<size_t> page_sizes;
  std::vector<bool> ends;
  for (int page = 0; page < 10; ++page) {
    const channelz::GetTopChannelsResponse response = TopChannels(start, 2);
    page_sizes.push_back(response.channel_size());
    ends.push_back(response.end());
    for (const channelz::Channel& channel : response.channel()) {
      if (!seen.empty()) {
        EXPECT_GT(channel.ref().channel_id(), seen.back());
      }
      seen.push_back(channel.ref().channel_id());
      // Each channel comes with its subchannel.
      EXPECT_EQ(channel.subchannel_ref_size(), 1);
    }
    if (response.end()) break;
    start = seen.back() + 1;
  }
  EXPECT_THAT(page_sizes, ElementsAre(2, 2, 1));
  EXPECT_THAT(ends, ElementsAre(false, false, true));
  EXPECT_EQ(seen, channel_ids);

  // A page exactly as large as what is left ends the listing.
  channelz::GetTopChannelsResponse response = TopChannels(0, 5);
  EXPECT_EQ(response.channel_size(), 5);
  EXPECT_TRUE(response.end());
  // Starting at an id lists that id and those above.
  response = TopChannels(channel_ids[3], 0);
  ASSERT_EQ(response.channel_size(), 2);
  EXPECT_EQ(response.channel(0).ref().channel_id(), channel_ids[3]);
  EXPECT_TRUE(response.end());
  // Beyond the last one: empty, and the end.
  response = TopChannels(channel_ids.back() + 1, 0);
  EXPECT_EQ(response.channel_size(), 0);
  EXPECT_TRUE(response.end());
  // A channel gone is not listed (its subchannel, left, is not either).
  nodes[0].reset();
  response = TopChannels(0, 0);
  ASSERT_EQ(response.channel_size(), 4);
  EXPECT_EQ(response.channel(0).ref().channel_id(), channel_ids[1]);
}

TEST_F(ChannelzServiceTest, MaxResultsZeroOrNegativeGivesTheDefaultPage) {
  std::vector<std::unique_ptr<ChannelzNode>> channels;
  const size_t count = ChannelzRegistry::kMaxPageSize + 1;
  for (size_t i = 0; i < count; ++i) {
    channels.push_back(registry_->AddChannel("c" + std::to_string(i)));
  }
  for (int64_t max_results : {int64_t{0}, int64_t{-1}, int64_t{1000}}) {
    const channelz::GetTopChannelsResponse response =
        TopChannels(0, max_results);
    EXPECT_EQ(static_cast<size_t>(response.channel_size()),
              ChannelzRegistry::kMaxPageSize)
        << max_results;
    EXPECT_FALSE(response.end()) << max_results;
    const channelz::GetTopChannelsResponse rest = TopChannels(
        response.channel(response.channel_size() - 1).ref().channel_id() + 1,
        max_results);
    ASSERT_EQ(rest.channel_size(), 1) << max_results;
    EXPECT_EQ(rest.channel(0).ref().channel_id(), channels.back()->id());
    EXPECT_TRUE(rest.end());
  }
}

TEST_F(ChannelzServiceTest, GetServersPagesByIncreasingId) {
  std::vector<std::unique_ptr<ChannelzNode>> nodes;
  std::vector<int64_t> server_ids;
  for (int i = 0; i < 3; ++i) {
    nodes.push_back(registry_->AddChannel("between"));
    nodes.push_back(registry_->AddServer());
    server_ids.push_back(nodes.back()->id());
  }
  channelz::GetServersResponse response = Servers(0, 2);
  ASSERT_EQ(response.server_size(), 2);
  EXPECT_EQ(response.server(0).ref().server_id(), server_ids[0]);
  EXPECT_EQ(response.server(1).ref().server_id(), server_ids[1]);
  EXPECT_FALSE(response.end());
  response = Servers(server_ids[1] + 1, 2);
  ASSERT_EQ(response.server_size(), 1);
  EXPECT_EQ(response.server(0).ref().server_id(), server_ids[2]);
  EXPECT_TRUE(response.end());
  response = Servers(0, 0);
  EXPECT_EQ(response.server_size(), 3);
  EXPECT_TRUE(response.end());
}

TEST_F(ChannelzServiceTest, GetServerSocketsPagesConnectionsOnly) {
  std::unique_ptr<ChannelzNode> server = registry_->AddServer();
  std::unique_ptr<ChannelzNode> listen =
      registry_->AddListenSocket(*server, Tcp("127.0.0.1:50051"));
  std::unique_ptr<ChannelzNode> other_server = registry_->AddServer();
  std::vector<std::unique_ptr<ChannelzNode>> sockets;
  for (int i = 0; i < 3; ++i) {
    const std::string peer = "127.0.0.1:" + std::to_string(40000 + i);
    sockets.push_back(
        registry_->AddSocket(*server, Tcp("127.0.0.1:50051"), Tcp(peer), ""));
    // Another server's connection between them: not listed.
    sockets.push_back(registry_->AddSocket(
        *other_server, Tcp("127.0.0.1:50052"), Tcp(peer), ""));
  }

  channelz::GetServerSocketsResponse response =
      ServerSockets(server->id(), 0, 2);
  ASSERT_EQ(response.socket_ref_size(), 2);
  EXPECT_EQ(response.socket_ref(0).socket_id(), sockets[0]->id());
  EXPECT_EQ(response.socket_ref(0).name(),
            "127.0.0.1:50051 -> 127.0.0.1:40000");
  EXPECT_EQ(response.socket_ref(1).socket_id(), sockets[2]->id());
  EXPECT_FALSE(response.end());
  response =
      ServerSockets(server->id(), response.socket_ref(1).socket_id() + 1, 2);
  ASSERT_EQ(response.socket_ref_size(), 1);
  EXPECT_EQ(response.socket_ref(0).socket_id(), sockets[4]->id());
  EXPECT_TRUE(response.end());
  response = ServerSockets(server->id(), 0, -5);
  EXPECT_EQ(response.socket_ref_size(), 3);
  EXPECT_TRUE(response.end());
}

TEST_F(ChannelzServiceTest, UnknownIdsAreNotFoundNamingKindAndId) {
  std::unique_ptr<ChannelzNode> channel = registry_->AddChannel("target");
  std::unique_ptr<ChannelzNode> subchannel =
      registry_->AddSubchannel(*channel, "10.0.0.1:1");
  std::unique_ptr<ChannelzNode> server = registry_->AddServer();
  constexpr int64_t kUnknown = 424242;

  channelz::Channel channel_out;
  Status status = GetChannel(kUnknown, &channel_out);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "no channel 424242");
  // Another kind's id.
  status = GetChannel(subchannel->id(), &channel_out);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "no channel " + std::to_string(subchannel->id()));

  channelz::Subchannel subchannel_out;
  status = GetSubchannel(channel->id(), &subchannel_out);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "no subchannel " + std::to_string(channel->id()));

  channelz::Server server_out;
  status = GetServer(kUnknown, &server_out);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "no server 424242");

  channelz::Socket socket_out;
  status = GetSocket(server->id(), &socket_out);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "no socket " + std::to_string(server->id()));

  channelz::GetServerSocketsRequest request;
  request.set_server_id(channel->id());
  channelz::GetServerSocketsResponse response;
  status =
      Call(&channelz::Channelz::Stub::GetServerSockets, request, &response);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "no server " + std::to_string(channel->id()));

  // An entity gone is not found.
  const int64_t gone = subchannel->id();
  subchannel.reset();
  status = GetSubchannel(gone, &subchannel_out);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  channelz::Channel remaining;
  ASSERT_TRUE(GetChannel(channel->id(), &remaining).ok());
  EXPECT_THAT(remaining.subchannel_ref(), IsEmpty());
}

bool MisuseIsFatalByDefault() {
#ifdef NDEBUG
  return false;
#else
  return true;
#endif
}

TEST(ChannelzServiceMisuseTest, NullChannelzAbortsWhenMisuseIsFatal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  internal::SetMisuseIsFatalForTest(true);
  EXPECT_DEATH(ChannelzService(nullptr),
               "API misuse: ChannelzService given a null Channelz");
  internal::SetMisuseIsFatalForTest(MisuseIsFatalByDefault());
}

TEST(ChannelzServiceMisuseTest, NullChannelzFailsCallsWithInternal) {
  internal::SetMisuseIsFatalForTest(false);
  int port = 0;
  Status status;
  Server::Builder builder;
  builder.AddListeningPort("127.0.0.1:0", &port);
  ChannelzService(nullptr).AddTo(builder);
  std::unique_ptr<Server> server = builder.BuildAndStart(&status);
  ASSERT_NE(server, nullptr) << status.ToString();
  channelz::Channelz::Stub stub(
      CreateChannel("127.0.0.1:" + std::to_string(port)));
  ClientContext context;
  context.set_timeout(kTimeout);
  channelz::GetTopChannelsResponse response;
  status = stub.GetTopChannels(&context, channelz::GetTopChannelsRequest(),
                               &response);
  EXPECT_EQ(status.code(), StatusCode::kInternal) << status.ToString();
  EXPECT_EQ(status.message(), "ChannelzService was given a null Channelz");
  internal::SetMisuseIsFatalForTest(MisuseIsFatalByDefault());
}

}  // namespace
}  // namespace h2rpc
