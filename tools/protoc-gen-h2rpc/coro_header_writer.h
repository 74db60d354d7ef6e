#ifndef H2RPC_TOOLS_PROTOC_GEN_H2RPC_CORO_HEADER_WRITER_H_
#define H2RPC_TOOLS_PROTOC_GEN_H2RPC_CORO_HEADER_WRITER_H_

#include <string>

#include "tools/protoc-gen-h2rpc/model.h"

namespace h2rpc::codegen {

// The text of `file.coro_header` (C++20, header-only, on //rpc/coro): per
// service, the CoroStub and CoroService classes that `file.header` declares,
// every member defined inline.
std::string WriteCoroHeader(const FileModel& file);

}  // namespace h2rpc::codegen

#endif  // H2RPC_TOOLS_PROTOC_GEN_H2RPC_CORO_HEADER_WRITER_H_
