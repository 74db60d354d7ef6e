#include "test/util/stub_server.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace h2rpc::testing {
namespace {

constexpr char kDefaultAddress[] = "127.0.0.1:0";

}  // namespace

StubServer::~StubServer() { Stop(); }

StubServer& StubServer::ListenOn(std::string address) {
  addresses_.push_back(std::move(address));
  return *this;
}

Status StubServer::Start(std::shared_ptr<ServerCredentials> credentials) {
  if (addresses_.empty()) addresses_.push_back(kDefaultAddress);
  // Sized before the builder holds pointers into it.
  ports_.assign(addresses_.size(), -1);
  for (size_t i = 0; i < addresses_.size(); ++i) {
    builder_.AddListeningPort(addresses_[i], credentials, &ports_[i]);
  }
  Status status;
  server_ = builder_.BuildAndStart(&status);
  return status;
}

int StubServer::port(size_t index) const {
  return index < ports_.size() ? ports_[index] : -1;
}

std::string StubServer::target() const {
  const std::string address =
      addresses_.empty() ? kDefaultAddress : addresses_[0];
  if (absl::StartsWith(address, "unix:") ||
      absl::StartsWith(address, "unix-abstract:")) {
    return address;
  }
  return absl::StrCat(address.substr(0, address.rfind(':')), ":", port());
}

std::shared_ptr<Channel> StubServer::NewChannel(
    const ChannelOptions& options,
    std::shared_ptr<ChannelCredentials> credentials) const {
  return CreateChannel(target(), std::move(credentials), options);
}

void StubServer::Stop() { server_.reset(); }

}  // namespace h2rpc::testing
