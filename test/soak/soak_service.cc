#include "test/soak/soak_service.h"

#include <string>
#include <utility>

namespace h2rpc::testing {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;

// Writes one response per ResponseParameters of the request, then finishes.
// Its events run on the connection's loop thread, one at a time.
class OutputWriter final
    : public ServerWriteReactor<StreamingOutputCallResponse> {
 public:
  explicit OutputWriter(const StreamingOutputCallRequest& request)
      : request_(request) {
    WriteNext();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      FinishOnce(Status(StatusCode::kCancelled, "write failed"));
      return;
    }
    WriteNext();
  }
  void OnCancel() override {
    FinishOnce(Status(StatusCode::kCancelled, "cancelled"));
  }
  void OnDone() override { delete this; }

 private:
  void WriteNext() {
    if (next_ >= request_.response_parameters_size()) {
      FinishOnce(Status());
      return;
    }
    const int size = request_.response_parameters(next_++).size();
    response_.mutable_payload()->set_body(std::string(size, 'o'));
    StartWrite(&response_);
  }
  void FinishOnce(const Status& status) {
    if (finished_) return;
    finished_ = true;
    Finish(status);
  }

  const StreamingOutputCallRequest request_;
  StreamingOutputCallResponse response_;
  int next_ = 0;
  bool finished_ = false;
};

// Answers each request as it arrives; finishes once the client half-closes.
// Its events run on the connection's loop thread, one at a time.
class DuplexEcho final : public ServerBidiReactor<StreamingOutputCallRequest,
                                                  StreamingOutputCallResponse> {
 public:
  DuplexEcho() { StartRead(&request_); }
  void OnReadDone(bool ok) override {
    if (!ok) {
      FinishOnce(Status());
      return;
    }
    const int size = request_.response_parameters_size() > 0
                         ? request_.response_parameters(0).size()
                         : 0;
    response_.mutable_payload()->set_body(std::string(size, 'd'));
    StartWrite(&response_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      FinishOnce(Status(StatusCode::kCancelled, "write failed"));
      return;
    }
    StartRead(&request_);
  }
  void OnCancel() override {
    FinishOnce(Status(StatusCode::kCancelled, "cancelled"));
  }
  void OnDone() override { delete this; }

 private:
  void FinishOnce(const Status& status) {
    if (finished_) return;
    finished_ = true;
    Finish(status);
  }

  StreamingOutputCallRequest request_;
  StreamingOutputCallResponse response_;
  bool finished_ = false;
};

}  // namespace

void SoakService::UnaryCall(ServerContext* context,
                            const SimpleRequest* request,
                            SimpleResponse* response, UnaryDone done) {
  response->set_hostname(name_);
  if (request->response_size() > 0) {
    response->mutable_payload()->set_body(
        std::string(static_cast<size_t>(request->response_size()), 'u'));
  }
  done(Status());
}

ServerWriteReactor<StreamingOutputCallResponse>*
SoakService::StreamingOutputCall(ServerContext* context,
                                 const StreamingOutputCallRequest* request) {
  return new OutputWriter(*request);
}

ServerBidiReactor<StreamingOutputCallRequest, StreamingOutputCallResponse>*
SoakService::FullDuplexCall(ServerContext* context) {
  return new DuplexEcho();
}

}  // namespace h2rpc::testing
