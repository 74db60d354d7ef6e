#ifndef H2RPC_RPC_INTERNAL_COMMON_MISUSE_H_
#define H2RPC_RPC_INTERNAL_COMMON_MISUSE_H_

#include <string>

namespace h2rpc::internal {

// API misuse that h2rpc detects (a second Finish, a second read or write
// while one is outstanding, a UnaryDone called twice or never): reported,
// never left to hang a call or leak a count.
//
// ReportMisuse writes "h2rpc: API misuse: " + `message` to stderr. In debug
// builds (NDEBUG not defined) it then aborts, like a failed CHECK; in
// optimized builds it returns, and the caller fails the call with INTERNAL
// or ignores the duplicate. Any thread; allocates nothing beyond `message`.
void ReportMisuse(const std::string& message);

// Whether ReportMisuse aborts: true in debug builds, false under NDEBUG.
bool MisuseIsFatal();
// Tests only: makes ReportMisuse abort (true) or return (false) whatever the
// build, so one binary can check both behaviours. Set it before the calls
// it should affect start.
void SetMisuseIsFatalForTest(bool fatal);

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_COMMON_MISUSE_H_
