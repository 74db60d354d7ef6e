#include "rpc/internal/client/channel_options_check.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"

namespace h2rpc::internal {
namespace {

Status Invalid(absl::string_view field, const std::string& value,
               absl::string_view rule) {
  return Status(StatusCode::kInvalidArgument,
                absl::StrCat("ChannelOptions::", field, " is ", value,
                             "; it must be ", rule));
}

// Positive; finite unless `infinite_ok`.
Status CheckDuration(absl::string_view field, absl::Duration value,
                     bool infinite_ok) {
  if (value <= absl::ZeroDuration()) {
    return Invalid(field, absl::FormatDuration(value), "more than zero");
  }
  if (!infinite_ok && value == absl::InfiniteDuration()) {
    return Invalid(field, "infinite", "finite");
  }
  return Status();
}

}  // namespace

Status CheckChannelOptions(const ChannelOptions& options) {
  Status status =
      CheckDuration("min_connect_timeout", options.min_connect_timeout, false);
  if (status.ok()) {
    status = CheckDuration("initial_backoff", options.initial_backoff, false);
  }
  if (status.ok()) {
    status = CheckDuration("max_backoff", options.max_backoff, false);
  }
  if (!status.ok()) return status;
  if (options.max_backoff < options.initial_backoff) {
    return Invalid(
        "max_backoff", absl::FormatDuration(options.max_backoff),
        absl::StrCat("at least initial_backoff (",
                     absl::FormatDuration(options.initial_backoff), ")"));
  }
  if (!(options.backoff_multiplier >= 1.0) ||
      !std::isfinite(options.backoff_multiplier)) {
    return Invalid("backoff_multiplier",
                   absl::StrCat(options.backoff_multiplier),
                   "at least 1 and finite");
  }
  if (!(options.backoff_jitter >= 0.0 && options.backoff_jitter < 1.0)) {
    return Invalid("backoff_jitter", absl::StrCat(options.backoff_jitter),
                   "at least 0 and less than 1");
  }
  status = CheckDuration("idle_timeout", options.idle_timeout, true);
  if (status.ok()) {
    status = CheckDuration("keepalive_time", options.keepalive_time, true);
  }
  if (status.ok()) {
    status =
        CheckDuration("keepalive_timeout", options.keepalive_timeout, true);
  }
  if (status.ok()) {
    status = CheckDuration("dns_min_time_between_resolutions",
                           options.dns_min_time_between_resolutions, false);
  }
  if (status.ok()) {
    status = CheckDuration("dns_refresh_interval", options.dns_refresh_interval,
                           true);
  }
  if (!status.ok()) return status;
  if (options.busy_poll_us < 0 || options.busy_poll_us > kMaxBusyPollUs) {
    return Invalid(
        "busy_poll_us", absl::StrCat(options.busy_poll_us),
        absl::StrCat("from 0 to ", kMaxBusyPollUs, " (microseconds)"));
  }
  return Status();
}

}  // namespace h2rpc::internal
