#ifndef H2RPC_RPC_INTERNAL_CLIENT_UNARY_CLIENT_CALL_H_
#define H2RPC_RPC_INTERNAL_CLIENT_UNARY_CLIENT_CALL_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "base/mutex.h"
#include "google/protobuf/message_lite.h"
#include "rpc/client_context.h"
#include "rpc/internal/client/channel_call.h"
#include "rpc/status.h"
#include "transport/http2/client_session.h"

namespace h2rpc::internal {

// One unary call on a Channel. Pooled by the channel: the stream's buffers
// (request frame, header list, metadata) keep their capacity across calls,
// so a warm call allocates (close to) nothing. The call's own reference is
// dropped by whoever consumes the result: the blocking caller, or the loop
// after `done`; the last one returns it to the pool.
class UnaryClientCall final : public ChannelCall,
                              public transport::http2::ClientStream::Observer {
 public:
  explicit UnaryClientCall(ChannelCallHost* core) : ChannelCall(core) {}

  // User thread: sets the call up. Returns non-OK (and the call is not
  // started) for a past deadline, a cancelled context or an oversized
  // request.
  Status Prepare(ClientContext* context, absl::string_view method,
                 const google::protobuf::MessageLite* request,
                 absl::string_view request_bytes);
  // User thread: blocks until the call is over; returns its status.
  Status Wait();
  // The caller is done with the call.
  void Release() { Unref(); }

  void FailBeforeStream(const Status& status) override { Complete(status); }
  void ResetForReuse();

  // Where the response goes: a message, or bytes.
  google::protobuf::MessageLite* response = nullptr;
  std::string* response_bytes = nullptr;
  // Set for asynchronous calls; runs on the loop thread.
  absl::AnyInvocable<void(const Status&)> done;

 private:
  // ClientStream::Observer, loop thread.
  void OnInitialMetadata(Metadata& metadata) override;
  Status OnMessage(absl::string_view message, bool compressed) override;
  bool OnRefused() override;
  void OnClose(const Status& status, Metadata& trailing) override;

  void OnLastUnref() override;
  void Complete(const Status& status);
  // A Connect JSON call's request (`request`, or `request_bytes` when
  // null) as a framed, uncompressed JSON message appended to `frame`.
  Status FrameJsonRequest(const ProtobufConnectCodec& codec,
                          const google::protobuf::MessageLite* request,
                          absl::string_view request_bytes, size_t max_size,
                          std::string* frame);

  bool got_message_ = false;

  // The result of a blocking call, handed from the loop to Wait().
  Mutex mu_;
  CondVar completed_cv_;  // completed_ became true
  bool completed_ ABSL_GUARDED_BY(mu_) = false;
  Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_UNARY_CLIENT_CALL_H_
