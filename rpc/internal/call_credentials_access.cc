#include "rpc/internal/call_credentials_access.h"

#include "absl/strings/str_cat.h"

namespace h2rpc::internal {

Status CallCredentialsAccess::Usable(const CallCredentials& credentials) {
  if (credentials.status().ok()) return Status();
  return Status(StatusCode::kUnavailable,
                absl::StrCat("unusable call credentials: ",
                             credentials.status().message()));
}

Status CallCredentialsAccess::AddCallMetadata(
    const CallCredentials& credentials, const AuthMetadataContext& context,
    Metadata* metadata) {
  Status usable = Usable(credentials);
  if (!usable.ok()) return usable;
  // Where each plugin writes, checked before it joins `metadata`: the
  // thread's, reused, so a warm call allocates nothing here; a call a
  // plugin starts from GetMetadata (nested here) gets one of its own.
  thread_local Metadata thread_scratch;
  thread_local bool thread_scratch_in_use = false;
  Metadata own_scratch;
  const bool nested = thread_scratch_in_use;
  Metadata& scratch = nested ? own_scratch : thread_scratch;
  thread_scratch_in_use = true;
  struct Release {
    bool nested;
    ~Release() {
      if (!nested) thread_scratch_in_use = false;
    }
  } release{nested};
  for (const CallCredentials::Source& source : credentials.sources_) {
    if (source.plugin == nullptr) {
      for (Metadata::Entry entry : source.fixed) {
        metadata->Add(entry.key, entry.value);
      }
      continue;
    }
    scratch.Clear();
    Status status = source.plugin->GetMetadata(context, &scratch);
    if (!status.ok()) {
      if (status.code() == StatusCode::kUnauthenticated ||
          status.code() == StatusCode::kPermissionDenied) {
        return status;
      }
      return Status(
          StatusCode::kUnavailable,
          absl::StrCat("call credentials (", source.plugin->DebugString(),
                       ") failed: ", status.message()));
    }
    status = ValidateOutgoingMetadata(scratch);
    if (!status.ok()) {
      return Status(
          StatusCode::kUnavailable,
          absl::StrCat(
              "call credentials (", source.plugin->DebugString(),
              ") gave metadata that cannot be sent: ", status.message()));
    }
    for (Metadata::Entry entry : scratch) metadata->Add(entry.key, entry.value);
  }
  return Status();
}

}  // namespace h2rpc::internal
