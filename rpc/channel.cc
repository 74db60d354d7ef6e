#include "rpc/channel.h"

#include <memory>
#include <string>
#include <utility>

#include "rpc/internal/client/channel_core.h"

namespace h2rpc {

std::shared_ptr<Channel> CreateChannel(absl::string_view target,
                                       const ChannelOptions& options) {
  return CreateChannel(target, InsecureChannelCredentials(), options);
}

std::shared_ptr<Channel> CreateChannel(
    absl::string_view target, std::shared_ptr<ChannelCredentials> credentials,
    const ChannelOptions& options) {
  return std::shared_ptr<Channel>(
      new Channel(std::make_unique<internal::ChannelCore>(
          target, credentials.get(), options)));
}

Channel::Channel(std::unique_ptr<internal::ChannelCore> core)
    : core_(std::move(core)) {}

Channel::~Channel() {
  // Threads waiting through a raw pointer leave before core_ is moved.
  core_->ShutdownWatch();
  internal::ChannelCore::Destroy(std::move(core_));
}

const std::string& Channel::target() const { return core_->target(); }

ConnectivityState Channel::GetState(bool try_to_connect) {
  return core_->GetState(try_to_connect);
}

bool Channel::WaitForStateChange(ConnectivityState last_observed,
                                 absl::Time deadline) {
  return core_->WaitForStateChange(last_observed, deadline);
}

bool Channel::WaitForConnected(absl::Time deadline) {
  return core_->WaitForConnected(deadline);
}

Status Channel::UnaryCall(ClientContext* context, absl::string_view method,
                          const google::protobuf::MessageLite& request,
                          google::protobuf::MessageLite* response) {
  return core_->UnaryCall(context, method, request, response);
}

void Channel::AsyncUnaryCall(ClientContext* context, absl::string_view method,
                             const google::protobuf::MessageLite& request,
                             google::protobuf::MessageLite* response,
                             absl::AnyInvocable<void(const Status&)> done) {
  core_->AsyncUnaryCall(context, method, request, response, std::move(done));
}

Status Channel::GenericUnaryCall(ClientContext* context,
                                 absl::string_view method,
                                 absl::string_view request,
                                 std::string* response) {
  return core_->GenericUnaryCall(context, method, request, response);
}

void Channel::AsyncGenericUnaryCall(
    ClientContext* context, absl::string_view method, absl::string_view request,
    std::string* response, absl::AnyInvocable<void(const Status&)> done) {
  core_->AsyncGenericUnaryCall(context, method, request, response,
                               std::move(done));
}

Status Channel::GenericUnaryCall(ClientContext* context,
                                 absl::string_view method,
                                 const ByteBuffer& request,
                                 ByteBuffer* response) {
  return core_->GenericUnaryCall(context, method, request.bytes(),
                                 internal::ByteBufferAccess::Storage(response));
}

void Channel::AsyncGenericUnaryCall(
    ClientContext* context, absl::string_view method, const ByteBuffer& request,
    ByteBuffer* response, absl::AnyInvocable<void(const Status&)> done) {
  core_->AsyncGenericUnaryCall(context, method, request.bytes(),
                               internal::ByteBufferAccess::Storage(response),
                               std::move(done));
}

void Channel::BindStreamingCall(ClientContext* context,
                                absl::string_view method,
                                internal::ConstMessageRef request,
                                internal::MessageRef response,
                                ClientStreamReactor* reactor, bool generic) {
  core_->BindStreamingCall(context, method, request, response, reactor,
                           generic);
}

namespace internal {

void BlockingStreamStart::Run(BlockingClientStream* stream) const {
  core->StartBlockingStream(context, method, request, response, stream,
                            generic);
}

}  // namespace internal
}  // namespace h2rpc
