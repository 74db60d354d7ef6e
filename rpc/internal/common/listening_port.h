#ifndef H2RPC_RPC_INTERNAL_COMMON_LISTENING_PORT_H_
#define H2RPC_RPC_INTERNAL_COMMON_LISTENING_PORT_H_

#include <memory>
#include <string>

#include "rpc/credentials.h"

namespace h2rpc::internal {

// A port given to Server::Builder::AddListeningPort.
struct ListeningPort {
  std::string address;
  int* selected_port = nullptr;
  std::shared_ptr<ServerCredentials> credentials;  // never null
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_COMMON_LISTENING_PORT_H_
