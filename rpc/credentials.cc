#include "rpc/credentials.h"

#include <memory>
#include <utility>

#include "transport/tls/tls_context.h"

namespace h2rpc {

ChannelCredentials::ChannelCredentials(
    bool secure, bool local, Status status,
    std::shared_ptr<const transport::tls::TlsContext> tls,
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
  transport::tls::ClientConfig config;
  config.root_certs_pem = options.pem_root_certs;
  config.key_cert = {options.pem_private_key, options.pem_cert_chain};
  std::shared_ptr<const transport::tls::TlsContext> context;
  Status status = transport::tls::TlsContext::CreateClient(config, &context);
  return std::shared_ptr<ChannelCredentials>(new ChannelCredentials(
      true, false, std::move(status), std::move(context), nullptr));
}

ServerCredentials::ServerCredentials(
    bool secure, Status status,
    std::shared_ptr<const transport::tls::TlsContext> tls)
    : secure_(secure), status_(std::move(status)), tls_(std::move(tls)) {}

ServerCredentials::~ServerCredentials() = default;

std::shared_ptr<ServerCredentials> InsecureServerCredentials() {
  return std::shared_ptr<ServerCredentials>(
      new ServerCredentials(false, Status(), nullptr));
}

std::shared_ptr<ServerCredentials> SslServerCredentials(
    const SslServerCredentialsOptions& options) {
  using Request = transport::tls::ClientCertificateRequest;
  transport::tls::ServerConfig config;
  for (const auto& pair : options.pem_key_cert_pairs) {
    config.key_certs.push_back({pair.private_key, pair.cert_chain});
  }
  config.root_certs_pem = options.pem_root_certs;
  switch (options.client_certificate_request) {
    case SslClientCertificateRequest::kDontRequest:
      config.client_certificate_request = Request::kDontRequest;
      break;
    case SslClientCertificateRequest::kRequestButDontVerify:
      config.client_certificate_request = Request::kRequestButDontVerify;
      break;
    case SslClientCertificateRequest::kRequestAndVerify:
      config.client_certificate_request = Request::kRequestAndVerify;
      break;
    case SslClientCertificateRequest::kRequireButDontVerify:
      config.client_certificate_request = Request::kRequireButDontVerify;
      break;
    case SslClientCertificateRequest::kRequireAndVerify:
      config.client_certificate_request = Request::kRequireAndVerify;
      break;
  }
  std::shared_ptr<const transport::tls::TlsContext> context;
  Status status = transport::tls::TlsContext::CreateServer(config, &context);
  return std::shared_ptr<ServerCredentials>(
      new ServerCredentials(true, std::move(status), std::move(context)));
}

}  // namespace h2rpc
