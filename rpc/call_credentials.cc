#include "rpc/call_credentials.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "rpc/internal/credentials_access.h"

namespace h2rpc {
namespace {

std::shared_ptr<CallCredentials> Unusable(std::string message) {
  return internal::CredentialsAccess::MakeCallCredentials(
      {}, Status(StatusCode::kInvalidArgument, std::move(message)));
}

}  // namespace

CallCredentials::CallCredentials(std::vector<Source> sources, Status status)
    : sources_(std::move(sources)), status_(std::move(status)) {
  for (const Source& source : sources_) {
    if (source.plugin != nullptr) {
      has_plugins_ = true;
      blocking_ = blocking_ || source.plugin->IsBlocking();
    }
  }
  if (has_plugins_) return;
  for (const Source& source : sources_) {
    for (Metadata::Entry entry : source.fixed) {
      fixed_.Add(entry.key, entry.value);
    }
  }
}

CallCredentials::~CallCredentials() = default;

std::shared_ptr<CallCredentials> AccessTokenCredentials(
    absl::string_view access_token) {
  if (!IsValidAsciiMetadataValue(access_token)) {
    return Unusable(
        "AccessTokenCredentials: the token has bytes outside 0x20-0x7E");
  }
  CallCredentials::Source source;
  source.fixed.Add("authorization", absl::StrCat("Bearer ", access_token));
  std::vector<CallCredentials::Source> sources;
  sources.push_back(std::move(source));
  return internal::CredentialsAccess::MakeCallCredentials(std::move(sources),
                                                          Status());
}

std::shared_ptr<CallCredentials> MetadataCredentialsFromPlugin(
    std::unique_ptr<MetadataCredentialsPlugin> plugin) {
  if (plugin == nullptr) {
    return Unusable("MetadataCredentialsFromPlugin: the plugin is null");
  }
  CallCredentials::Source source;
  source.plugin = std::move(plugin);
  std::vector<CallCredentials::Source> sources;
  sources.push_back(std::move(source));
  return internal::CredentialsAccess::MakeCallCredentials(std::move(sources),
                                                          Status());
}

std::shared_ptr<CallCredentials> CompositeCallCredentials(
    const std::shared_ptr<CallCredentials>& first,
    const std::shared_ptr<CallCredentials>& second) {
  if (first == nullptr || second == nullptr) {
    return Unusable("CompositeCallCredentials: the credentials are null");
  }
  std::vector<CallCredentials::Source> sources;
  for (const CallCredentials* part : {first.get(), second.get()}) {
    if (!part->status().ok()) {
      return internal::CredentialsAccess::MakeCallCredentials(
          {}, part->status());
    }
    for (const CallCredentials::Source& source : part->sources_) {
      CallCredentials::Source copy;
      copy.plugin = source.plugin;
      for (Metadata::Entry entry : source.fixed) {
        copy.fixed.Add(entry.key, entry.value);
      }
      sources.push_back(std::move(copy));
    }
  }
  return internal::CredentialsAccess::MakeCallCredentials(std::move(sources),
                                                          Status());
}

namespace internal {

std::shared_ptr<CallCredentials> CredentialsAccess::MakeCallCredentials(
    std::vector<CallCredentials::Source> sources, Status status) {
  return std::shared_ptr<CallCredentials>(
      new CallCredentials(std::move(sources), std::move(status)));
}

Status CredentialsAccess::AddCallMetadata(const CallCredentials& credentials,
                                          const AuthMetadataContext& context,
                                          Metadata* metadata) {
  if (!credentials.status().ok()) {
    return Status(StatusCode::kUnavailable,
                  absl::StrCat("unusable call credentials: ",
                               credentials.status().message()));
  }
  Metadata scratch;
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
      return Status(StatusCode::kUnavailable,
                    absl::StrCat("call credentials (",
                                 source.plugin->DebugString(),
                                 ") failed: ", status.message()));
    }
    status = ValidateOutgoingMetadata(scratch);
    if (!status.ok()) {
      return Status(StatusCode::kUnavailable,
                    absl::StrCat("call credentials (",
                                 source.plugin->DebugString(),
                                 ") gave metadata that cannot be sent: ",
                                 status.message()));
    }
    for (Metadata::Entry entry : scratch) metadata->Add(entry.key, entry.value);
  }
  return Status();
}

}  // namespace internal
}  // namespace h2rpc
