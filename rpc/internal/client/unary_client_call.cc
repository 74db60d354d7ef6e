#include "rpc/internal/client/unary_client_call.h"

#include <utility>

#include "rpc/internal/client/client_context_access.h"
#include "rpc/internal/common/serialize_framed.h"
#include "transport/compression/thread_codecs.h"

namespace h2rpc::internal {

Status UnaryClientCall::Prepare(ClientContext* context,
                                absl::string_view method,
                                const google::protobuf::MessageLite* request,
                                absl::string_view request_bytes) {
  Status status = Describe(context, method, /*generic=*/request == nullptr);
  if (!status.ok()) return status;
  const ChannelCallSettings& settings = core_->call_settings();
  stream_.description.connect_unary = settings.connect_unary;
  stream_.description.connect_json = settings.connect_json != nullptr;
  const size_t max_size = max_send_size_;
  std::string* frame = &stream_.outgoing().buffer();
  if (settings.connect_json != nullptr) {
    status = FrameJsonRequest(*settings.connect_json, request, request_bytes,
                              max_size, frame);
  } else {
    status = request != nullptr
                 ? SerializeFramed(*request, send_compression_, max_size, frame)
                 : transport::compression::AppendCompressedFramedMessage(
                       request_bytes, send_compression_, max_size, frame);
  }
  if (!status.ok()) return status;
  stream_.outgoing().CountMessage(frame->size());
  stream_.outgoing().set_end_of_data();
  InterceptSend(request != nullptr ? request->GetCachedSize()
                                   : request_bytes.size());
  ChargeRetryBuffer();
  stream_.observer = this;
  return BindContext(context);
}

Status UnaryClientCall::FrameJsonRequest(
    const ProtobufConnectCodec& codec,
    const google::protobuf::MessageLite* request,
    absl::string_view request_bytes, size_t max_size, std::string* frame) {
  std::string binary;
  if (request != nullptr) {
    if (!request->SerializeToString(&binary)) {
      return Status(StatusCode::kInternal,
                    "failed to serialize the request message");
    }
    request_bytes = binary;
  }
  std::string json;
  Status status =
      codec.RequestToJson(stream_.description.method_path, request_bytes, &json);
  if (!status.ok()) return status;
  return transport::compression::AppendCompressedFramedMessage(
      json, CompressionAlgorithm::kIdentity, max_size, frame);
}

Status UnaryClientCall::Wait() {
  MutexLock lock(&mu_);
  while (!completed_) completed_cv_.Wait(&mu_);
  return status_;
}

void UnaryClientCall::OnInitialMetadata(Metadata& metadata) {
  CommitRetries();
  ClientContextAccess::SetServerCompression(context_,
                                            stream_.receive_encoding());
  InterceptInitialMetadata(metadata);
  using std::swap;
  swap(ClientContextAccess::InitialMetadata(context_), metadata);
}

Status UnaryClientCall::OnMessage(absl::string_view message, bool compressed) {
  if (got_message_) {
    return Status(StatusCode::kInternal,
                  "received a second response message for a unary call");
  }
  got_message_ = true;
  InterceptReceive(message.size());
  std::string binary;
  if (const ProtobufConnectCodec* codec =
          core_->call_settings().connect_json.get()) {
    Status status = codec->ResponseFromJson(stream_.description.method_path,
                                            message, &binary);
    if (!status.ok()) return status;
    message = binary;
  }
  ClientContextAccess::SetLastMessageCompressed(context_, compressed);
  if (response != nullptr) {
    if (!response->ParseFromArray(message.data(),
                                  static_cast<int>(message.size()))) {
      return Status(StatusCode::kInternal,
                    "failed to parse the response message");
    }
  } else {
    response_bytes->assign(message.data(), message.size());
  }
  return Status();
}

bool UnaryClientCall::OnRefused() {
  EndRefusedAttempt();
  return RetryTransparently();
}

void UnaryClientCall::OnClose(const Status& status, Metadata& trailing) {
  EndAttempt(status);
  if (RetryOrCommit(status, trailing)) return;
  using std::swap;
  swap(ClientContextAccess::TrailingMetadata(context_), trailing);
  if (status.ok() && !got_message_) {
    Complete(Status(StatusCode::kInternal,
                    "the server sent no response message for a unary call"));
    return;
  }
  Complete(status);
}

void UnaryClientCall::Complete(const Status& status) {
  ReportResult(status, ClientContextAccess::TrailingMetadata(context_));
  UnbindContext();
  if (done) {
    // Move the callback out: it may start another call from this pool.
    absl::AnyInvocable<void(const Status&)> callback = std::move(done);
    done = nullptr;
    callback(status);
    Unref();
    return;
  }
  MutexLock lock(&mu_);
  status_ = status;
  completed_ = true;
  completed_cv_.Signal();
}

void UnaryClientCall::OnLastUnref() { core_->ReturnCall(this); }

void UnaryClientCall::ResetForReuse() {
  ResetChannelCall();
  response = nullptr;
  response_bytes = nullptr;
  done = nullptr;
  got_message_ = false;
  MutexLock lock(&mu_);
  completed_ = false;
  status_ = Status();
}

}  // namespace h2rpc::internal
