#include "rpc/admin_services.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "proto/grpc/channelz/v1/channelz.h2rpc.pb.h"
#include "proto/grpc/channelz/v1/channelz.pb.h"
#include "proto/grpc/health/v1/health.h2rpc.pb.h"
#include "proto/grpc/health/v1/health.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"

namespace h2rpc {
namespace {

namespace channelz = grpc::channelz::v1;
namespace health = grpc::health::v1;

// One call registers all three services and the server in channelz, even
// when SetOptions comes after it; a channel given admin.channelz() shows up
// next to the server.
TEST(AdminServicesTest, RegistersChannelzHealthAndReflectionAndTheServer) {
  AdminServices admin;
  admin.health().SetServingStatus("", true);
  int port = 0;
  Status status;
  Server::Builder builder;
  builder.AddListeningPort("127.0.0.1:0", &port);
  admin.AddTo(builder);
  ServerOptions options;
  options.num_loops = 1;
  builder.SetOptions(options);
  std::unique_ptr<Server> server = builder.BuildAndStart(&status);
  ASSERT_NE(server, nullptr) << status.ToString();

  ChannelOptions channel_options;
  channel_options.channelz = admin.channelz();
  std::shared_ptr<Channel> channel = CreateChannel(
      "127.0.0.1:" + std::to_string(port), InsecureChannelCredentials(),
      channel_options);

  health::Health::Stub health_stub(channel);
  ClientContext health_context;
  health::HealthCheckResponse serving;
  ASSERT_TRUE(health_stub
                  .Check(&health_context, health::HealthCheckRequest(),
                         &serving)
                  .ok());
  EXPECT_EQ(serving.status(), health::HealthCheckResponse::SERVING);

  channelz::Channelz::Stub channelz_stub(channel);
  ClientContext servers_context;
  channelz::GetServersResponse servers;
  ASSERT_TRUE(channelz_stub
                  .GetServers(&servers_context, channelz::GetServersRequest(),
                              &servers)
                  .ok());
  ASSERT_EQ(servers.server_size(), 1);
  // The health check, and this call itself.
  EXPECT_GE(servers.server(0).data().calls_started(), 2);
  ASSERT_EQ(servers.server(0).listen_socket_size(), 1);

  ClientContext channels_context;
  channelz::GetTopChannelsResponse channels;
  ASSERT_TRUE(channelz_stub
                  .GetTopChannels(&channels_context,
                                  channelz::GetTopChannelsRequest(), &channels)
                  .ok());
  ASSERT_EQ(channels.channel_size(), 1);
  EXPECT_EQ(channels.channel(0).data().target(),
            "127.0.0.1:" + std::to_string(port));
  EXPECT_EQ(channels.channel(0).data().state().state(),
            channelz::ChannelConnectivityState::READY);

  // Reflection answers too (its method is registered: not UNIMPLEMENTED).
  ClientContext reflection_context;
  std::string response;
  EXPECT_NE(channel
                ->GenericUnaryCall(
                    &reflection_context,
                    "/grpc.reflection.v1alpha.ServerReflection/"
                    "ServerReflectionInfo",
                    std::string(), &response)
                .code(),
            StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace h2rpc
