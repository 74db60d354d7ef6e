#ifndef H2RPC_RPC_LOAD_BALANCING_H_
#define H2RPC_RPC_LOAD_BALANCING_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "rpc/connectivity_state.h"
#include "rpc/metadata.h"
#include "rpc/resolver.h"
#include "rpc/status.h"

// Load-balancing policy plugins (gRPC's load-balancing.md): a policy keeps
// subchannels (a connection each) to the addresses the channel's resolver
// found, reports the channel's connectivity state, and picks a READY
// subchannel for each call. h2rpc's own are "pick_first" (the default),
// "round_robin", "weighted_round_robin" (gRPC's A58: by the backends'
// ORCA load reports, rpc/orca.h) and "outlier_detection_experimental"
// (A50); register others by name and select them with the service
// config's loadBalancingConfig ({"loadBalancingConfig": [{"my_policy":
// {...}}]}) or ChannelOptions::lb_policy. See docs/scaling-out.md.
//
// Threads: everything a policy is given and every method it implements
// runs on the channel's event loop thread, which nothing else runs on
// meanwhile; a policy never blocks there.

namespace h2rpc {

class LbSubchannel;

namespace internal {
class ChannelCore;
struct LbSubchannelAccess;
}  // namespace internal

// Told of the calls a subchannel carried (set with
// LbSubchannel::set_call_observer): load reports, outlier detection.
class LbCallObserver {
 public:
  // A call attempt on `subchannel` ended with `status`; `trailers` are the
  // server's trailing metadata (empty when it sent none). Loop thread.
  virtual void OnCallEnded(LbSubchannel* subchannel, const Status& status,
                           const Metadata& trailers) = 0;

 protected:
  ~LbCallObserver() = default;
};

// Told of a subchannel's out-of-band load reports (set with
// LbSubchannel::WatchLoadReports).
class LbLoadReportWatcher {
 public:
  // `subchannel`'s backend sent `report`, a serialized
  // xds.data.orca.v3.OrcaLoadReport (rpc/orca.h's ParseLoadReport reads
  // it; valid during the call only). Loop thread.
  virtual void OnLoadReport(LbSubchannel* subchannel,
                            absl::string_view report) = 0;

 protected:
  ~LbLoadReportWatcher() = default;
};

// One backend address as a policy sees it: a connection of its own with
// its own state and reconnect backoff, made by LbPolicy::Helper.
//
// States: IDLE (no connection; RequestConnection() starts one), CONNECTING,
// READY (calls can go to it), TRANSIENT_FAILURE (the last attempt failed,
// last_error() says why; the subchannel tries again by itself once its
// backoff has passed). A READY subchannel whose connection ends goes IDLE.
// With health checking (the service config's healthCheckConfig, for every
// policy but pick_first) a connected backend is READY only while its
// health service says SERVING. Every change is reported to
// LbPolicy::OnSubchannelStateChange, never from inside a call the policy
// makes into the subchannel.
class LbSubchannel {
 public:
  LbSubchannel(const LbSubchannel&) = delete;
  LbSubchannel& operator=(const LbSubchannel&) = delete;

  // The address, in the channel's canonical text ("10.0.0.7:50051"), with
  // the resolver's attributes.
  const ResolvedAddress& address() const { return address_; }
  virtual ConnectivityState state() const = 0;
  // UNAVAILABLE: why the last attempt failed; OK before any failure.
  virtual const Status& last_error() const = 0;
  // IDLE: starts connecting (the change is reported later). Otherwise a
  // no-op.
  virtual void RequestConnection() = 0;

  // Calls that end on this subchannel from now on are reported to
  // `observer` (null, the default: to nobody, at no cost), which must
  // outlive the subchannel or be reset first.
  void set_call_observer(LbCallObserver* observer) {
    call_observer_ = observer;
  }
  LbCallObserver* call_observer() const { return call_observer_; }

  // ORCA's out-of-band load reports (gRPC's A51): while the subchannel has
  // an established connection it keeps an
  // xds.service.orca.v3.OpenRcaService/StreamCoreMetrics call open on it,
  // asking for a report every `interval` (the backend may send less
  // often), and hands each report to `watcher`, which must outlive the
  // subchannel or be reset first. Null (the default): no such call. A
  // backend without the service (UNIMPLEMENTED) sends none on that
  // connection; a call that fails otherwise is made again after a backoff
  // (1 s, doubling up to 2 min, reset by a report). Another interval
  // restarts the call. A subchannel that does not implement it (one a
  // policy wraps without forwarding) ignores it. Loop thread. Allocates
  // the call's state once per subchannel; a report reaches the watcher
  // without a copy.
  virtual void WatchLoadReports(LbLoadReportWatcher* watcher,
                                absl::Duration interval) {}

 protected:
  explicit LbSubchannel(ResolvedAddress address)
      : address_(std::move(address)) {}
  virtual ~LbSubchannel() = default;

 private:
  friend struct LbSubchannelOrphaner;
  friend struct internal::LbSubchannelAccess;
  // The policy is done with the subchannel: no more reports, no more calls
  // into it. Calls already on its connection finish (the connection drains
  // gracefully); the channel frees it afterwards. May be called from
  // inside the subchannel's own report.
  virtual void Orphan() = 0;

  const ResolvedAddress address_;
  LbCallObserver* call_observer_ = nullptr;
  // The channel that made it (a pick of anything else is refused).
  const internal::ChannelCore* channel_ = nullptr;
};

struct LbSubchannelOrphaner {
  void operator()(LbSubchannel* subchannel) const { subchannel->Orphan(); }
};
// A policy's hold on a subchannel; dropping it orphans the subchannel.
using SubchannelPtr = std::unique_ptr<LbSubchannel, LbSubchannelOrphaner>;

// A load-balancing policy: given the resolved addresses, keeps subchannels
// to them, reports the channel's aggregate connectivity state, and picks a
// READY subchannel for each call. Made by its factory when the channel
// gets its first addresses, destroyed (orphaning its subchannels) when the
// channel goes idle, is destroyed, or a new service config names another
// policy. Loop thread only. Pick() runs once per call attempt: keep it
// free of allocations and locks.
class LbPolicy {
 public:
  // What a policy needs from its channel. Loop thread only; valid while
  // the policy lives.
  class Helper {
   public:
    // A new subchannel to `address` (one of those UpdateAddresses gave),
    // IDLE.
    virtual SubchannelPtr CreateSubchannel(const ResolvedAddress& address) = 0;
    // The policy's state, or the set of subchannels Pick() chooses from,
    // changed: calls waiting for a connection are picked again. `error`:
    // UNAVAILABLE, why, in TRANSIENT_FAILURE; OK otherwise.
    virtual void UpdateState(ConnectivityState state, const Status& error) = 0;
    // The addresses may be stale (a connection failed or ended): resolve
    // the target again (rate-limited by the channel).
    virtual void RequestReresolution() = 0;
    // Runs `task` on the loop thread after `delay`, unless CancelTimer(id)
    // comes first; the id is never 0. Timers still pending when the policy
    // is destroyed never run. Allocates.
    virtual uint64_t StartTimer(absl::Duration delay,
                                absl::AnyInvocable<void()> task) = 0;
    // No-op for a timer that has run or was cancelled.
    virtual void CancelTimer(uint64_t id) = 0;
    // The channel's target, for messages.
    virtual const std::string& target() const = 0;

   protected:
    ~Helper() = default;
  };

  virtual ~LbPolicy() = default;

  // The resolver's addresses (at least one, each once), the first time or
  // changed.
  virtual void UpdateAddresses(
      const std::vector<ResolvedAddress>& addresses) = 0;
  // A call needs a connection (or the channel was asked to connect): an
  // IDLE policy starts connecting. A policy starts IDLE.
  virtual void ExitIdle() = 0;
  // The subchannel for a call: one of this policy's, READY, or null when
  // none is (the call waits for UpdateState, or fails in
  // TRANSIENT_FAILURE unless it is wait_for_ready). Anything else is
  // refused: the call fails with INTERNAL naming the policy.
  virtual LbSubchannel* Pick() = 0;
  // A subchannel of this policy changed state. The policy may orphan it
  // from here.
  virtual void OnSubchannelStateChange(LbSubchannel* subchannel) = 0;
};

// Makes the policies of one name. Register it process-wide with
// RegisterLbPolicyFactory, or for one channel in
// ChannelOptions::lb_policy_factories. Its methods may run on any thread,
// several at once.
class LbPolicyFactory {
 public:
  virtual ~LbPolicyFactory() = default;

  // The name loadBalancingConfig and ChannelOptions::lb_policy use
  // ("weighted_round_robin"): letters, digits, '_', '-', '.'.
  virtual std::string name() const = 0;
  // Whether `config` (the policy's object in loadBalancingConfig, as JSON
  // text; "{}" when given by ChannelOptions::lb_policy) is one this policy
  // takes. Not OK: the service config is refused (INVALID_ARGUMENT, or a
  // resolver's config counts as its error) with this message. Default: OK.
  virtual Status CheckConfig(absl::string_view config) const;
  // A policy with `config` (which passed CheckConfig), reporting to
  // `helper`. The channel's loop thread. A null policy (or one that
  // throws) puts the channel in TRANSIENT_FAILURE with a message naming
  // the policy.
  virtual std::unique_ptr<LbPolicy> Create(LbPolicy::Helper* helper,
                                           absl::string_view config) = 0;
};

// Registers `factory` by its name in this process, replacing any factory
// registered for it before (h2rpc's own included). Channels created from
// then on use it. Any thread. INVALID_ARGUMENT for a null factory or a
// name that is not valid.
Status RegisterLbPolicyFactory(std::shared_ptr<LbPolicyFactory> factory);

// The factory registered for `name`, or null. Any thread.
std::shared_ptr<LbPolicyFactory> FindLbPolicyFactory(absl::string_view name);

}  // namespace h2rpc

#endif  // H2RPC_RPC_LOAD_BALANCING_H_
