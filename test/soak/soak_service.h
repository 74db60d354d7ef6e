#ifndef H2RPC_TEST_SOAK_SOAK_SERVICE_H_
#define H2RPC_TEST_SOAK_SOAK_SERVICE_H_

#include <string>

#include "proto/grpc/testing/test.h2rpc.pb.h"

namespace h2rpc::testing {

// grpc.testing.TestService as the soak's backends serve it, with callback
// handlers only (no handler thread is ever started, so a backend's thread
// count stays flat):
//   UnaryCall: a payload of `response_size` bytes and `hostname` set to the
//     backend's name;
//   StreamingOutputCall: one response per ResponseParameters, of its size
//     (interval_us is ignored), then OK;
//   FullDuplexCall: each request answered with one response of the size of
//     its first ResponseParameters (0 without one); OK once the client has
//     half-closed.
// Every other method is UNIMPLEMENTED.
class SoakService final : public grpc::testing::TestService::CallbackService {
 public:
  explicit SoakService(std::string name) : name_(std::move(name)) {}

  void UnaryCall(ServerContext* context,
                 const grpc::testing::SimpleRequest* request,
                 grpc::testing::SimpleResponse* response,
                 UnaryDone done) override;
  ServerWriteReactor<grpc::testing::StreamingOutputCallResponse>*
  StreamingOutputCall(
      ServerContext* context,
      const grpc::testing::StreamingOutputCallRequest* request) override;
  ServerBidiReactor<grpc::testing::StreamingOutputCallRequest,
                    grpc::testing::StreamingOutputCallResponse>*
  FullDuplexCall(ServerContext* context) override;

 private:
  const std::string name_;
};

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_SOAK_SOAK_SERVICE_H_
