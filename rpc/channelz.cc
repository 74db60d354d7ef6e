#include "rpc/channelz.h"

#include "rpc/internal/channelz/channelz_registry.h"

namespace h2rpc {

Channelz::Channelz()
    : registry_(std::make_unique<internal::ChannelzRegistry>()) {}

Channelz::~Channelz() = default;

}  // namespace h2rpc
