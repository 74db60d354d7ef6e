#ifndef H2RPC_RPC_PEER_IDENTITY_H_
#define H2RPC_RPC_PEER_IDENTITY_H_

// h2rpc::PeerIdentity: what TLS established about a connection's peer (its
// verified certificate's subject and subject alternative names). See
// base/peer_identity.h for the fields.
#include "base/peer_identity.h"  // IWYU pragma: export

#endif  // H2RPC_RPC_PEER_IDENTITY_H_
