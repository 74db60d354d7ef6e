#ifndef H2RPC_RPC_INTERNAL_CALL_CREDENTIALS_ACCESS_H_
#define H2RPC_RPC_INTERNAL_CALL_CREDENTIALS_ACCESS_H_

#include "rpc/call_credentials.h"

namespace h2rpc::internal {

// What the channel's calls use of CallCredentials.
class CallCredentialsAccess {
 public:
  // Whether `credentials` has plugins (else FixedMetadata() is all it
  // adds), and whether one of them blocks.
  static bool HasPlugins(const CallCredentials& credentials) {
    return credentials.has_plugins_;
  }
  static bool Blocking(const CallCredentials& credentials) {
    return credentials.blocking_;
  }
  // OK, or the status of a call using `credentials` when they are
  // unusable (UNAVAILABLE with their reason).
  static Status Usable(const CallCredentials& credentials);
  // Without plugins: the metadata every call carries.
  static const Metadata& FixedMetadata(const CallCredentials& credentials) {
    return credentials.fixed_;
  }
  // Appends the metadata of every source of `credentials`, in order, to
  // `*metadata`, running the plugins on this thread. The call's status if
  // that fails (MetadataCredentialsPlugin::GetMetadata: a plugin's
  // UNAUTHENTICATED or PERMISSION_DENIED as it is, any other failure, bad
  // metadata and unusable credentials as UNAVAILABLE).
  static Status AddCallMetadata(const CallCredentials& credentials,
                                const AuthMetadataContext& context,
                                Metadata* metadata);
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CALL_CREDENTIALS_ACCESS_H_
