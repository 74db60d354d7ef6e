#ifndef H2RPC_RPC_INTERNAL_LB_LB_POLICY_H_
#define H2RPC_RPC_INTERNAL_LB_LB_POLICY_H_

#include <memory>
#include <vector>

#include "rpc/connectivity_state.h"
#include "rpc/status.h"
#include "transport/http2/client_session.h"
#include "transport/io/socket.h"

namespace h2rpc::internal {

// One backend address as a load-balancing policy sees it: a connection of
// its own with its own state and backoff (Subchannel in production, fakes in
// tests). Loop thread only.
//
// States: IDLE (no connection; RequestConnection() starts one), CONNECTING,
// READY (StartCall() works), TRANSIENT_FAILURE (the last attempt failed,
// last_error() says why; the subchannel tries again by itself once its
// backoff has passed). A READY subchannel whose connection ends goes IDLE.
// Every change is reported to LbPolicy::OnSubchannelStateChange, never from
// inside a call the policy makes into the subchannel.
class LbSubchannel {
 public:
  LbSubchannel(const LbSubchannel&) = delete;
  LbSubchannel& operator=(const LbSubchannel&) = delete;

  virtual const transport::io::SocketAddress& address() const = 0;
  virtual ConnectivityState state() const = 0;
  // UNAVAILABLE: why the last attempt failed; OK before any failure.
  virtual const Status& last_error() const = 0;
  // IDLE: starts connecting (the change is reported later). Otherwise a
  // no-op.
  virtual void RequestConnection() = 0;
  // READY only: puts a call's stream on the connection.
  virtual void StartCall(transport::http2::ClientStream* stream) = 0;

 protected:
  LbSubchannel() = default;
  virtual ~LbSubchannel() = default;

 private:
  friend struct SubchannelOrphaner;
  // The policy is done with the subchannel: no more reports, no more calls
  // into it. Calls already on its connection finish (the connection drains
  // gracefully); the owner frees it afterwards. May be called from inside
  // the subchannel's own report.
  virtual void Orphan() = 0;
};

struct SubchannelOrphaner {
  void operator()(LbSubchannel* subchannel) const { subchannel->Orphan(); }
};
// A policy's hold on a subchannel; dropping it orphans the subchannel.
using SubchannelPtr = std::unique_ptr<LbSubchannel, SubchannelOrphaner>;

// True if `a` and `b` are the same socket address.
bool SameAddress(const transport::io::SocketAddress& a,
                 const transport::io::SocketAddress& b);

// A load-balancing policy (gRPC's load-balancing.md): given the resolved
// addresses, keeps subchannels to them, reports the channel's aggregate
// connectivity state, and picks a READY subchannel for each call. Loop
// thread only; Pick() never allocates.
class LbPolicy {
 public:
  // What a policy needs from its channel.
  class Helper {
   public:
    // A new subchannel to `address`, IDLE.
    virtual SubchannelPtr CreateSubchannel(
        const transport::io::SocketAddress& address) = 0;
    // The policy's state, or the set of subchannels Pick() chooses from,
    // changed (calls waiting for a connection may now be picked). `error`:
    // UNAVAILABLE, why, in TRANSIENT_FAILURE; OK otherwise.
    virtual void UpdateState(ConnectivityState state, const Status& error) = 0;
    // The addresses may be stale (a connection failed or ended): resolve
    // the target again.
    virtual void RequestReresolution() = 0;

   protected:
    ~Helper() = default;
  };

  virtual ~LbPolicy() = default;

  // The resolver's addresses (at least one), the first time or changed.
  virtual void UpdateAddresses(
      const std::vector<transport::io::SocketAddress>& addresses) = 0;
  // A call needs a connection (or the channel was asked to connect): an
  // IDLE policy starts connecting. A policy starts IDLE.
  virtual void ExitIdle() = 0;
  // The subchannel for a call: READY, or null when none is (the call
  // waits for UpdateState, or fails in TRANSIENT_FAILURE).
  virtual LbSubchannel* Pick() = 0;
  // A subchannel of this policy changed state. The policy may orphan it
  // from here.
  virtual void OnSubchannelStateChange(LbSubchannel* subchannel) = 0;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_LB_LB_POLICY_H_
