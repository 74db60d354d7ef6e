#include "rpc/internal/server/server_call_auth.h"

#include "absl/strings/str_cat.h"
#include "rpc/internal/server/server_context_access.h"

namespace h2rpc::internal {

void ServerCallAuth::Start(const ServerCallSettings& settings,
                           ServerContext* context, ServerCallLoop* loop,
                           uint64_t connection_id) {
  processor_ = settings.auth_processor;
  context_ = context;
  loop_ = loop;
  timeout_ = settings.auth_processor_timeout;
  decided_ = false;
  response_metadata_.Clear();
  if (!processor_->IsBlocking()) {
    Run();
    Decide(status_);
    return;
  }
  running_ = true;
  const Status submitted =
      loop->SubmitToWorkers(this, connection_id, &sync_tasks_);
  if (!submitted.ok()) {
    running_ = false;
    Decide(submitted);
    return;
  }
  loop->loop().Schedule(&timeout_timer_, loop->loop().Now() + timeout_);
}

void ServerCallAuth::Run() {
  status_ = processor_->Process(
      context_->method(), context_->client_metadata(),
      ServerContextAccess::MutableAuthContext(context_), &response_metadata_);
}

void ServerCallAuth::Done() {
  SyncTaskDone(&sync_tasks_);
  loop_->loop().Post(&returned_task_);
}

void ServerCallAuth::Returned() {
  running_ = false;
  if (decided_) {
    owner_->OnAuthReturned();
    return;
  }
  loop_->loop().Cancel(&timeout_timer_);
  Decide(status_);
}

void ServerCallAuth::TimedOut() {
  Decide(Status(StatusCode::kUnavailable,
                absl::StrCat("the server's auth metadata processor did not "
                             "decide within ",
                             absl::FormatDuration(timeout_),
                             " (ServerOptions::auth_processor_timeout)")));
}

void ServerCallAuth::Decide(const Status& status) {
  decided_ = true;
  if (!running_) {
    Metadata& destination =
        status.ok() ? ServerContextAccess::InitialMetadata(context_)
                    : ServerContextAccess::TrailingMetadata(context_);
    for (Metadata::Entry entry : response_metadata_) {
      destination.Add(entry.key, entry.value);
    }
  }
  owner_->OnAuthDecided(status);
}

}  // namespace h2rpc::internal
