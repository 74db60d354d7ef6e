#ifndef H2RPC_RPC_CALL_CREDENTIALS_H_
#define H2RPC_RPC_CALL_CREDENTIALS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "rpc/metadata.h"
#include "rpc/status.h"

namespace h2rpc {

namespace internal {
class CallCredentialsAccess;
}  // namespace internal

// What a call credentials plugin is told about the call it adds metadata
// to (gRPC's grpc_auth_metadata_context). The views live during
// GetMetadata only.
struct AuthMetadataContext {
  // "https://AUTHORITY/package.Service": gRPC's service URL, the audience
  // of a self-signed JWT.
  absl::string_view service_url;
  // "/package.Service/Method", and its last part ("Method").
  absl::string_view method_path;
  absl::string_view method_name;
  // The call's :authority.
  absl::string_view authority;
  // The call's deadline on the wall clock; InfiniteFuture: none.
  absl::Time deadline;
};

// The source of a call's credential metadata (gRPC C++'s
// MetadataCredentialsPlugin, grpc-go's PerRPCCredentials): asked once per
// call, before the call's first attempt, for the metadata its request
// carries (an "authorization" header, usually); every attempt of the call
// (retries, transparent retries) sends what it gave. Shared by every call
// of the credentials that hold it: GetMetadata runs on many threads at once
// and must be thread-safe.
class MetadataCredentialsPlugin {
 public:
  virtual ~MetadataCredentialsPlugin() = default;

  // True (the default, as gRPC's): GetMetadata may block (it fetches or
  // refreshes a token, say), so it runs on one of h2rpc's plugin threads
  // (at most 64 for the process; calls queue for them beyond that), never
  // on an event loop nor the thread that starts the call. False: it never
  // blocks, and runs on the thread that starts the call, before the call
  // returns or its start function does (for the callback API, possibly an
  // event loop's thread).
  virtual bool IsBlocking() const { return true; }

  // Adds the call's metadata to `metadata` (empty when called). OK: the
  // call goes on with it. Otherwise the call fails before it is sent: with
  // this status when it is UNAUTHENTICATED or PERMISSION_DENIED, otherwise
  // with UNAVAILABLE carrying its message (gRPC's rule). Metadata that may
  // not be sent (a reserved or invalid key, a non-binary value with bytes
  // outside 0x20-0x7E) fails the call with UNAVAILABLE naming the key. A
  // call whose deadline passes or that is cancelled while this runs ends
  // then (DEADLINE_EXCEEDED or CANCELLED); what this returns later is
  // dropped.
  virtual Status GetMetadata(const AuthMetadataContext& context,
                             Metadata* metadata) = 0;

  // What the plugin is, for error messages ("oauth2 token from
  // /var/run/token").
  virtual std::string DebugString() const {
    return "metadata credentials plugin";
  }
};

// Credentials that calls carry as metadata (gRPC C++'s CallCredentials): on
// a channel (CompositeChannelCredentials: every call of the channel) or on
// one call (ClientContext::set_credentials). A call with both sends the
// channel's first, then the call's.
//
// Security level: call credentials are sent only over a connection that
// protects them. A call that has any, on a channel whose connections are
// plaintext, fails before it is sent with UNAUTHENTICATED saying why,
// unless the channel was made with LocalCredentials() (a unix socket: the
// token never leaves the host).
//
// Immutable; one object may serve any number of channels and calls.
// Thread-safe. A call whose credentials are all access tokens (or other
// fixed metadata) allocates nothing for them: the headers point at the
// credentials' own copy.
class CallCredentials {
 public:
  ~CallCredentials();
  CallCredentials(const CallCredentials&) = delete;
  CallCredentials& operator=(const CallCredentials&) = delete;

  // OK, or why the credentials are unusable (INVALID_ARGUMENT: a null
  // plugin, an access token with bytes a header may not hold). A call
  // using unusable credentials fails with UNAVAILABLE carrying this
  // message.
  const Status& status() const { return status_; }

 private:
  friend class internal::CallCredentialsAccess;
  friend std::shared_ptr<CallCredentials> AccessTokenCredentials(
      absl::string_view access_token);
  friend std::shared_ptr<CallCredentials> MetadataCredentialsFromPlugin(
      std::unique_ptr<MetadataCredentialsPlugin> plugin);
  friend std::shared_ptr<CallCredentials> CompositeCallCredentials(
      const std::shared_ptr<CallCredentials>& first,
      const std::shared_ptr<CallCredentials>& second);

  // One source of metadata: fixed entries, or a plugin.
  struct Source {
    Metadata fixed;
    std::shared_ptr<MetadataCredentialsPlugin> plugin;
  };

  CallCredentials(std::vector<Source> sources, Status status);
  static std::shared_ptr<CallCredentials> Make(std::vector<Source> sources,
                                               Status status);
  // INVALID_ARGUMENT with `message`.
  static std::shared_ptr<CallCredentials> Unusable(std::string message);

  const std::vector<Source> sources_;
  const Status status_;
  // Whether any source is a plugin, and any plugin blocks.
  bool has_plugins_ = false;
  bool blocking_ = false;
  // Without plugins: every source's entries, in order.
  Metadata fixed_;
};

// "authorization: Bearer ACCESS_TOKEN" on every call (gRPC C++'s
// AccessTokenCredentials). The token must be printable ASCII.
std::shared_ptr<CallCredentials> AccessTokenCredentials(
    absl::string_view access_token);

// Metadata from `plugin` (gRPC C++'s MetadataCredentialsFromPlugin).
std::shared_ptr<CallCredentials> MetadataCredentialsFromPlugin(
    std::unique_ptr<MetadataCredentialsPlugin> plugin);

// `first`'s metadata, then `second`'s, on every call (gRPC C++'s
// CompositeCallCredentials). Either null: INVALID_ARGUMENT.
std::shared_ptr<CallCredentials> CompositeCallCredentials(
    const std::shared_ptr<CallCredentials>& first,
    const std::shared_ptr<CallCredentials>& second);

}  // namespace h2rpc

#endif  // H2RPC_RPC_CALL_CREDENTIALS_H_
