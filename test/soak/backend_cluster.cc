#include "test/soak/backend_cluster.h"

#include <fstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "test/util/child_process.h"
#include "test/util/wait_for.h"
#include "transport/tls/testing/test_pki.h"

namespace h2rpc::testing {
namespace {

// How long a backend may take to start, or to shut down gracefully.
constexpr absl::Duration kStartTimeout = absl::Seconds(30);
constexpr absl::Duration kTerminateTimeout = absl::Seconds(30);
// How long a backend may take to answer the fresh call after a probe.
constexpr absl::Duration kAnswerTimeout = absl::Seconds(10);

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::trunc);
  file << text;
  file.close();
  return static_cast<bool>(file);
}

}  // namespace

BackendCluster::~BackendCluster() {
  for (Backend& backend : backends_) {
    MutexLock lock(&backend.mu);
    if (backend.process != nullptr) backend.process->Kill();
    backend.process.reset();
  }
}

bool BackendCluster::Start(const std::string& dir, std::string* error) {
  const auto& pki = transport::tls::testing::GetTestPki();
  const std::string key_file = dir + "/server.key";
  const std::string cert_file = dir + "/server.pem";
  if (!WriteFile(key_file, pki.server.private_key_pem) ||
      !WriteFile(cert_file, pki.server.cert_chain_pem)) {
    *error = absl::StrCat("cannot write ", key_file, " or ", cert_file);
    return false;
  }
  for (int i = 0; i < kBackends; ++i) {
    Backend& backend = backends_[i];
    backend.config.name = absl::StrCat("b", i);
    backend.config.key_file = key_file;
    backend.config.cert_file = cert_file;
    MutexLock lock(&backend.mu);
    if (!StartLocked(backend, error)) return false;
    // Its restarts reuse the ports it got.
    backend.config.plain_port = backend.process->ports()[0];
    backend.config.tls_port = backend.process->ports()[1];
    backend.plain_proxy = std::make_unique<TcpProxy>(backend.config.plain_port);
    backend.tls_proxy = std::make_unique<TcpProxy>(backend.config.tls_port);
    for (const TcpProxy* proxy :
         {backend.plain_proxy.get(), backend.tls_proxy.get()}) {
      if (!proxy->ok()) {
        *error = absl::StrCat("proxy for ", backend.config.name, ": ",
                              proxy->error());
        return false;
      }
    }
  }
  return true;
}

bool BackendCluster::StartLocked(Backend& backend, std::string* error) {
  const Config& config = backend.config;
  backend.process =
      ServerProcess::Start(config.name,
                           {RunfilesPath("test/soak/soak_backend"), config.name,
                            absl::StrCat("127.0.0.1:", config.plain_port),
                            absl::StrCat("127.0.0.1:", config.tls_port),
                            config.key_file, config.cert_file},
                           kStartTimeout, error);
  if (backend.process == nullptr) return false;
  if (backend.process->ports().size() != 2) {
    *error = absl::StrCat(config.name, " did not print \"ports P T\"");
    backend.process->Kill();
    backend.process.reset();
    return false;
  }
  backend.pid = backend.process->pid();
  ++backend.starts;
  return true;
}

std::string BackendCluster::Target(bool tls) const {
  std::vector<std::string> addresses;
  for (const Backend& backend : backends_) {
    addresses.push_back(
        (tls ? backend.tls_proxy : backend.plain_proxy)->target());
  }
  return absl::StrCat("ipv4:", absl::StrJoin(addresses, ","));
}

std::string BackendCluster::PlainTarget() const { return Target(false); }
std::string BackendCluster::TlsTarget() const { return Target(true); }

bool BackendCluster::Restart(int i, bool graceful, std::string* error) {
  Backend& backend = backends_[i];
  MutexLock lock(&backend.mu);
  backend.pid = -1;
  bool ok = true;
  if (backend.process != nullptr && backend.process->EndedByItself(error)) {
    ok = false;  // a crash: it is started again all the same
  } else if (backend.process != nullptr) {
    if (graceful) {
      ok = backend.process->Terminate(kTerminateTimeout, error);
    } else {
      backend.process->Kill();
    }
  }
  backend.process.reset();
  std::string start_error;
  if (!StartLocked(backend, &start_error)) {
    absl::StrAppend(error, ok ? "" : "; ", "restart: ", start_error);
    return false;
  }
  return ok;
}

void BackendCluster::ResetConnections(int i, bool tls) {
  Backend& backend = backends_[i];
  (tls ? backend.tls_proxy : backend.plain_proxy)->ResetConnections();
}

void BackendCluster::Delay(int i, bool tls, absl::Duration delay) {
  TcpProxy& proxy = *(tls ? backends_[i].tls_proxy : backends_[i].plain_proxy);
  proxy.Freeze();
  // The delay is the fault itself: nothing is awaited here.
  absl::SleepFor(delay);
  proxy.Thaw();
}

bool BackendCluster::Probe(int i, const AbuseProbe& probe, std::string* outcome,
                           std::string* error) {
  Backend& backend = backends_[i];
  MutexLock lock(&backend.mu);
  if (backend.process == nullptr) {
    *error = absl::StrCat(backend.config.name, " is not running");
    return false;
  }
  *outcome = probe.run(backend.config.plain_port, backend.config.tls_port);
  std::string answer_error;
  if (AnswersFreshCall(backend.config.plain_port, kAnswerTimeout,
                       &answer_error)) {
    return true;
  }
  std::string how;
  const bool crashed = backend.process->EndedByItself(&how);
  *error = absl::StrCat(backend.config.name, " did not answer a fresh call ",
                        "within ", absl::FormatDuration(kAnswerTimeout),
                        " after ", probe.name, " (", *outcome,
                        "): ", answer_error, crashed ? "\n" : "", how);
  return false;
}

bool BackendCluster::NoneCrashed(std::string* crashes) {
  bool none = true;
  for (Backend& backend : backends_) {
    MutexLock lock(&backend.mu);
    std::string how;
    if (backend.process == nullptr || !backend.process->EndedByItself(&how)) {
      continue;
    }
    none = false;
    absl::StrAppend(crashes, how, "\n");
    backend.pid = -1;
    std::string error;
    if (!StartLocked(backend, &error)) absl::StrAppend(crashes, error, "\n");
  }
  return none;
}

pid_t BackendCluster::pid(int i) const { return backends_[i].pid; }
int BackendCluster::starts(int i) const { return backends_[i].starts; }

bool BackendCluster::TerminateAll(std::string* how) {
  bool ok = true;
  for (Backend& backend : backends_) {
    MutexLock lock(&backend.mu);
    if (backend.process == nullptr) continue;
    backend.pid = -1;
    std::string why;
    if (!backend.process->Terminate(kTerminateTimeout, &why)) {
      ok = false;
      absl::StrAppend(how, why, "\n");
    }
    backend.process.reset();
  }
  return ok;
}

}  // namespace h2rpc::testing
