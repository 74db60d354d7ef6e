#ifndef H2RPC_TEST_UTIL_STUB_SERVER_H_
#define H2RPC_TEST_UTIL_STUB_SERVER_H_

// A server for tests, configured per case, in the spirit of grpc-go's
// internal/stubserver: a test registers what the case needs on builder()
// (methods, options, interceptors), starts it (on a free 127.0.0.1 port
// unless ListenOn() names other addresses), and makes channels to it.
//
//   StubServer server;
//   server.builder().SetOptions(options).RegisterUnary<Req, Resp>(kEcho, Echo);
//   ASSERT_TRUE(server.Start().ok());
//   std::shared_ptr<Channel> channel = server.NewChannel();
//
// One thread configures, starts and stops it (builder(), ListenOn(),
// Start(), Stop(), the destructor); between Start() and Stop() any thread
// may read its accessors, make channels and use server(). Destroying it
// shuts the server down at once (calls still running are cancelled) and
// waits for their handlers.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

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

  // What the server will serve; used by Start(), not after. Its ports are
  // ListenOn()'s: do not add any here.
  Server::Builder& builder() { return builder_; }

  // Listens on `address` instead of a free 127.0.0.1 port: any address
  // Server::Builder::AddListeningPort takes, such as "127.0.0.1:PORT" for a
  // port the test chose (a server back on the port of one stopped before),
  // "unix:PATH" or "unix-abstract:NAME". Called again, the server listens on
  // every address given, in order. Before Start().
  StubServer& ListenOn(std::string address);

  // Listens (on 127.0.0.1 on a free port, or on ListenOn()'s addresses),
  // every port secured by `credentials`, and starts serving. Once; the
  // builder's error, if any (then no server runs: started() is false).
  Status Start(std::shared_ptr<ServerCredentials> credentials =
                   InsecureServerCredentials());

  // Whether Start() has started a server that Stop() has not destroyed
  // since (a Shutdown() through server() does not count).
  bool started() const { return server_ != nullptr; }

  // The port bound for the `index`-th address (0 for a unix socket), as
  // Start() left it: -1 for an address it did not bind, or before it. Still
  // valid after Stop().
  int port(size_t index = 0) const;
  // The first address as a channel target: "127.0.0.1:PORT" by default, the
  // address with its port bound ("HOST:PORT"), or the unix address as given.
  std::string target() const;
  // After a successful Start(), until Stop().
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
  // ListenOn()'s, or Start()'s default; ports_[i] is addresses_[i]'s.
  std::vector<std::string> addresses_;
  std::vector<int> ports_;
  std::unique_ptr<Server> server_;
};

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_STUB_SERVER_H_
