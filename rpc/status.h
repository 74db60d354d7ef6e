#ifndef H2RPC_RPC_STATUS_H_
#define H2RPC_RPC_STATUS_H_

// h2rpc::Status and h2rpc::StatusCode: the outcome of an RPC. Defined in
// base/, the vocabulary the rpc layer and the transport share, and
// re-exported here as public API.
#include "base/status.h"       // IWYU pragma: export
#include "base/status_code.h"  // IWYU pragma: export

#endif  // H2RPC_RPC_STATUS_H_
