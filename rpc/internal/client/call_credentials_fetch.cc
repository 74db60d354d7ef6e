#include "rpc/internal/client/call_credentials_fetch.h"

#include <deque>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rpc/internal/call_credentials_access.h"

namespace h2rpc::internal {
namespace {

// The process's plugin threads: a WorkerPool, and the fetches waiting for
// one of its threads, first in first out. Never destroyed (threads beyond
// none exit when idle).
class PluginThreads {
 public:
  static PluginThreads& Get() {
    static PluginThreads* const threads = new PluginThreads();
    return *threads;
  }

  // Runs `task` on a thread now or when one is free; false (nothing
  // queued) when no thread runs and none can be started.
  bool Submit(WorkerTask* task) {
    MutexLock lock(&mu_);
    if (queue_.empty() && pool_.TrySubmit(task).ok()) return true;
    if (queue_.empty() && pool_.threads() == 0) return false;
    queue_.push_back(task);
    return true;
  }

  // A plugin thread, from a task's Done() (the thread counts as idle):
  // hands it the queued fetches it can take.
  void SubmitQueued() {
    MutexLock lock(&mu_);
    while (!queue_.empty() && pool_.TrySubmit(queue_.front()).ok()) {
      queue_.pop_front();
    }
  }

 private:
  PluginThreads()
      : pool_(/*min_threads=*/0, CredentialsFetch::kMaxPluginThreads,
              /*idle_time=*/absl::Seconds(10)) {}

  WorkerPool pool_;
  Mutex mu_;
  std::deque<WorkerTask*> queue_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

Status AddCallCredentialsMetadata(const CallCredentials* channel_credentials,
                                  const CallCredentials* call_credentials,
                                  absl::string_view method_path,
                                  absl::string_view authority,
                                  absl::Time deadline, std::string* service_url,
                                  Metadata* metadata) {
  // "/package.Service/Method" -> "https://AUTHORITY/package.Service".
  const size_t slash = method_path.rfind('/');
  const absl::string_view service =
      slash == absl::string_view::npos || slash == 0
          ? method_path
          : method_path.substr(0, slash);
  service_url->clear();
  absl::StrAppend(service_url, "https://", authority, service);
  AuthMetadataContext context;
  context.service_url = *service_url;
  context.method_path = method_path;
  context.method_name = slash == absl::string_view::npos
                            ? method_path
                            : method_path.substr(slash + 1);
  context.authority = authority;
  context.deadline = deadline;
  for (const CallCredentials* credentials :
       {channel_credentials, call_credentials}) {
    if (credentials == nullptr) continue;
    Status status =
        CallCredentialsAccess::AddCallMetadata(*credentials, context, metadata);
    if (!status.ok()) return status;
  }
  return Status();
}

void CredentialsFetch::Start() {
  self_ = shared_from_this();
  if (PluginThreads::Get().Submit(this)) return;
  self_.reset();
  // Out of the member first: the callback detaches the fetch.
  ResultCallback done = std::move(done_);
  Metadata none;
  done(Status(StatusCode::kUnavailable,
              "call credentials: no plugin thread could be started"),
       none);
}

void CredentialsFetch::Run() {
  std::string service_url;
  status_ = AddCallCredentialsMetadata(
      request_.channel_credentials.get(), request_.call_credentials.get(),
      request_.method_path, request_.authority, request_.deadline, &service_url,
      &metadata_);
}

void CredentialsFetch::Done() {
  PluginThreads::Get().SubmitQueued();
  // The task holds the fetch (and with it the gate) once posted; `self`
  // holds it until then.
  std::shared_ptr<CredentialsFetch> self = std::move(self_);
  gate_->Post([self] {
    // Out of the member first: the callback detaches the fetch.
    ResultCallback done = std::move(self->done_);
    if (done != nullptr) done(self->status_, self->metadata_);
  });
}

}  // namespace h2rpc::internal
