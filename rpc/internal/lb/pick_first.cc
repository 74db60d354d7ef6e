#include "rpc/internal/lb/pick_first.h"

#include <algorithm>
#include <random>
#include <utility>

namespace h2rpc::internal {

void PickFirst::UpdateAddresses(const std::vector<ResolvedAddress>& addresses) {
  addresses_ = addresses;
  if (shuffle_) {
    std::shuffle(addresses_.begin(), addresses_.end(),
                 std::mt19937(std::random_device()()));
  }
  if (selected_ != nullptr) {
    const bool kept = std::any_of(
        addresses_.begin(), addresses_.end(), [this](const ResolvedAddress& a) {
          return a.address == selected_->address().address;
        });
    if (kept) return;
    selected_ = nullptr;
    subchannels_.clear();
  }
  if (idle_) return;
  StartPass();
}

void PickFirst::ExitIdle() {
  if (!idle_) return;
  idle_ = false;
  if (!addresses_.empty()) StartPass();
}

void PickFirst::StartPass() {
  selected_ = nullptr;
  subchannels_.clear();
  for (const ResolvedAddress& address : addresses_) {
    subchannels_.push_back(helper_->CreateSubchannel(address));
  }
  attempting_ = 0;
  first_pass_done_ = false;
  last_error_ = Status();
  helper_->UpdateState(ConnectivityState::kConnecting, Status());
  subchannels_.front()->RequestConnection();
}

void PickFirst::OnSubchannelStateChange(LbSubchannel* subchannel) {
  if (selected_ != nullptr) {
    if (subchannel != selected_ ||
        subchannel->state() == ConnectivityState::kReady) {
      return;
    }
    // The chosen connection ended.
    selected_ = nullptr;
    subchannels_.clear();
    idle_ = true;
    helper_->RequestReresolution();
    helper_->UpdateState(ConnectivityState::kIdle, Status());
    return;
  }
  switch (subchannel->state()) {
    case ConnectivityState::kReady: {
      selected_ = subchannel;
      for (SubchannelPtr& s : subchannels_) {
        if (s.get() == subchannel) {
          SubchannelPtr kept = std::move(s);
          subchannels_.clear();
          subchannels_.push_back(std::move(kept));
          break;
        }
      }
      helper_->UpdateState(ConnectivityState::kReady, Status());
      return;
    }
    case ConnectivityState::kTransientFailure:
      last_error_ = subchannel->last_error();
      if (!first_pass_done_ && subchannel == subchannels_[attempting_].get()) {
        if (++attempting_ < subchannels_.size()) {
          subchannels_[attempting_]->RequestConnection();
        } else {
          first_pass_done_ = true;
          helper_->RequestReresolution();
        }
      }
      break;
    case ConnectivityState::kIdle:
      // Only a subchannel whose connection ended before it was chosen
      // (GOAWAY during the handshake): try it again once the pass is over.
      if (first_pass_done_) subchannel->RequestConnection();
      break;
    default:
      break;
  }
  ReportState();
}

void PickFirst::ReportState() {
  if (!first_pass_done_) {
    helper_->UpdateState(ConnectivityState::kConnecting, Status());
    return;
  }
  const bool connecting = std::any_of(
      subchannels_.begin(), subchannels_.end(), [](const SubchannelPtr& s) {
        return s->state() == ConnectivityState::kConnecting ||
               s->state() == ConnectivityState::kIdle;
      });
  if (connecting) {
    helper_->UpdateState(ConnectivityState::kConnecting, Status());
  } else {
    helper_->UpdateState(ConnectivityState::kTransientFailure, last_error_);
  }
}

}  // namespace h2rpc::internal
