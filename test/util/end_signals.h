#ifndef H2RPC_TEST_UTIL_END_SIGNALS_H_
#define H2RPC_TEST_UTIL_END_SIGNALS_H_

#include <functional>

#include "absl/strings/string_view.h"

namespace h2rpc::testing {

// For the main() of a server that a test runs as a child process
// (ServerProcess): SIGTERM and SIGINT are read from a signalfd instead of
// ending the process, so that it can shut its server down gracefully, and
// the process waits for them or for its stdin to end. Main thread only.
class EndSignals {
 public:
  EndSignals() = default;
  // Closes the signalfd.
  ~EndSignals();
  EndSignals(const EndSignals&) = delete;
  EndSignals& operator=(const EndSignals&) = delete;

  // Blocks SIGTERM and SIGINT and opens the signalfd. Call before any thread
  // starts, so that every thread inherits the mask and the signals reach
  // only the signalfd. False, with why on stderr after `program`, on
  // failure.
  bool Install(const char* program);

  // Returns once stdin reaches end of file (or fails) or SIGTERM or SIGINT
  // arrives. Each whole line read from stdin meanwhile (without its "\n" or
  // "\r\n") goes to `on_line`, when given.
  void WaitForTheEnd(
      const std::function<void(absl::string_view line)>& on_line = nullptr);

 private:
  int fd_ = -1;
};

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_END_SIGNALS_H_
