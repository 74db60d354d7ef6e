#ifndef H2RPC_RPC_INTERCEPTORS_LOGGING_INTERCEPTOR_H_
#define H2RPC_RPC_INTERCEPTORS_LOGGING_INTERCEPTOR_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "rpc/interceptor.h"
#include "rpc/metadata.h"
#include "rpc/status.h"

namespace h2rpc {

// Logs one line per call when it ends (OnFinish), to a sink:
//
//   side=client method=/pkg.Service/Method code=NOT_FOUND elapsed=1.234ms
//   sent_bytes=12 received_bytes=0 message="no such key"
//
// (one line): which end saw the call, the method, the status code's name,
// the time from OnStart to OnFinish (absl::FormatDuration), the serialized
// message bytes sent and received (before compression and after
// decompression), and the status message between quotes, C-escaped (\",
// \\, \n, \xHH...) and cut to Options::max_message_bytes. A method with a
// space, a quote, a backslash or a byte outside printable ASCII (a server
// logs what clients send) is quoted and escaped the same way, uncut.
//
// One object may serve as a ClientInterceptor (in
// ChannelOptions::interceptors) and a ServerInterceptor
// (Server::Builder::AddInterceptor) at once. Thread-safe: its hooks may run
// on any threads at once. It keeps each call's byte counts from OnStart to
// OnFinish in a map keyed by the call's context, whose nodes are recycled:
// once as many calls have been in flight at once as now, a call allocates
// nothing here (the sink aside; the line is built in a buffer kept by each
// thread). Each hook takes a lock for a map lookup. It never fails a call.
// A call whose OnStart did not reach this interceptor (an earlier one
// failed it) is not logged.
class LoggingInterceptor final : public ClientInterceptor,
                                 public ServerInterceptor {
 public:
  // Receives each line, without a newline. Called with a lock held, one
  // line at a time, so it need not be thread-safe; it must not call back
  // into this interceptor. It runs on the thread of the hook that ends the
  // call (often an event loop's), so it should not block for long.
  using Sink = std::function<void(absl::string_view line)>;

  struct Options {
    // Longest status message logged, in bytes (before escaping); a longer
    // one is cut there and followed by "...". Default 512.
    size_t max_message_bytes = 512;
  };

  // The default sink: the line and a newline to stderr (file descriptor
  // 2) in one write(2) (more only if the kernel takes part of it), so lines
  // from other writers sharing stderr do not cut into it. Write errors are
  // ignored.
  static Sink StderrSink();

  // Logs to stderr.
  LoggingInterceptor() : LoggingInterceptor(StderrSink()) {}
  // Logs to `sink` (null: StderrSink()).
  explicit LoggingInterceptor(Sink sink)
      : LoggingInterceptor(std::move(sink), Options()) {}
  LoggingInterceptor(Sink sink, const Options& options);

  Status OnStart(const ClientCallInfo& call) override;
  void OnSendMessage(const ClientCallInfo& call, size_t bytes) override;
  void OnReceiveMessage(const ClientCallInfo& call, size_t bytes) override;
  void OnFinish(const ClientCallInfo& call, const Status& status,
                const Metadata& trailing, absl::Duration elapsed) override;

  Status OnStart(const ServerCallInfo& call) override;
  void OnReceiveMessage(const ServerCallInfo& call, size_t bytes) override;
  void OnSendMessage(const ServerCallInfo& call, size_t bytes) override;
  void OnFinish(const ServerCallInfo& call, const Status& status,
                absl::Duration elapsed) override;

 private:
  struct Bytes {
    uint64_t sent = 0;
    uint64_t received = 0;
  };
  // Calls in flight by their context (a ClientContext or a ServerContext:
  // unique while the call runs).
  using CallMap = std::map<const void*, Bytes>;

  void Begin(const void* call);
  void Count(const void* call, uint64_t sent, uint64_t received);
  // Forgets the call; returns its counts (zero if unknown).
  Bytes End(const void* call);
  void Log(absl::string_view side, absl::string_view method,
           const Status& status, absl::Duration elapsed, const Bytes& bytes);

  const Options options_;

  Mutex calls_mu_;
  CallMap calls_ ABSL_GUARDED_BY(calls_mu_);
  // Nodes of ended calls, reused by the next ones.
  std::vector<CallMap::node_type> free_nodes_ ABSL_GUARDED_BY(calls_mu_);

  Mutex sink_mu_;  // one line at a time
  Sink sink_ ABSL_GUARDED_BY(sink_mu_);
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_INTERCEPTORS_LOGGING_INTERCEPTOR_H_
