#ifndef H2RPC_RPC_INTERNAL_CLIENT_CALL_CREDENTIALS_FETCH_H_
#define H2RPC_RPC_INTERNAL_CLIENT_CALL_CREDENTIALS_FETCH_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "rpc/call_credentials.h"
#include "rpc/internal/client/loop_gate.h"
#include "rpc/internal/common/worker_pool.h"
#include "rpc/metadata.h"
#include "rpc/status.h"
#include "transport/io/event_loop.h"

namespace h2rpc::internal {

// The credentials of a call (the channel's, then the call's; either may be
// null) and what their plugins are told.
struct CredentialsRequest {
  std::shared_ptr<CallCredentials> channel_credentials;
  std::shared_ptr<CallCredentials> call_credentials;
  std::string method_path;
  std::string authority;
  absl::Time deadline = absl::InfiniteFuture();
};

// Runs the plugins of `channel_credentials` and then `call_credentials`
// (either may be null) on this thread for a call of `method_path`,
// appending their metadata to `*metadata`
// (CallCredentialsAccess::AddCallMetadata). `*service_url` is scratch for the
// plugins' service URL, kept for its capacity.
Status AddCallCredentialsMetadata(const CallCredentials* channel_credentials,
                                  const CallCredentials* call_credentials,
                                  absl::string_view method_path,
                                  absl::string_view authority,
                                  absl::Time deadline, std::string* service_url,
                                  Metadata* metadata);

// One call's blocking plugins, run on the process's plugin threads (at most
// kMaxPluginThreads; fetches beyond them wait, first in first out, for one
// to finish). Made and started on the channel's loop thread; the result is
// posted back there, to the call, unless the call detached first (its
// deadline passed, it was cancelled, the channel went).
class CredentialsFetch final
    : public WorkerTask,
      public std::enable_shared_from_this<CredentialsFetch> {
 public:
  static constexpr int kMaxPluginThreads = 64;

  // Loop thread: the result, unless detached.
  using ResultCallback = absl::AnyInvocable<void(const Status&, Metadata&)>;

  CredentialsFetch(CredentialsRequest request, std::shared_ptr<LoopGate> gate,
                   ResultCallback done)
      : request_(std::move(request)),
        gate_(std::move(gate)),
        done_(std::move(done)) {}

  // Loop thread: hands the fetch to a plugin thread. A failure to start
  // any thread is reported to `done` like a plugin's (UNAVAILABLE).
  void Start();
  // Loop thread: `done` is not called.
  void Detach() { done_ = nullptr; }

  void Run() override;
  void Done() override;

 private:
  CredentialsRequest request_;
  const std::shared_ptr<LoopGate> gate_;
  ResultCallback done_;  // loop thread
  // Written by Run() on the plugin thread, read on the loop after.
  Status status_;
  Metadata metadata_;
  // Keeps the fetch alive from Start() until Done() has posted the result.
  std::shared_ptr<CredentialsFetch> self_;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_CALL_CREDENTIALS_FETCH_H_
