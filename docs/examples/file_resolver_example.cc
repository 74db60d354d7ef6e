// A resolver plugin written against h2rpc's public headers alone
// (rpc/resolver.h; see docs/scaling-out.md): "file:///PATH" targets whose
// addresses are the lines of a file, read again every 100 ms, so that an
// operator (or a sidecar) moves the traffic by rewriting the file. Built
// and run by `tools/bazel test //docs/examples:all`: two servers, the file
// naming the first, then the second.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "proto/grpc/testing/test.h2rpc.pb.h"
#include "rpc/channel.h"
#include "rpc/resolver.h"
#include "rpc/server.h"

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::TestService;

// Resolves "file:///path": one "IP:PORT" per line. Runs on the channel's
// loop thread, as every resolver: the file is small and local, so reading
// it does not hold the loop up.
class FileResolver final : public h2rpc::Resolver {
 public:
  FileResolver(std::string path, h2rpc::ResolverChannel* channel)
      : path_("/" + std::move(path)), channel_(channel) {}
  ~FileResolver() override { channel_->CancelTimer(timer_); }

  void ResolveNow() override {
    std::ifstream file(path_);
    if (!file) {
      // The channel asks again after its backoff.
      channel_->Error(h2rpc::Status(h2rpc::StatusCode::kUnavailable,
                                    "cannot read " + path_));
      return;
    }
    std::stringstream text;
    text << file.rdbuf();
    if (text.str() != last_) {
      last_ = text.str();
      h2rpc::ResolverResult result;
      std::string line;
      while (std::getline(text, line)) {
        if (!line.empty()) result.addresses.push_back({line, {}});
      }
      channel_->Update(std::move(result));
    }
    channel_->CancelTimer(timer_);
    timer_ =
        channel_->StartTimer(absl::Milliseconds(100), [this] { ResolveNow(); });
  }

 private:
  const std::string path_;
  h2rpc::ResolverChannel* const channel_;
  std::string last_;  // the file's contents last reported
  uint64_t timer_ = 0;
};

class FileResolverFactory final : public h2rpc::ResolverFactory {
 public:
  std::string scheme() const override { return "file"; }
  h2rpc::Status CheckTarget(
      const h2rpc::ResolverTarget& target) const override {
    if (target.endpoint.empty()) {
      return h2rpc::Status(h2rpc::StatusCode::kInvalidArgument,
                           "write file:///absolute/path");
    }
    return h2rpc::Status();
  }
  std::unique_ptr<h2rpc::Resolver> Create(
      const h2rpc::ResolverTarget& target,
      h2rpc::ResolverChannel* channel) override {
    return std::make_unique<FileResolver>(target.endpoint, channel);
  }
};

// Answers with its name.
class NamedService final : public TestService::Service {
 public:
  explicit NamedService(std::string name) : name_(std::move(name)) {}
  h2rpc::Status UnaryCall(h2rpc::ServerContext*, const SimpleRequest*,
                          SimpleResponse* response) override {
    response->set_hostname(name_);
    return h2rpc::Status();
  }

 private:
  const std::string name_;
};

std::unique_ptr<h2rpc::Server> Serve(NamedService* service, int* port) {
  h2rpc::Server::Builder builder;
  builder.AddListeningPort("127.0.0.1:0", port);
  service->AddTo(builder);
  h2rpc::Status status;
  return builder.BuildAndStart(&status);
}

void WriteFile(const std::string& path, int port) {
  std::ofstream(path) << "127.0.0.1:" << port << "\n";
}

// Who answers a call (waiting for a connection), or why nobody does.
std::string Who(TestService::Stub& stub) {
  h2rpc::ClientContext context;
  context.set_timeout(absl::Seconds(10));
  context.set_wait_for_ready(true);
  SimpleRequest request;
  SimpleResponse response;
  const h2rpc::Status status = stub.UnaryCall(&context, request, &response);
  return status.ok() ? response.hostname() : status.ToString();
}

int main() {
  NamedService first("first"), second("second");
  int first_port = 0, second_port = 0;
  std::unique_ptr<h2rpc::Server> first_server = Serve(&first, &first_port);
  std::unique_ptr<h2rpc::Server> second_server = Serve(&second, &second_port);
  if (first_server == nullptr || second_server == nullptr) return 1;

  // Once per process, before the channels that use it.
  h2rpc::Status status =
      h2rpc::RegisterResolverFactory(std::make_shared<FileResolverFactory>());
  if (!status.ok()) return 1;

  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path =
      std::string(dir != nullptr ? dir : "/tmp") + "/file_resolver_example.txt";
  WriteFile(path, first_port);
  TestService::Stub stub(h2rpc::CreateChannel("file://" + path));
  const std::string before = Who(stub);

  WriteFile(path, second_port);  // the calls move within 100 ms or so
  std::string after;
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while ((after = Who(stub)) != "second" && absl::Now() < give_up) {
  }
  std::printf("before: %s, after: %s\n", before.c_str(), after.c_str());
  std::remove(path.c_str());
  return before == "first" && after == "second" ? 0 : 1;
}
