#include "rpc/metrics/prometheus_text.h"

#include <charconv>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace h2rpc {
namespace {

// One label of a series.
struct Label {
  absl::string_view name;
  absl::string_view value;
};

// A label value with `\`, `"` and newlines escaped, as the format wants.
void AppendEscaped(absl::string_view value, std::string* out) {
  for (char c : value) {
    switch (c) {
      case '\\':
        out->append("\\\\");
        break;
      case '"':
        out->append("\\\"");
        break;
      case '\n':
        out->append("\\n");
        break;
      default:
        out->push_back(c);
    }
  }
}

// `{a="x",b="y"` without the closing brace, so `le` can follow.
void AppendLabels(const std::vector<Label>& labels, std::string* out) {
  out->push_back('{');
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out->push_back(',');
    absl::StrAppend(out, labels[i].name, "=\"");
    AppendEscaped(labels[i].value, out);
    out->push_back('"');
  }
}

void AppendHeader(absl::string_view name, absl::string_view type,
                  absl::string_view help, std::string* out) {
  absl::StrAppend(out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type,
                  "\n");
}

// The shortest text that reads back as `value`, in printf's %g style, as
// Prometheus's Go clients write it (0.0003, 1e-05, 4.294967296e+09).
std::string FormatDouble(double value) {
  char text[32];
  const std::to_chars_result end = std::to_chars(
      text, text + sizeof(text), value, std::chars_format::general);
  return std::string(text, end.ptr);
}

void AppendHistogram(absl::string_view name, const std::vector<Label>& labels,
                     const HistogramData& data, std::string* out) {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < data.buckets.size(); ++i) {
    cumulative += data.buckets[i];
    absl::StrAppend(out, name, "_bucket");
    AppendLabels(labels, out);
    absl::StrAppend(out, labels.empty() ? "" : ",", "le=\"",
                    i < data.bounds.size() ? FormatDouble(data.bounds[i])
                                           : std::string("+Inf"),
                    "\"} ", cumulative, "\n");
  }
  absl::StrAppend(out, name, "_sum");
  AppendLabels(labels, out);
  absl::StrAppend(out, "} ", FormatDouble(data.sum), "\n");
  absl::StrAppend(out, name, "_count");
  AppendLabels(labels, out);
  absl::StrAppend(out, "} ", data.count, "\n");
}

// One histogram metric over the series of one side.
template <class Series, class Field, class LabelsOf>
void AppendHistogramMetric(absl::string_view name, absl::string_view help,
                           const std::vector<Series>& all, Field field,
                           LabelsOf labels_of, std::string* out) {
  bool header = false;
  for (const Series& series : all) {
    const HistogramData& data = series.*field;
    if (data.count == 0) continue;
    if (!header) {
      AppendHeader(name, "histogram", help, out);
      header = true;
    }
    AppendHistogram(name, labels_of(series), data, out);
  }
}

// One counter or gauge (`type`) over `all` series (none: left out).
template <class Series, class Field, class LabelsOf>
void AppendValueMetric(absl::string_view name, absl::string_view help,
                       const std::vector<Series>& all, Field field,
                       LabelsOf labels_of, std::string* out,
                       absl::string_view type = "counter") {
  if (all.empty()) return;
  AppendHeader(name, type, help, out);
  for (const Series& series : all) {
    absl::StrAppend(out, name);
    AppendLabels(labels_of(series), out);
    absl::StrAppend(out, "} ", series.*field, "\n");
  }
}

}  // namespace

void AppendPrometheusText(const CallMetricsSnapshot& snapshot,
                          std::string* out) {
  using Snapshot = CallMetricsSnapshot;
  AppendValueMetric(
      "grpc_client_attempt_started_total",
      "The total number of RPC attempts started, including those that have "
      "not completed.",
      snapshot.client_started, &Snapshot::ClientStarted::attempts,
      [](const Snapshot::ClientStarted& started) {
        return std::vector<Label>{{"grpc_method", started.method},
                                  {"grpc_target", started.target}};
      },
      out);
  const auto client_labels = [](const Snapshot::ClientSeries& series) {
    return std::vector<Label>{{"grpc_method", series.method},
                              {"grpc_status", StatusCodeName(series.code)},
                              {"grpc_target", series.target}};
  };
  AppendHistogramMetric(
      "grpc_client_attempt_duration_seconds",
      "End-to-end time taken to complete an RPC attempt including the time "
      "it takes to pick a subchannel.",
      snapshot.client, &Snapshot::ClientSeries::attempt_duration, client_labels,
      out);
  AppendHistogramMetric(
      "grpc_client_attempt_sent_total_compressed_message_size_bytes",
      "Total bytes (compressed but not encrypted) sent across all request "
      "messages (metadata excluded) per RPC attempt; does not include grpc "
      "or transport framing bytes.",
      snapshot.client, &Snapshot::ClientSeries::attempt_sent, client_labels,
      out);
  AppendHistogramMetric(
      "grpc_client_attempt_rcvd_total_compressed_message_size_bytes",
      "Total bytes (compressed but not encrypted) received across all "
      "response messages (metadata excluded) per RPC attempt; does not "
      "include grpc or transport framing bytes.",
      snapshot.client, &Snapshot::ClientSeries::attempt_rcvd, client_labels,
      out);
  AppendHistogramMetric(
      "grpc_client_call_duration_seconds",
      "Time taken by gRPC to complete an RPC from the application's "
      "perspective.",
      snapshot.client, &Snapshot::ClientSeries::call_duration, client_labels,
      out);
  const auto retry_labels = [](const Snapshot::ClientRetries& series) {
    return std::vector<Label>{{"grpc_method", series.method},
                              {"grpc_target", series.target}};
  };
  AppendHistogramMetric(
      "grpc_client_call_retries",
      "Number of retries during the client call. If there were no retries, "
      "0 is not reported.",
      snapshot.client_retries, &Snapshot::ClientRetries::retries, retry_labels,
      out);
  AppendHistogramMetric(
      "grpc_client_call_transparent_retries",
      "Number of transparent retries during the client call. If there were "
      "no transparent retries, 0 is not reported.",
      snapshot.client_retries, &Snapshot::ClientRetries::transparent_retries,
      retry_labels, out);
  AppendHistogramMetric(
      "grpc_client_call_retry_delay_seconds",
      "Total time of delay while there is no active attempt during the "
      "client call.",
      snapshot.client_retries, &Snapshot::ClientRetries::retry_delay,
      retry_labels, out);

  const auto target_label = [](const Snapshot::ClientConnections& series) {
    return std::vector<Label>{{"grpc_target", series.target}};
  };
  AppendValueMetric(
      "grpc_subchannel_connection_attempts_succeeded_total",
      "Number of successful connection attempts.", snapshot.client_connections,
      &Snapshot::ClientConnections::attempts_succeeded, target_label, out);
  AppendValueMetric(
      "grpc_subchannel_connection_attempts_failed_total",
      "Number of failed connection attempts.", snapshot.client_connections,
      &Snapshot::ClientConnections::attempts_failed, target_label, out);
  bool disconnections = false;
  for (const Snapshot::ClientConnections& series :
       snapshot.client_connections) {
    for (const auto& [reason, count] : series.disconnections) {
      constexpr absl::string_view kName =
          "grpc_subchannel_disconnections_total";
      if (!disconnections) {
        AppendHeader(kName, "counter",
                     "Number of times the selected subchannel becomes "
                     "disconnected.",
                     out);
        disconnections = true;
      }
      absl::StrAppend(out, kName);
      AppendLabels(
          {{"grpc_disconnect_error", reason}, {"grpc_target", series.target}},
          out);
      absl::StrAppend(out, "} ", count, "\n");
    }
  }
  AppendValueMetric("grpc_subchannel_open_connections",
                    "Number of open connections.", snapshot.client_connections,
                    &Snapshot::ClientConnections::open, target_label, out,
                    "gauge");
  AppendValueMetric(
      "h2rpc_client_lb_picks_total",
      "Number of calls the load-balancing policy sent to each backend.",
      snapshot.client_backends, &Snapshot::ClientBackend::picks,
      [](const Snapshot::ClientBackend& backend) {
        return std::vector<Label>{{"grpc_target", backend.target},
                                  {"h2rpc_backend", backend.address}};
      },
      out);

  AppendValueMetric(
      "grpc_server_call_started_total",
      "The total number of RPCs started, including those that have not "
      "completed.",
      snapshot.server_started, &Snapshot::ServerStarted::calls,
      [](const Snapshot::ServerStarted& started) {
        return std::vector<Label>{{"grpc_method", started.method}};
      },
      out);
  const auto server_labels = [](const Snapshot::ServerSeries& series) {
    return std::vector<Label>{{"grpc_method", series.method},
                              {"grpc_status", StatusCodeName(series.code)}};
  };
  AppendHistogramMetric(
      "grpc_server_call_duration_seconds",
      "End-to-end time taken to complete a call from the server transport's "
      "perspective.",
      snapshot.server, &Snapshot::ServerSeries::call_duration, server_labels,
      out);
  AppendHistogramMetric(
      "grpc_server_call_sent_total_compressed_message_size_bytes",
      "Total bytes (compressed but not encrypted) sent across all response "
      "messages (metadata excluded) per RPC; does not include grpc or "
      "transport framing bytes.",
      snapshot.server, &Snapshot::ServerSeries::call_sent, server_labels, out);
  AppendHistogramMetric(
      "grpc_server_call_rcvd_total_compressed_message_size_bytes",
      "Total bytes (compressed but not encrypted) received across all "
      "request messages (metadata excluded) per RPC; does not include grpc "
      "or transport framing bytes.",
      snapshot.server, &Snapshot::ServerSeries::call_rcvd, server_labels, out);

  const Snapshot::ServerConnections& connections = snapshot.server_connections;
  if (!connections.recorded) return;
  const auto append_value = [out](absl::string_view name,
                                  absl::string_view type,
                                  absl::string_view help, uint64_t value) {
    AppendHeader(name, type, help, out);
    absl::StrAppend(out, name, " ", value, "\n");
  };
  append_value("h2rpc_server_connections", "gauge",
               "Number of open server connections.", connections.open);
  append_value("h2rpc_server_streams", "gauge",
               "Number of open server streams.", connections.open_streams);
  append_value("h2rpc_server_keepalive_timeouts_total", "counter",
               "Number of server connections closed because the client did "
               "not answer a keepalive PING.",
               connections.keepalive_timeouts);
  if (!connections.goaways_sent.empty()) {
    constexpr absl::string_view kName = "h2rpc_server_goaways_sent_total";
    AppendHeader(kName, "counter",
                 "Number of GOAWAY frames the servers sent, by error code.",
                 out);
    for (const auto& [code, count] : connections.goaways_sent) {
      absl::StrAppend(out, kName);
      AppendLabels({{"h2rpc_goaway_error", code}}, out);
      absl::StrAppend(out, "} ", count, "\n");
    }
  }
  append_value("h2rpc_server_memory_quota_used_bytes", "gauge",
               "Bytes the servers hold of their memory quotas.",
               connections.memory_quota_used);
}

}  // namespace h2rpc
