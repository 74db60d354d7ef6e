#ifndef H2RPC_RPC_INTERNAL_CLIENT_LOAD_REPORT_WATCH_H_
#define H2RPC_RPC_INTERNAL_CLIENT_LOAD_REPORT_WATCH_H_

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/metadata.h"
#include "rpc/internal/client/control_call.h"
#include "rpc/status.h"
#include "transport/http2/client_session.h"

namespace h2rpc::internal {

// ORCA's out-of-band load reports (gRPC's A51) from one connection: an
// xds.service.orca.v3.OpenRcaService/StreamCoreMetrics call asking for a
// report every `interval`, each response a serialized
// xds.data.orca.v3.OrcaLoadReport. Reused across connections; one call at
// a time. Loop thread only.
class LoadReportWatch final : private transport::http2::ClientStream::Observer {
 public:
  class Listener {
   public:
    // A report, as the backend serialized it (valid during the call).
    virtual void OnLoadReport(absl::string_view report) = 0;
    // The call ended with `status`; `cancelled`: by Cancel(). The watch
    // may be started again once this has returned, not from inside.
    virtual void OnLoadReportWatchEnded(const Status& status,
                                        bool cancelled) = 0;

   protected:
    ~Listener() = default;
  };

  // `settings` and `listener` must outlive the watch.
  LoadReportWatch(const ControlCallSettings* settings, Listener* listener)
      : settings_(settings), listener_(listener) {}
  LoadReportWatch(const LoadReportWatch&) = delete;
  LoadReportWatch& operator=(const LoadReportWatch&) = delete;

  // Starts the call on `connection` (established) unless one is still in
  // progress (active()). The outcome, even an immediate failure, is
  // reported later or from inside this call.
  void Start(transport::http2::ClientSession* connection,
             absl::Duration interval);
  // Ends the call in progress, if any: no more OnLoadReport, and
  // OnLoadReportWatchEnded with `cancelled` (which may come later).
  void Cancel();
  // A call is in progress (until OnLoadReportWatchEnded).
  bool active() const { return stream_.active(); }

 private:
  Status OnMessage(absl::string_view message, bool compressed) override;
  void OnClose(const Status& status, Metadata& trailing) override;

  const ControlCallSettings* const settings_;
  Listener* const listener_;
  transport::http2::ClientStream stream_;
  bool cancelled_ = false;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_LOAD_REPORT_WATCH_H_
