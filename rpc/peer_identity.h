#ifndef H2RPC_RPC_PEER_IDENTITY_H_
#define H2RPC_RPC_PEER_IDENTITY_H_

// h2rpc::PeerIdentity: what TLS established about a connection's peer (its
// verified certificate's subject and subject alternative names). See
// transport/core/peer_identity.h for the fields.
#include "transport/core/peer_identity.h"  // IWYU pragma: export

namespace h2rpc {
using transport::PeerIdentity;
}  // namespace h2rpc

#endif  // H2RPC_RPC_PEER_IDENTITY_H_
