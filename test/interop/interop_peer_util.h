#ifndef H2RPC_TEST_INTEROP_INTEROP_PEER_UTIL_H_
#define H2RPC_TEST_INTEROP_INTEROP_PEER_UTIL_H_

#include <signal.h>

#include <string>

// Process plumbing shared by the interop peers (h2rpc and gRPC C++ alike):
// the flag checks, the TLS test credentials, the "listening on port N"
// contract with the pairing driver, and shutdown on SIGTERM/SIGINT.
namespace h2rpc::testing {

// Where the peers look for gRPC's interop test credentials (ca.pem,
// server1.key, server1.pem) unless --tls_testdata_dir says otherwise:
// relative to the working directory, which under `bazel test` and
// `bazel run` is the runfiles root (the peers' BUILD targets carry
// //test/interop/testdata:interop_testdata as data) and works from the
// workspace root too.
inline constexpr char kDefaultTlsTestdataDir[] = "test/interop/testdata";

// The interop test CA, which signed server1.pem.
inline constexpr char kTestCaFile[] = "ca.pem";
// The server key pair of gRPC's interop servers. Its certificate names
// *.test.google.fr (among others), not localhost: clients connect with
// --server_host_override=foo.test.google.fr.
inline constexpr char kServerKeyFile[] = "server1.key";
inline constexpr char kServerCertFile[] = "server1.pem";

// "host:port", or "[host]:port" for an IPv6 literal.
std::string JoinHostPort(const std::string& host, int port);

// Client flags: on success returns 0 and sets `*target`; otherwise prints
// why to stderr and returns 2 (the interop clients' "bad flags" exit code).
int CheckClientFlags(const std::string& host, int port, int deadline_ms,
                     std::string* target);

// Server flags: on success returns 0 and sets `*address`; otherwise prints
// why and returns 2. Port 0 asks for a free port.
int CheckServerFlags(const std::string& host, int port, std::string* address);

// Reads `dir`/`file` into `*contents`. On failure prints why (the path and
// the system's reason) to stderr and returns 2, the "bad flags" exit code
// (a wrong --tls_testdata_dir); 0 on success.
int ReadTestdataFile(const std::string& dir, const std::string& file,
                     std::string* contents);

// Client TLS flags: --use_test_ca and --server_host_override mean something
// only with --use_tls. Returns 0 when consistent; otherwise prints why and
// returns 2.
int CheckClientTlsFlags(bool use_tls, bool use_test_ca,
                        const std::string& server_host_override);

// Blocks SIGTERM and SIGINT in the calling thread (call before any library
// starts threads, so they all inherit the mask) and returns them in
// `*signals`. False if the mask cannot be set.
bool BlockShutdownSignals(sigset_t* signals);

// Prints "listening on port N" to stdout, the line the pairing driver waits
// for, and flushes.
void AnnounceListening(int port);

// Waits for one of `signals`; returns its number.
int WaitForShutdownSignal(const sigset_t& signals);

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_INTEROP_INTEROP_PEER_UTIL_H_
