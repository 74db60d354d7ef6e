#include "rpc/call_credentials.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace h2rpc {

std::shared_ptr<CallCredentials> CallCredentials::Make(
    std::vector<Source> sources, Status status) {
  return std::shared_ptr<CallCredentials>(
      new CallCredentials(std::move(sources), std::move(status)));
}

std::shared_ptr<CallCredentials> CallCredentials::Unusable(
    std::string message) {
  return Make({}, Status(StatusCode::kInvalidArgument, std::move(message)));
}

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
    return CallCredentials::Unusable(
        "AccessTokenCredentials: the token has bytes outside 0x20-0x7E");
  }
  CallCredentials::Source source;
  source.fixed.Add("authorization", absl::StrCat("Bearer ", access_token));
  std::vector<CallCredentials::Source> sources;
  sources.push_back(std::move(source));
  return CallCredentials::Make(std::move(sources), Status());
}

std::shared_ptr<CallCredentials> MetadataCredentialsFromPlugin(
    std::unique_ptr<MetadataCredentialsPlugin> plugin) {
  if (plugin == nullptr) {
    return CallCredentials::Unusable(
        "MetadataCredentialsFromPlugin: the plugin is null");
  }
  CallCredentials::Source source;
  source.plugin = std::move(plugin);
  std::vector<CallCredentials::Source> sources;
  sources.push_back(std::move(source));
  return CallCredentials::Make(std::move(sources), Status());
}

std::shared_ptr<CallCredentials> CompositeCallCredentials(
    const std::shared_ptr<CallCredentials>& first,
    const std::shared_ptr<CallCredentials>& second) {
  if (first == nullptr || second == nullptr) {
    return CallCredentials::Unusable(
        "CompositeCallCredentials: the credentials are null");
  }
  std::vector<CallCredentials::Source> sources;
  for (const CallCredentials* part : {first.get(), second.get()}) {
    if (!part->status().ok()) {
      return CallCredentials::Make({}, part->status());
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
  return CallCredentials::Make(std::move(sources), Status());
}

}  // namespace h2rpc
