#include "rpc/internal/channelz/channelz_registry.h"

#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "transport/io/monotonic_time.h"

namespace h2rpc::internal {
namespace {

using transport::io::SocketAddress;

SocketAddress Address(const char* text) {
  std::vector<SocketAddress> addresses;
  EXPECT_TRUE(transport::io::ResolveNumericTarget(text, &addresses).ok()) << text;
  return addresses.empty() ? SocketAddress() : addresses[0];
}

TEST(ChannelzRegistryTest, ChannelsListTheirSubchannelsAndSocketsTheirCounts) {
  ChannelzRegistry registry;
  std::unique_ptr<ChannelzNode> channel = registry.AddChannel("dns:///a:1");
  std::unique_ptr<ChannelzNode> subchannel =
      registry.AddSubchannel(*channel, "127.0.0.1:1");
  std::unique_ptr<ChannelzNode> socket =
      registry.AddSocket(*subchannel, Address("127.0.0.1:9"),
                         Address("127.0.0.1:1"), "127.0.0.1:1");
  channel->SetState(ConnectivityState::kReady);
  transport::http2::CallCounts* calls = channel->NewCallCounts();
  calls->started.Add(3);
  calls->succeeded.Add(2);
  calls->failed.Add(1);
  calls->last_started.Set(transport::io::MonotonicTime::Now());
  socket->connection_stats().streams_started.Add(4);
  socket->connection_stats().messages_received.Add(5);

  const std::optional<ChannelzChannelData> data = registry.Channel(channel->id());
  ASSERT_TRUE(data.has_value());
  EXPECT_EQ(data->target, "dns:///a:1");
  EXPECT_EQ(data->state, ConnectivityState::kReady);
  EXPECT_EQ(data->calls.started, 3u);
  EXPECT_EQ(data->calls.succeeded, 2u);
  EXPECT_EQ(data->calls.failed, 1u);
  EXPECT_LT(absl::AbsDuration(data->calls.last_started - absl::Now()),
            absl::Seconds(5));
  ASSERT_EQ(data->subchannels.size(), 1u);
  EXPECT_EQ(data->subchannels[0].id, subchannel->id());
  EXPECT_EQ(data->subchannels[0].name, "127.0.0.1:1");

  const std::optional<ChannelzChannelData> sub =
      registry.Subchannel(subchannel->id());
  ASSERT_TRUE(sub.has_value());
  ASSERT_EQ(sub->sockets.size(), 1u);
  EXPECT_EQ(sub->sockets[0].id, socket->id());
  EXPECT_EQ(sub->calls.last_started, absl::InfinitePast());

  const std::optional<ChannelzSocketData> sock = registry.Socket(socket->id());
  ASSERT_TRUE(sock.has_value());
  EXPECT_FALSE(sock->listen);
  EXPECT_EQ(sock->local.port(), 9);
  EXPECT_EQ(sock->remote.port(), 1);
  EXPECT_EQ(sock->streams_started, 4u);
  EXPECT_EQ(sock->messages_received, 5u);
  EXPECT_EQ(sock->last_message_sent, absl::InfinitePast());
  EXPECT_FALSE(sock->tls.has_value());

  // Kinds do not mix.
  EXPECT_FALSE(registry.Channel(subchannel->id()).has_value());
  EXPECT_FALSE(registry.Subchannel(channel->id()).has_value());
  EXPECT_FALSE(registry.Socket(channel->id()).has_value());

  socket.reset();
  EXPECT_FALSE(registry.Socket(sub->sockets[0].id).has_value());
  EXPECT_TRUE(registry.Subchannel(subchannel->id())->sockets.empty());
}

TEST(ChannelzRegistryTest, PagesAreBoundedAndResumeFromAnId) {
  ChannelzRegistry registry;
  std::vector<std::unique_ptr<ChannelzNode>> channels;
  for (int i = 0; i < 250; ++i) {
    channels.push_back(registry.AddChannel("t"));
    // Other kinds in between are not listed.
    if (i % 50 == 0) channels.push_back(registry.AddServer());
  }
  ChannelzPage<ChannelzChannelData> page = registry.TopChannels(0, 0);
  ASSERT_EQ(page.entries.size(), ChannelzRegistry::kMaxPageSize);
  EXPECT_FALSE(page.end);
  int64_t next = page.entries.back().ref.id + 1;
  size_t listed = page.entries.size();
  page = registry.TopChannels(next, 1000);
  EXPECT_EQ(page.entries.size(), ChannelzRegistry::kMaxPageSize);
  listed += page.entries.size();
  next = page.entries.back().ref.id + 1;
  page = registry.TopChannels(next, 60);
  EXPECT_EQ(page.entries.size(), 50u);
  EXPECT_TRUE(page.end);
  listed += page.entries.size();
  EXPECT_EQ(listed, 250u);
  EXPECT_EQ(registry.Servers(0, 3).entries.size(), 3u);
  EXPECT_FALSE(registry.Servers(0, 3).end);
  EXPECT_TRUE(registry.Servers(0, 5).end);
}

TEST(ChannelzRegistryTest, ServersListListeningSocketsAndPageConnections) {
  ChannelzRegistry registry;
  std::unique_ptr<ChannelzNode> server = registry.AddServer();
  std::unique_ptr<ChannelzNode> listener =
      registry.AddListenSocket(*server, Address("127.0.0.1:5"));
  std::vector<std::unique_ptr<ChannelzNode>> sockets;
  for (int i = 0; i < 3; ++i) {
    sockets.push_back(registry.AddSocket(*server, Address("127.0.0.1:5"),
                                         Address("127.0.0.1:7"), ""));
  }
  transport::http2::CallCounts* loop1 = server->NewCallCounts();
  transport::http2::CallCounts* loop2 = server->NewCallCounts();
  loop1->started.Add(1);
  loop2->started.Add(2);
  loop2->failed.Add(2);

  const std::optional<ChannelzServerData> data = registry.Server(server->id());
  ASSERT_TRUE(data.has_value());
  EXPECT_EQ(data->calls.started, 3u);
  EXPECT_EQ(data->calls.failed, 2u);
  ASSERT_EQ(data->listen_sockets.size(), 1u);
  EXPECT_EQ(data->listen_sockets[0].id, listener->id());
  EXPECT_TRUE(registry.Socket(listener->id())->listen);

  std::optional<ChannelzPage<ChannelzRef>> page =
      registry.ServerSockets(server->id(), 0, 2);
  ASSERT_TRUE(page.has_value());
  ASSERT_EQ(page->entries.size(), 2u);
  EXPECT_FALSE(page->end);
  EXPECT_EQ(page->entries[0].id, sockets[0]->id());
  page = registry.ServerSockets(server->id(), page->entries[1].id + 1, 2);
  ASSERT_EQ(page->entries.size(), 1u);
  EXPECT_TRUE(page->end);
  EXPECT_FALSE(registry.ServerSockets(listener->id(), 0, 2).has_value());
}

TEST(ChannelzRegistryTest, ChildrenOutlivingTheirParentStayReadable) {
  ChannelzRegistry registry;
  std::unique_ptr<ChannelzNode> channel = registry.AddChannel("t");
  std::unique_ptr<ChannelzNode> subchannel =
      registry.AddSubchannel(*channel, "a");
  channel.reset();
  EXPECT_TRUE(registry.Subchannel(subchannel->id()).has_value());
  ChannelzTlsData tls;
  tls.standard_name = "TLS_AES_128_GCM_SHA256";
  std::unique_ptr<ChannelzNode> socket =
      registry.AddSocket(*subchannel, SocketAddress(), SocketAddress(), "a");
  socket->SetTls(tls);
  EXPECT_EQ(registry.Socket(socket->id())->tls->standard_name,
            "TLS_AES_128_GCM_SHA256");
}

}  // namespace
}  // namespace h2rpc::internal
