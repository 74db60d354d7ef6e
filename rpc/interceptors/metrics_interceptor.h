#ifndef H2RPC_RPC_INTERCEPTORS_METRICS_INTERCEPTOR_H_
#define H2RPC_RPC_INTERCEPTORS_METRICS_INTERCEPTOR_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "rpc/interceptor.h"
#include "rpc/interceptors/latency_histogram.h"
#include "rpc/metadata.h"
#include "rpc/status.h"

namespace h2rpc {

// Which end of a call an interceptor saw.
enum class CallSide { kClient, kServer };
// "client" or "server".
absl::string_view CallSideName(CallSide side);

// What a MetricsInterceptor counted for one method on one side.
struct MethodMetrics {
  CallSide side = CallSide::kClient;
  // "/package.Service/Method", or MetricsInterceptor::kOtherMethods.
  std::string method;
  // Calls whose OnStart ran, and those whose OnFinish ran (a call in
  // flight is in `started` only).
  uint64_t started = 0;
  uint64_t finished = 0;
  // Finished calls by status code, indexed by its number (OK at 0).
  std::array<uint64_t, kMaxStatusCode + 1> by_code{};
  // Latency of every finished call: OnStart to OnFinish.
  LatencyHistogram latency;

  // by_code's entry for `code`; 0 for a value outside the enum.
  uint64_t calls_with(StatusCode code) const {
    const int index = static_cast<int>(code);
    return index >= 0 && index <= kMaxStatusCode ? by_code[index] : 0;
  }
};

// Counts calls per method: started, finished, by status code, and a
// latency histogram. One object may serve as a ClientInterceptor (in
// ChannelOptions::interceptors) and a ServerInterceptor
// (Server::Builder::AddInterceptor) at once; each side is counted apart.
//
// Thread-safe: hooks and Snapshot() may run on any threads at once. A hook
// takes one lock for a lookup by the method's name, and allocates only the
// first time it sees a method (its name and counters, once). Past
// Options::max_methods methods per side, calls of new methods count under
// kOtherMethods, so a client naming endless methods cannot grow it. It
// never fails a call.
class MetricsInterceptor final : public ClientInterceptor,
                                 public ServerInterceptor {
 public:
  // The name calls of untracked methods count under.
  static constexpr absl::string_view kOtherMethods = "(other)";

  struct Options {
    // Methods tracked by name per side (client and server apart), in
    // methods; later ones count under kOtherMethods. Default 1000.
    size_t max_methods = 1000;
  };

  MetricsInterceptor() : MetricsInterceptor(Options()) {}
  explicit MetricsInterceptor(const Options& options);

  // Copies of the counters: the client's methods then the server's, each
  // sorted by name, kOtherMethods among them once a call counted there.
  // Any thread; allocates the copy.
  std::vector<MethodMetrics> Snapshot() const;

  Status OnStart(const ClientCallInfo& call) override;
  void OnFinish(const ClientCallInfo& call, const Status& status,
                const Metadata& trailing, absl::Duration elapsed) override;
  Status OnStart(const ServerCallInfo& call) override;
  void OnFinish(const ServerCallInfo& call, const Status& status,
                absl::Duration elapsed) override;

 private:
  // The counters of one side.
  class Table {
   public:
    Table(CallSide side, size_t max_methods)
        : side_(side), max_methods_(max_methods) {}
    void Start(absl::string_view method);
    void Finish(absl::string_view method, StatusCode code,
                absl::Duration elapsed);
    void AppendTo(std::vector<MethodMetrics>* out) const;

   private:
    struct Counters {
      uint64_t started = 0;
      uint64_t finished = 0;
      std::array<uint64_t, kMaxStatusCode + 1> by_code{};
      LatencyHistogram latency;
    };
    // The method's counters; allocates when it is new and tracked.
    Counters* Find(absl::string_view method) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

    const CallSide side_;
    const size_t max_methods_;
    mutable Mutex mu_;
    // std::less<>: looked up by string_view without building a string.
    std::map<std::string, Counters, std::less<>> methods_ ABSL_GUARDED_BY(mu_);
    Counters other_ ABSL_GUARDED_BY(mu_);
  };

  Table client_;
  Table server_;
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_INTERCEPTORS_METRICS_INTERCEPTOR_H_
