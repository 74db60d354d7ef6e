#ifndef H2RPC_TEST_UTIL_LOOPBACK_SOCKET_H_
#define H2RPC_TEST_UTIL_LOOPBACK_SOCKET_H_

// Blocking TCP sockets on 127.0.0.1, and unix-domain client sockets, for
// tests that play a peer by hand (a fake server, a silent client).
// Descriptors are the caller's to close.

#include "absl/strings/string_view.h"

namespace h2rpc::testing {

// A listening socket on 127.0.0.1:port (0: any), or -1.
int ListenOnLoopback(int port);
// The port `fd` is bound to.
int LocalPort(int fd);
// A port nothing listens on (connects are refused): picked by the kernel,
// then released.
int ClosedLoopbackPort();
// A socket connected to 127.0.0.1:port, or -1; with SO_RCVBUF set to
// `receive_buffer` bytes first when it is positive (a small window, so that
// a peer's answers fill the path soon).
int ConnectToLoopback(int port, int receive_buffer = 0);
// A socket connected to the unix-domain socket at `path` (`abstract`: the
// name `path` in the abstract namespace), or -1 (path too long, nothing
// listening).
int ConnectToUnix(absl::string_view path, bool abstract = false);
// Sends all of `bytes` (true), or stops at the first error (false).
bool WriteAll(int fd, absl::string_view bytes);

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_LOOPBACK_SOCKET_H_
