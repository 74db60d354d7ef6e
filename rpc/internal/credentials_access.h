#ifndef H2RPC_RPC_INTERNAL_CREDENTIALS_ACCESS_H_
#define H2RPC_RPC_INTERNAL_CREDENTIALS_ACCESS_H_

#include <memory>

#include "rpc/credentials.h"

namespace h2rpc::internal {

// The OpenSSL context behind credentials, for the channel and the server:
// null for insecure or unusable credentials.
class CredentialsAccess {
 public:
  static const std::shared_ptr<const transport::tls::TlsContext>& Tls(
      const ChannelCredentials& credentials) {
    return credentials.tls_;
  }
  static const std::shared_ptr<const transport::tls::TlsContext>& Tls(
      const ServerCredentials& credentials) {
    return credentials.tls_;
  }
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CREDENTIALS_ACCESS_H_
