#include "rpc/credentials.h"

#include <memory>
#include <utility>

#include "rpc/internal/certificate_provider_access.h"
#include "transport/tls/tls_context.h"

namespace h2rpc {

ChannelCredentials::ChannelCredentials(
    bool secure, bool local, Status status,
    std::shared_ptr<transport::tls::TlsContextSlot> tls,
    std::shared_ptr<CallCredentials> call_credentials)
    : secure_(secure),
      local_(local),
      status_(std::move(status)),
      tls_(std::move(tls)),
      call_credentials_(std::move(call_credentials)) {}

ChannelCredentials::~ChannelCredentials() = default;

std::shared_ptr<ChannelCredentials> InsecureChannelCredentials() {
  return std::shared_ptr<ChannelCredentials>(
      new ChannelCredentials(false, false, Status(), nullptr, nullptr));
}

std::shared_ptr<ChannelCredentials> LocalCredentials() {
  return std::shared_ptr<ChannelCredentials>(
      new ChannelCredentials(false, true, Status(), nullptr, nullptr));
}

std::shared_ptr<ChannelCredentials> CompositeChannelCredentials(
    const std::shared_ptr<ChannelCredentials>& channel_credentials,
    const std::shared_ptr<CallCredentials>& call_credentials) {
  Status status;
  if (channel_credentials == nullptr || call_credentials == nullptr) {
    status = Status(StatusCode::kInvalidArgument,
                    "CompositeChannelCredentials: the credentials are null");
  } else if (!channel_credentials->status().ok()) {
    status = channel_credentials->status();
  } else if (!call_credentials->status().ok()) {
    status = call_credentials->status();
  }
  if (!status.ok()) {
    return std::shared_ptr<ChannelCredentials>(new ChannelCredentials(
        false, false, std::move(status), nullptr, nullptr));
  }
  const std::shared_ptr<CallCredentials>& existing =
      channel_credentials->call_credentials();
  return std::shared_ptr<ChannelCredentials>(new ChannelCredentials(
      channel_credentials->secure(), channel_credentials->local(), Status(),
      channel_credentials->tls_,
      existing == nullptr
          ? call_credentials
          : CompositeCallCredentials(existing, call_credentials)));
}

std::shared_ptr<ChannelCredentials> SslCredentials(
    const SslCredentialsOptions& options) {
  using internal::CertificateProviderAccess;
  std::shared_ptr<transport::tls::TlsContextSlot> slot;
  Status status;
  if (options.certificate_provider == nullptr) {
    transport::tls::ClientConfig config;
    config.root_certs_pem = options.pem_root_certs;
    config.key_cert = {options.pem_private_key, options.pem_cert_chain};
    config.session_cache_size = options.session_cache_size;
    std::shared_ptr<const transport::tls::TlsContext> context;
    status = transport::tls::TlsContext::CreateClient(config, &context);
    if (status.ok()) {
      slot =
          std::make_shared<transport::tls::TlsContextSlot>(std::move(context));
    }
  } else if (!options.pem_root_certs.empty() ||
             !options.pem_private_key.empty() ||
             !options.pem_cert_chain.empty()) {
    status = Status(StatusCode::kInvalidArgument,
                    "SslCredentialsOptions: certificate_provider and the PEM "
                    "fields exclude each other");
  } else {
    status = CertificateProviderAccess::Subscribe(
        *options.certificate_provider,
        [cache_size = options.session_cache_size](
            const CertificateProviderAccess::Material& material,
            std::shared_ptr<const transport::tls::TlsContext>* context) {
          transport::tls::ClientConfig config;
          config.root_certs_pem = material.roots;
          config.key_cert = {material.private_key, material.cert_chain};
          config.session_cache_size = cache_size;
          return transport::tls::TlsContext::CreateClient(config, context);
        },
        &slot);
  }
  return std::shared_ptr<ChannelCredentials>(new ChannelCredentials(
      true, false, std::move(status), std::move(slot), nullptr));
}

ServerCredentials::ServerCredentials(
    bool secure, Status status,
    std::shared_ptr<transport::tls::TlsContextSlot> tls)
    : secure_(secure), status_(std::move(status)), tls_(std::move(tls)) {}

ServerCredentials::~ServerCredentials() = default;

std::shared_ptr<ServerCredentials> InsecureServerCredentials() {
  return std::shared_ptr<ServerCredentials>(
      new ServerCredentials(false, Status(), nullptr));
}

std::shared_ptr<ServerCredentials> SslServerCredentials(
    const SslServerCredentialsOptions& options) {
  using internal::CertificateProviderAccess;
  using Request = transport::tls::ClientCertificateRequest;
  Request request = Request::kDontRequest;
  switch (options.client_certificate_request) {
    case SslClientCertificateRequest::kDontRequest:
      request = Request::kDontRequest;
      break;
    case SslClientCertificateRequest::kRequestButDontVerify:
      request = Request::kRequestButDontVerify;
      break;
    case SslClientCertificateRequest::kRequestAndVerify:
      request = Request::kRequestAndVerify;
      break;
    case SslClientCertificateRequest::kRequireButDontVerify:
      request = Request::kRequireButDontVerify;
      break;
    case SslClientCertificateRequest::kRequireAndVerify:
      request = Request::kRequireAndVerify;
      break;
  }
  std::shared_ptr<transport::tls::TlsContextSlot> slot;
  Status status;
  if (options.certificate_provider == nullptr) {
    transport::tls::ServerConfig config;
    for (const auto& pair : options.pem_key_cert_pairs) {
      config.key_certs.push_back({pair.private_key, pair.cert_chain});
    }
    config.root_certs_pem = options.pem_root_certs;
    config.client_certificate_request = request;
    config.session_ticket_key_rotation = options.session_ticket_key_rotation;
    std::shared_ptr<const transport::tls::TlsContext> context;
    status = transport::tls::TlsContext::CreateServer(config, &context);
    if (status.ok()) {
      slot =
          std::make_shared<transport::tls::TlsContextSlot>(std::move(context));
    }
  } else if (!options.pem_key_cert_pairs.empty() ||
             !options.pem_root_certs.empty()) {
    status = Status(StatusCode::kInvalidArgument,
                    "SslServerCredentialsOptions: certificate_provider and "
                    "the PEM fields exclude each other");
  } else {
    status = CertificateProviderAccess::Subscribe(
        *options.certificate_provider,
        [request, rotation = options.session_ticket_key_rotation](
            const CertificateProviderAccess::Material& material,
            std::shared_ptr<const transport::tls::TlsContext>* context) {
          transport::tls::ServerConfig config;
          config.key_certs.push_back(
              {material.private_key, material.cert_chain});
          config.root_certs_pem = material.roots;
          config.client_certificate_request = request;
          config.session_ticket_key_rotation = rotation;
          return transport::tls::TlsContext::CreateServer(config, context);
        },
        &slot);
  }
  return std::shared_ptr<ServerCredentials>(
      new ServerCredentials(true, std::move(status), std::move(slot)));
}

}  // namespace h2rpc
