#ifndef H2RPC_RPC_ADMIN_SERVICES_H_
#define H2RPC_RPC_ADMIN_SERVICES_H_

#include <memory>

#include "rpc/channelz.h"
#include "rpc/channelz_service.h"
#include "rpc/health_check_service.h"
#include "rpc/reflection_service.h"
#include "rpc/server.h"

namespace h2rpc {

// The services an operator reaches a server through, on one server:
// channelz (ChannelzService, rpc/channelz_service.h; what gRPC C++'s
// grpc::AddAdminServices adds), health checking (HealthCheckService) and
// server reflection (ReflectionService), with their default options.
//
//   AdminServices admin;  // must outlive the server
//   admin.health().SetServingStatus("", true);
//   Server::Builder builder;
//   builder.AddListeningPort("0.0.0.0:50051", &port);
//   my_service.AddTo(builder);
//   admin.AddTo(builder);
//   std::unique_ptr<Server> server = builder.BuildAndStart(&status);
//   // Channels shown next to the server:
//   ChannelOptions options;
//   options.channelz = admin.channelz();
//
// AddTo registers the three services and the server itself in channelz()
// (Server::Builder::SetChannelz), so channelz shows the server, its
// listening sockets and connections, and the channels made with
// ChannelOptions::channelz set to channelz().
//
// Threads and lifetime: those of the three services (see their headers):
// any thread; AddTo once, before BuildAndStart; the object outlives the
// server. Allocates the three services and, without a Channelz given, one.
class AdminServices {
 public:
  // `channelz` null: a Channelz of the services' own.
  explicit AdminServices(std::shared_ptr<Channelz> channelz = nullptr);
  AdminServices(const AdminServices&) = delete;
  AdminServices& operator=(const AdminServices&) = delete;

  Server::Builder& AddTo(Server::Builder& builder);

  const std::shared_ptr<Channelz>& channelz() const { return channelz_; }
  HealthCheckService& health() { return health_; }
  ReflectionService& reflection() { return reflection_; }

 private:
  const std::shared_ptr<Channelz> channelz_;
  ChannelzService channelz_service_;
  HealthCheckService health_;
  ReflectionService reflection_;
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_ADMIN_SERVICES_H_
