#ifndef H2RPC_RPC_INTERNAL_CERTIFICATE_PROVIDER_ACCESS_H_
#define H2RPC_RPC_INTERNAL_CERTIFICATE_PROVIDER_ACCESS_H_

#include <memory>
#include <utility>

#include "rpc/certificate_provider.h"

namespace h2rpc::internal {

// What credentials use of a FileWatcherCertificateProvider: a TLS context
// slot kept up to date with its material.
class CertificateProviderAccess {
 public:
  using Material = FileWatcherCertificateProvider::Material;
  using ContextBuilder = FileWatcherCertificateProvider::ContextBuilder;

  // A slot holding `build`'s context made from the provider's material,
  // rebuilt whenever that changes (new material `build` refuses is refused
  // for every user of the provider); or why it could not be built.
  static Status Subscribe(
      FileWatcherCertificateProvider& provider, ContextBuilder build,
      std::shared_ptr<transport::tls::TlsContextSlot>* slot) {
    return provider.Subscribe(std::move(build), slot);
  }
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CERTIFICATE_PROVIDER_ACCESS_H_
