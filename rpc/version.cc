#include "rpc/version.h"

namespace h2rpc {

const char* Version() { return kH2rpcVersion; }

}  // namespace h2rpc
