#include "rpc/internal/client/control_call.h"

#include "rpc/internal/common/serialize_framed.h"

namespace h2rpc::internal {

Status StartControlCall(const ControlCallSettings& settings,
                        absl::string_view method_path,
                        const google::protobuf::MessageLite& request,
                        transport::http2::ClientStream::Observer* observer,
                        transport::http2::ClientStream* stream,
                        transport::http2::ClientSession* connection) {
  stream->Reset();
  stream->observer = observer;
  transport::CallDescription& description = stream->description;
  description.method_path = method_path;
  description.authority = settings.authority;
  description.scheme = settings.scheme;
  description.user_agent = settings.user_agent;
  Status status =
      SerializeFramed(request, CompressionAlgorithm::kIdentity,
                      kMaxSerializedMessageSize, &stream->outgoing().buffer());
  if (!status.ok()) return status;
  stream->outgoing().set_end_of_data();
  connection->StartCall(stream);
  return Status();
}

}  // namespace h2rpc::internal
