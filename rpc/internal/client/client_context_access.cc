#include "rpc/internal/client/client_context_access.h"

#include "base/mutex.h"

namespace h2rpc::internal {

Status ClientContextAccess::Bind(ClientContext* context,
                                 CancellableClientCall* call) {
  MutexLock lock(&context->mu_);
  if (context->cancelled_) return CancelStatus(context->cancel_cause_);
  context->call_ = call;
  return Status();
}

void ClientContextAccess::Unbind(ClientContext* context) {
  MutexLock lock(&context->mu_);
  context->call_ = nullptr;
  context->call_ended_ = true;
}

bool ClientContextAccess::CallBound(ClientContext* context) {
  MutexLock lock(&context->mu_);
  return context->call_ != nullptr;
}

}  // namespace h2rpc::internal
