#ifndef H2RPC_TEST_UTIL_STUB_SERVER_H_
#define H2RPC_TEST_UTIL_STUB_SERVER_H_

// A server on 127.0.0.1 for tests, configured per case, in the spirit of
// grpc-go's internal/stubserver: a test registers what the case needs on
// builder() (methods, options, interceptors), starts it on a free loopback
// port, and makes channels to it.
//
//   StubServer server;
//   server.builder().SetOptions(options).RegisterUnary<Req, Resp>(kEcho, Echo);
//   ASSERT_TRUE(server.Start().ok());
//   std::shared_ptr<Channel> channel = server.NewChannel();
//
// One thread configures and starts it; channels may be made from any
// thread once it has started. Destroying it shuts the server down at once
// (calls still running are cancelled) and waits for their handlers.

#include <memory>
#include <string>

#include "rpc/channel.h"
#include "rpc/credentials.h"
#include "rpc/server.h"
#include "rpc/status.h"

namespace h2rpc::testing {

class StubServer {
 public:
  StubServer() = default;
  ~StubServer();
  StubServer(const StubServer&) = delete;
  StubServer& operator=(const StubServer&) = delete;

  // What the server will serve; used by Start(), not after.
  Server::Builder& builder() { return builder_; }

  // Listens on 127.0.0.1 on a free port, secured by `credentials`, and
  // starts serving. Once; the builder's error, if any.
  Status Start(std::shared_ptr<ServerCredentials> credentials =
                   InsecureServerCredentials());

  // After Start().
  int port() const { return port_; }
  // "127.0.0.1:PORT".
  std::string target() const;
  Server& server() { return *server_; }

  // A new channel (connections of its own) to target().
  std::shared_ptr<Channel> NewChannel(
      const ChannelOptions& options = ChannelOptions(),
      std::shared_ptr<ChannelCredentials> credentials =
          InsecureChannelCredentials()) const;

  // Shuts the server down at once and destroys it: new connections are
  // refused from here on. Idempotent.
  void Stop();

 private:
  Server::Builder builder_;
  std::unique_ptr<Server> server_;
  int port_ = 0;
};

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_STUB_SERVER_H_
