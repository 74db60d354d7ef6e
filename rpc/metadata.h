#ifndef H2RPC_RPC_METADATA_H_
#define H2RPC_RPC_METADATA_H_

// h2rpc::Metadata: an ordered list of gRPC metadata (key, value) entries.
// Keys are lowercase [0-9a-z_.-]; values of keys ending in "-bin" are
// binary. See base/metadata.h for the full contract.
#include "base/metadata.h"  // IWYU pragma: export

#endif  // H2RPC_RPC_METADATA_H_
