#include "rpc/certificate_provider.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "transport/io/monotonic_time.h"
#include "transport/tls/tls_context.h"

namespace h2rpc {
namespace {

// The whole of file `path` into `*contents`.
Status ReadFile(const std::string& path, std::string* contents) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return Status(
        StatusCode::kInvalidArgument,
        absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  std::ostringstream bytes;
  bytes << file.rdbuf();
  *contents = bytes.str();
  return Status();
}

}  // namespace

std::shared_ptr<FileWatcherCertificateProvider>
FileWatcherCertificateProvider::Create(Options options) {
  std::shared_ptr<FileWatcherCertificateProvider> provider(
      new FileWatcherCertificateProvider(std::move(options)));
  const Options& o = provider->options_;
  if (o.private_key_path.empty() != o.identity_certificate_path.empty()) {
    provider->status_ =
        Status(StatusCode::kInvalidArgument,
               "FileWatcherCertificateProvider: private_key_path and "
               "identity_certificate_path go together");
  } else if (o.private_key_path.empty() && o.root_certificate_path.empty()) {
    provider->status_ =
        Status(StatusCode::kInvalidArgument,
               "FileWatcherCertificateProvider: no files to watch");
  } else if (o.refresh_interval <= absl::ZeroDuration()) {
    provider->status_ =
        Status(StatusCode::kInvalidArgument,
               "FileWatcherCertificateProvider: refresh_interval must be "
               "more than zero");
  } else {
    MutexLock lock(&provider->load_mu_);
    provider->status_ = provider->Load();
  }
  if (provider->status_.ok()) {
    provider->thread_ = std::thread([raw = provider.get()] { raw->Watch(); });
  }
  return provider;
}

FileWatcherCertificateProvider::FileWatcherCertificateProvider(Options options)
    : options_(std::move(options)) {}

FileWatcherCertificateProvider::~FileWatcherCertificateProvider() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    stop_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

Status FileWatcherCertificateProvider::Load() {
  Material read;
  Status status;
  if (!options_.private_key_path.empty()) {
    status = ReadFile(options_.private_key_path, &read.private_key);
    if (status.ok()) {
      status = ReadFile(options_.identity_certificate_path, &read.cert_chain);
    }
  }
  if (status.ok() && !options_.root_certificate_path.empty()) {
    status = ReadFile(options_.root_certificate_path, &read.roots);
  }
  if (status.ok() && read.Same(material_)) {
    refused_ = Material();
    return Status();  // unchanged
  }
  const bool seen_refused = read.Same(refused_);
  if (status.ok()) {
    // OpenSSL parses every file and checks that the key matches the
    // certificate; a client context takes any of the three.
    transport::tls::ClientConfig check;
    check.key_cert = {read.private_key, read.cert_chain};
    check.root_certs_pem = read.roots;
    std::shared_ptr<const transport::tls::TlsContext> unused;
    if (read.roots.empty() && read.private_key.empty()) {
      status = Status(StatusCode::kInvalidArgument, "the files are empty");
    } else {
      status = transport::tls::TlsContext::CreateClient(check, &unused);
    }
  }
  // Every credentials object built on the provider must take it.
  std::vector<std::shared_ptr<const transport::tls::TlsContext>> built(
      subscriptions_.size());
  for (size_t i = 0; status.ok() && i < subscriptions_.size(); ++i) {
    if (subscriptions_[i].slot.expired()) continue;
    status = subscriptions_[i].build(read, &built[i]);
  }
  if (!status.ok()) {
    const bool loaded_before = !material_.Same(Material());
    status = Status(
        status.code(),
        absl::StrCat("certificate files (", options_.private_key_path, " ",
                     options_.identity_certificate_path, " ",
                     options_.root_certificate_path, ") refused",
                     loaded_before ? ", the last good ones stay: " : ": ",
                     status.message()));
    if (!seen_refused) {
      refused_ = std::move(read);
      {
        MutexLock lock(&mu_);
        ++stats_.failures;
        stats_.last_error = status.message();
      }
      std::fprintf(stderr, "h2rpc: %s\n", status.ToString().c_str());
    }
    return status;
  }
  material_ = std::move(read);
  refused_ = Material();
  for (size_t i = 0; i < subscriptions_.size(); ++i) {
    if (auto slot = subscriptions_[i].slot.lock()) {
      slot->Set(std::move(built[i]));
    }
  }
  MutexLock lock(&mu_);
  ++stats_.loads;
  return Status();
}

Status FileWatcherCertificateProvider::Refresh() {
  if (!status_.ok()) return status_;
  MutexLock lock(&load_mu_);
  return Load();
}

FileWatcherCertificateProvider::Stats FileWatcherCertificateProvider::stats()
    const {
  MutexLock lock(&mu_);
  return stats_;
}

Status FileWatcherCertificateProvider::Subscribe(
    ContextBuilder build,
    std::shared_ptr<transport::tls::TlsContextSlot>* slot) {
  if (!status_.ok()) return status_;
  MutexLock lock(&load_mu_);
  std::shared_ptr<const transport::tls::TlsContext> context;
  Status status = build(material_, &context);
  if (!status.ok()) return status;
  *slot = std::make_shared<transport::tls::TlsContextSlot>(std::move(context));
  // Drops the subscriptions of credentials that are gone.
  std::vector<Subscription> live;
  for (Subscription& subscription : subscriptions_) {
    if (!subscription.slot.expired()) live.push_back(std::move(subscription));
  }
  live.push_back(Subscription{std::move(build), *slot});
  subscriptions_ = std::move(live);
  return Status();
}

void FileWatcherCertificateProvider::Watch() {
  for (;;) {
    {
      MutexLock lock(&mu_);
      using transport::io::MonotonicTime;
      const MonotonicTime wake =
          MonotonicTime::Now() + options_.refresh_interval;
      while (!stopping_ && MonotonicTime::Now() < wake) {
        stop_.WaitWithTimeout(&mu_, wake - MonotonicTime::Now());
      }
      if (stopping_) return;
    }
    MutexLock lock(&load_mu_);
    // A refusal is counted and logged by Load(); the next read tries again.
    if (!Load().ok()) continue;
  }
}

}  // namespace h2rpc
