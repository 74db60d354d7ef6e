#ifndef H2RPC_RPC_CERTIFICATE_PROVIDER_H_
#define H2RPC_RPC_CERTIFICATE_PROVIDER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "rpc/status.h"

namespace h2rpc {

namespace transport::tls {
class TlsContext;
class TlsContextSlot;
}  // namespace transport::tls
namespace internal {
class CertificateProviderAccess;
}  // namespace internal

// TLS key material read from PEM files and read again as they change, for
// certificates that rotate while servers and channels run (gRPC C++'s
// FileWatcherCertificateProvider, grpc-go's pemfile): give it to
// SslServerCredentialsOptions::certificate_provider or
// SslCredentialsOptions::certificate_provider. New handshakes use the
// newest material; open connections keep theirs.
//
// Each read takes the files as they are. New content is used only when it
// is whole and consistent: every file parses, the key matches the
// certificate, the credentials built on it accept it. Otherwise the last
// good material stays in use and the refusal is counted and logged on
// stderr with why (a half-written file is refused, and taken once it is
// complete on a later read). Never an outage: a provider that once loaded
// keeps serving what it loaded.
//
// Threads: one of its own, reading the files every refresh_interval, until
// the provider is destroyed (the credentials using it hold it). Methods are
// thread-safe.
class FileWatcherCertificateProvider {
 public:
  struct Options {
    // The identity: a private key and its certificate chain (leaf first),
    // PEM files; both empty: none (a client that presents no certificate).
    std::string private_key_path;
    std::string identity_certificate_path;
    // The roots that verify peers, a PEM file; empty: none (a client then
    // trusts the system's store, a server cannot verify clients).
    std::string root_certificate_path;
    // How often the files are read. More than 0.
    absl::Duration refresh_interval = absl::Minutes(1);
  };

  // What a read counted, since the provider was made.
  struct Stats {
    // Material taken into use (the first read included).
    uint64_t loads = 0;
    // New content refused; the reason of the last refusal.
    uint64_t failures = 0;
    std::string last_error;
  };

  // Reads the files now and starts watching them. status() says why the
  // first read failed, if it did; credentials given such a provider are
  // unusable with that reason.
  static std::shared_ptr<FileWatcherCertificateProvider> Create(
      Options options);
  // Stops the watching thread (joins it).
  ~FileWatcherCertificateProvider();
  FileWatcherCertificateProvider(const FileWatcherCertificateProvider&) =
      delete;
  FileWatcherCertificateProvider& operator=(
      const FileWatcherCertificateProvider&) = delete;

  // The first read's outcome (or why the options are unusable).
  const Status& status() const { return status_; }
  // Reads the files now, as the thread does every refresh_interval: OK when
  // nothing changed or the new material is in use; otherwise why it was
  // refused (the last good material stays).
  Status Refresh();
  Stats stats() const;

 private:
  friend class internal::CertificateProviderAccess;

  // One set of material, PEM.
  struct Material {
    std::string private_key;
    std::string cert_chain;
    std::string roots;
    bool Same(const Material& other) const {
      return private_key == other.private_key &&
             cert_chain == other.cert_chain && roots == other.roots;
    }
  };
  // Makes a TLS context from material, for one credentials object.
  using ContextBuilder = std::function<Status(
      const Material&, std::shared_ptr<const transport::tls::TlsContext>*)>;
  struct Subscription {
    ContextBuilder build;
    std::weak_ptr<transport::tls::TlsContextSlot> slot;
  };

  explicit FileWatcherCertificateProvider(Options options);
  // Reads and checks the files; under load_mu_.
  Status Load() ABSL_EXCLUSIVE_LOCKS_REQUIRED(load_mu_);
  // A slot holding `build`'s context of the current material, kept up to
  // date from then on; or why it could not be built.
  Status Subscribe(ContextBuilder build,
                   std::shared_ptr<transport::tls::TlsContextSlot>* slot);
  void Watch();

  const Options options_;
  Status status_;  // set by Create, then constant
  // Serializes reads (the thread's and Refresh()'s) and the rebuilds they
  // cause.
  Mutex load_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  Material material_ ABSL_GUARDED_BY(load_mu_);
  // The content last refused, not counted again while it stays.
  Material refused_ ABSL_GUARDED_BY(load_mu_);
  std::vector<Subscription> subscriptions_ ABSL_GUARDED_BY(load_mu_);
  mutable Mutex mu_;
  Stats stats_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  CondVar stop_;
  std::thread thread_;
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_CERTIFICATE_PROVIDER_H_
