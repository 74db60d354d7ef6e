#ifndef H2RPC_RPC_METRICS_PROMETHEUS_ENDPOINT_H_
#define H2RPC_RPC_METRICS_PROMETHEUS_ENDPOINT_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "rpc/call_metrics.h"
#include "rpc/status.h"

struct MHD_Daemon;

namespace h2rpc {

// An HTTP endpoint for Prometheus to scrape: `GET /metrics` answers the
// CallMetrics' current values in the text format (rpc/metrics/
// prometheus_text.h); any other path is 404, any other method 405. It
// listens on a port of its own, never a gRPC port, and serves HTTP/1.1
// with GNU libmicrohttpd on one thread of its own, at most
// Options::max_connections connections at once, each closed after
// Options::idle_timeout without a request.
//
// Thread-safe; the destructor stops it (waiting for a scrape being
// answered). A scrape reads the metrics as CallMetrics::Snapshot does:
// the recording threads never wait for it.
class PrometheusEndpoint {
 public:
  struct Options {
    // A numeric IPv4 or IPv6 address to listen on: loopback unless the
    // scraper is elsewhere.
    std::string host = "127.0.0.1";
    // 0: a free port, port() tells which.
    int port = 0;
    int max_connections = 16;
    // Whole seconds; at least one.
    absl::Duration idle_timeout = absl::Seconds(10);
  };

  // Listens and starts serving `metrics`. Null with `*status` set
  // (UNAVAILABLE naming the address and the cause, INVALID_ARGUMENT for a
  // host that is not a numeric address) when it cannot.
  static std::unique_ptr<PrometheusEndpoint> Start(
      std::shared_ptr<CallMetrics> metrics, const Options& options,
      Status* status);
  ~PrometheusEndpoint();
  PrometheusEndpoint(const PrometheusEndpoint&) = delete;
  PrometheusEndpoint& operator=(const PrometheusEndpoint&) = delete;

  // The port it listens on.
  int port() const { return port_; }
  // The text a scrape answers now. Any thread; allocates the text (and
  // the snapshot behind it).
  std::string Render() const;

 private:
  PrometheusEndpoint(std::shared_ptr<CallMetrics> metrics, int port)
      : metrics_(std::move(metrics)), port_(port) {}

  const std::shared_ptr<CallMetrics> metrics_;
  const int port_;
  MHD_Daemon* daemon_ = nullptr;
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_METRICS_PROMETHEUS_ENDPOINT_H_
