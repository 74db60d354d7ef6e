#include "rpc/credentials.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rpc/internal/certificate_provider_access.h"
#include "transport/tls/tls_context.h"

namespace h2rpc {
namespace {

using internal::CertificateProviderAccess;
using transport::tls::TlsContext;
using transport::tls::TlsContextSlot;

// A slot holding the context `make` builds, or why it could not.
template <class Make>
Status NewSlot(Make make, std::shared_ptr<TlsContextSlot>* slot) {
  std::shared_ptr<const TlsContext> context;
  Status status = make(&context);
  if (status.ok()) *slot = std::make_shared<TlsContextSlot>(std::move(context));
  return status;
}

}  // namespace

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
  // The context of `roots` and `key_cert`, with the options' other settings.
  auto make = [cache_size = options.session_cache_size](
                  const std::string& roots,
                  const transport::tls::KeyCertPair& key_cert,
                  std::shared_ptr<const TlsContext>* context) {
    transport::tls::ClientConfig config;
    config.root_certs_pem = roots;
    config.key_cert = key_cert;
    config.session_cache_size = cache_size;
    return TlsContext::CreateClient(config, context);
  };
  std::shared_ptr<TlsContextSlot> slot;
  Status status;
  if (options.certificate_provider == nullptr) {
    status = NewSlot(
        [&](std::shared_ptr<const TlsContext>* context) {
          return make(options.pem_root_certs,
                      {options.pem_private_key, options.pem_cert_chain},
                      context);
        },
        &slot);
  } else if (!options.pem_root_certs.empty() ||
             !options.pem_private_key.empty() ||
             !options.pem_cert_chain.empty()) {
    status = Status(StatusCode::kInvalidArgument,
                    "SslCredentialsOptions: certificate_provider and the PEM "
                    "fields exclude each other");
  } else {
    status = CertificateProviderAccess::Subscribe(
        *options.certificate_provider,
        [make](const CertificateProviderAccess::Material& material,
               std::shared_ptr<const TlsContext>* context) {
          return make(material.roots,
                      {material.private_key, material.cert_chain}, context);
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
  // The context of `key_certs` and `roots`, with the options' other
  // settings.
  auto make = [request, rotation = options.session_ticket_key_rotation](
                  std::vector<transport::tls::KeyCertPair> key_certs,
                  const std::string& roots,
                  std::shared_ptr<const TlsContext>* context) {
    transport::tls::ServerConfig config;
    config.key_certs = std::move(key_certs);
    config.root_certs_pem = roots;
    config.client_certificate_request = request;
    config.session_ticket_key_rotation = rotation;
    return TlsContext::CreateServer(config, context);
  };
  std::shared_ptr<TlsContextSlot> slot;
  Status status;
  if (options.certificate_provider == nullptr) {
    std::vector<transport::tls::KeyCertPair> key_certs;
    for (const auto& pair : options.pem_key_cert_pairs) {
      key_certs.push_back({pair.private_key, pair.cert_chain});
    }
    status = NewSlot(
        [&](std::shared_ptr<const TlsContext>* context) {
          return make(std::move(key_certs), options.pem_root_certs, context);
        },
        &slot);
  } else if (!options.pem_key_cert_pairs.empty() ||
             !options.pem_root_certs.empty()) {
    status = Status(StatusCode::kInvalidArgument,
                    "SslServerCredentialsOptions: certificate_provider and "
                    "the PEM fields exclude each other");
  } else {
    status = CertificateProviderAccess::Subscribe(
        *options.certificate_provider,
        [make](const CertificateProviderAccess::Material& material,
               std::shared_ptr<const TlsContext>* context) {
          return make({{material.private_key, material.cert_chain}},
                      material.roots, context);
        },
        &slot);
  }
  return std::shared_ptr<ServerCredentials>(
      new ServerCredentials(true, std::move(status), std::move(slot)));
}

}  // namespace h2rpc
