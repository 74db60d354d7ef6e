#ifndef H2RPC_RPC_STATUS_H_
#define H2RPC_RPC_STATUS_H_

// h2rpc::Status and h2rpc::StatusCode: the outcome of an RPC. Defined by the
// transport (transport/status.h) and re-exported here as public API.
#include "transport/core/status.h"       // IWYU pragma: export
#include "transport/core/status_code.h"  // IWYU pragma: export

#endif  // H2RPC_RPC_STATUS_H_
