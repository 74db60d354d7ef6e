#ifndef H2RPC_RPC_INTERNAL_CREDENTIALS_ACCESS_H_
#define H2RPC_RPC_INTERNAL_CREDENTIALS_ACCESS_H_

#include <memory>

#include "rpc/credentials.h"

namespace h2rpc::internal {

// Where the channel and the server find the OpenSSL context of a new
// connection: null for insecure or unusable credentials.
class CredentialsAccess {
 public:
  static const std::shared_ptr<transport::tls::TlsContextSlot>& Tls(
      const ChannelCredentials& credentials) {
    return credentials.tls_;
  }
  static const std::shared_ptr<transport::tls::TlsContextSlot>& Tls(
      const ServerCredentials& credentials) {
    return credentials.tls_;
  }
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CREDENTIALS_ACCESS_H_
