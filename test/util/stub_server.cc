#include "test/util/stub_server.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace h2rpc::testing {

StubServer::~StubServer() { Stop(); }

Status StubServer::Start(std::shared_ptr<ServerCredentials> credentials) {
  Status status;
  server_ =
      builder_.AddListeningPort("127.0.0.1:0", std::move(credentials), &port_)
          .BuildAndStart(&status);
  return status;
}

std::string StubServer::target() const {
  return absl::StrCat("127.0.0.1:", port_);
}

std::shared_ptr<Channel> StubServer::NewChannel(
    const ChannelOptions& options,
    std::shared_ptr<ChannelCredentials> credentials) const {
  return CreateChannel(target(), std::move(credentials), options);
}

void StubServer::Stop() { server_.reset(); }

}  // namespace h2rpc::testing
