#ifndef H2RPC_BENCHMARK_TLS_CREDENTIALS_H_
#define H2RPC_BENCHMARK_TLS_CREDENTIALS_H_

#include <string>
#include <vector>

namespace h2rpc::benchmark {

// gRPC's interop test credentials (test/interop/testdata, see its README),
// which benchmain's --secure runs use on every stack: servers serve
// server1.key / server1.pem, clients trust ca.pem. The certificate names
// *.test.google.fr, not 127.0.0.1, so clients verify it against
// kTlsTargetNameOverride.
struct TlsCredentialFiles {
  std::string dir;          // where they were read, absolute
  std::string ca_pem;       // the test CA, which signed server1.pem
  std::string server_key;   // server1.key
  std::string server_cert;  // server1.pem
};

inline constexpr char kTlsTargetNameOverride[] = "foo.test.google.fr";

// The directories LoadTlsCredentialFiles searches when no directory is
// given, in order: test/interop/testdata in the runfiles of this binary
// ($RUNFILES_DIR, then <binary>.runfiles next to the executable, which
// covers `bazel run` and bazel-bin/benchmark/benchmain), then relative to
// the working directory (the runfiles root under `bazel run` and
// `bazel test`, or the workspace root for a copied binary run there).
std::vector<std::string> DefaultTlsCredentialDirs();

// Reads ca.pem, server1.key and server1.pem from `dir`, or when `dir` is
// empty from the first of DefaultTlsCredentialDirs() that holds all three.
// False with `*error` naming the paths tried, the system's reason and the
// --tls_credentials_dir flag when they cannot be read. Allocates; call once
// per process, before any run.
bool LoadTlsCredentialFiles(const std::string& dir, TlsCredentialFiles* files,
                            std::string* error);

}  // namespace h2rpc::benchmark

#endif  // H2RPC_BENCHMARK_TLS_CREDENTIALS_H_
