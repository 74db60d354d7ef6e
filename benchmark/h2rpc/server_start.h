#ifndef H2RPC_BENCHMARK_H2RPC_SERVER_START_H_
#define H2RPC_BENCHMARK_H2RPC_SERVER_START_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "benchmark/bench_stack.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/reflection_service.h"
#include "rpc/server.h"

namespace h2rpc::benchmark {

// The benchmark's response to `request`: a body of the size it asks for.
inline void FillResponse(const grpc::testing::SimpleRequest& request,
                         grpc::testing::SimpleResponse* response) {
  response->mutable_payload()->mutable_body()->resize(
      static_cast<size_t>(request.response_size()));
}

// Builds and starts an h2rpc server as `config` says, with what
// `add_services` registers on the builder: one event loop per configured
// CPU (pinned to it; one unpinned loop without CPUs), the default
// compression, busy-polling, no-op interceptors and TLS. BuildAndStart runs
// on the calling thread pinned to `config.cpus` (restored afterwards), so
// that the synchronous-handler threads the server starts with run on the
// server's CPUs too. Null and `*error` if it cannot start. Called by the
// harness's thread, never by a server thread.
std::unique_ptr<Server> StartH2rpcBenchServer(
    const ServerConfig& config,
    const std::function<void(Server::Builder&)>& add_services, int* port,
    std::string* error);

// The benchmark's h2rpc server: `Service` (a BenchmarkService
// implementation whose constructor takes the RequestCounter* to count every
// request in, then `args`) and server reflection, so that grpcurl or
// grpc_cli can explore a --server_only server (it costs the benchmark's
// calls nothing). Destruction shuts the server down (5 s deadline) before
// the services go.
template <class Service>
class H2rpcServer final : public BenchServer {
 public:
  template <class... Args>
  explicit H2rpcServer(Args&&... args)
      : service_(&requests_, std::forward<Args>(args)...) {}
  ~H2rpcServer() override {
    if (server_ != nullptr) server_->Shutdown(absl::Now() + absl::Seconds(5));
  }
  H2rpcServer(const H2rpcServer&) = delete;
  H2rpcServer& operator=(const H2rpcServer&) = delete;

  // Empty on success. Once.
  std::string Start(const ServerConfig& config) {
    std::string error;
    server_ = StartH2rpcBenchServer(
        config,
        [this](Server::Builder& builder) {
          reflection_.AddTo(builder);
          service_.AddTo(builder);
        },
        &port_, &error);
    return error;
  }
  int port() const override { return port_; }
  int64_t requests() const override { return requests_.Get(); }

 private:
  RequestCounter requests_;
  Service service_;               // outlives server_
  ReflectionService reflection_;  // outlives server_
  std::unique_ptr<Server> server_;
  int port_ = 0;
};

// Starts an H2rpcServer<Service> (its service made with `args`) as
// `config` says: the server, or null and `*error`.
template <class Service, class... Args>
std::unique_ptr<BenchServer> StartH2rpcServerOf(const ServerConfig& config,
                                                std::string* error,
                                                Args&&... args) {
  auto server =
      std::make_unique<H2rpcServer<Service>>(std::forward<Args>(args)...);
  std::string start_error = server->Start(config);
  if (!start_error.empty()) {
    *error = std::move(start_error);
    return nullptr;
  }
  return server;
}

}  // namespace h2rpc::benchmark

#endif  // H2RPC_BENCHMARK_H2RPC_SERVER_START_H_
