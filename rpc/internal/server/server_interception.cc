#include "rpc/internal/server/server_interception.h"

namespace h2rpc::internal {

Status ServerInterception::Start(const std::vector<ServerInterceptor*>& all,
                                 absl::string_view method,
                                 ServerContext* context) {
  if (all.empty()) return Status();
  all_ = &all;
  method_ = method;
  context_ = context;
  start_ = transport::io::MonotonicTime::Now();
  for (ServerInterceptor* interceptor : all) {
    ++started_;
    Status status = interceptor->OnStart(Info());
    if (!status.ok()) return status;
  }
  return Status();
}

void ServerInterception::Send(size_t bytes) {
  for (size_t i = 0; i < started_; ++i) {
    (*all_)[i]->OnSendMessage(Info(), bytes);
  }
}

void ServerInterception::Receive(size_t bytes) {
  for (size_t i = 0; i < started_; ++i) {
    (*all_)[i]->OnReceiveMessage(Info(), bytes);
  }
}

void ServerInterception::Finish(const Status& status) {
  if (started_ == 0) return;
  const absl::Duration elapsed = transport::io::MonotonicTime::Now() - start_;
  for (size_t i = started_; i-- > 0;) {
    (*all_)[i]->OnFinish(Info(), status, elapsed);
  }
  started_ = 0;
}

}  // namespace h2rpc::internal
