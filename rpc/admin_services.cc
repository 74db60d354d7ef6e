#include "rpc/admin_services.h"

#include <utility>

namespace h2rpc {

AdminServices::AdminServices(std::shared_ptr<Channelz> channelz)
    : channelz_(channelz != nullptr ? std::move(channelz)
                                    : std::make_shared<Channelz>()),
      channelz_service_(channelz_) {}

Server::Builder& AdminServices::AddTo(Server::Builder& builder) {
  channelz_service_.AddTo(builder);
  health_.AddTo(builder);
  reflection_.AddTo(builder);
  return builder.SetChannelz(channelz_);
}

}  // namespace h2rpc
