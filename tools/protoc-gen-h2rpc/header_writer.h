#ifndef H2RPC_TOOLS_PROTOC_GEN_H2RPC_HEADER_WRITER_H_
#define H2RPC_TOOLS_PROTOC_GEN_H2RPC_HEADER_WRITER_H_

#include <string>

#include "tools/protoc-gen-h2rpc/model.h"

namespace h2rpc::codegen {

// The text of `file.header`: per service, a class holding the method paths
// and, defined after it, its Stub, Service and CallbackService classes. The
// class also declares CoroStub and CoroService, which `file.coro_header`
// defines (coro_header_writer.h).
std::string WriteHeader(const FileModel& file);

}  // namespace h2rpc::codegen

#endif  // H2RPC_TOOLS_PROTOC_GEN_H2RPC_HEADER_WRITER_H_
