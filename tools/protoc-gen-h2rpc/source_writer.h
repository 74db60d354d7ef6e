#ifndef H2RPC_TOOLS_PROTOC_GEN_H2RPC_SOURCE_WRITER_H_
#define H2RPC_TOOLS_PROTOC_GEN_H2RPC_SOURCE_WRITER_H_

#include <string>

#include "tools/protoc-gen-h2rpc/model.h"

namespace h2rpc::codegen {

// The text of `file.source`: the Stub methods (calls into h2rpc::Channel),
// AddTo() (calls into h2rpc::Server::Builder) and the UNIMPLEMENTED default
// handlers.
std::string WriteSource(const FileModel& file);

}  // namespace h2rpc::codegen

#endif  // H2RPC_TOOLS_PROTOC_GEN_H2RPC_SOURCE_WRITER_H_
