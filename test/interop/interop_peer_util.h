#ifndef H2RPC_TEST_INTEROP_INTEROP_PEER_UTIL_H_
#define H2RPC_TEST_INTEROP_INTEROP_PEER_UTIL_H_

#include <signal.h>

#include <string>

// Process plumbing shared by the interop peers (h2rpc and gRPC C++ alike):
// the flag checks, the "listening on port N" contract with the pairing
// driver, and shutdown on SIGTERM/SIGINT.
namespace h2rpc::testing {

// "host:port", or "[host]:port" for an IPv6 literal.
std::string JoinHostPort(const std::string& host, int port);

// Client flags: on success returns 0 and sets `*target`; otherwise prints
// why to stderr and returns 2 (the interop clients' "bad flags" exit code).
int CheckClientFlags(const std::string& host, int port, int deadline_ms,
                     std::string* target);

// Server flags: on success returns 0 and sets `*address`; otherwise prints
// why and returns 2. Port 0 asks for a free port.
int CheckServerFlags(const std::string& host, int port, std::string* address);

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
