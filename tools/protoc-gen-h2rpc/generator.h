#ifndef H2RPC_TOOLS_PROTOC_GEN_H2RPC_GENERATOR_H_
#define H2RPC_TOOLS_PROTOC_GEN_H2RPC_GENERATOR_H_

#include <cstdint>
#include <string>

#include "google/protobuf/compiler/code_generator.h"
#include "google/protobuf/descriptor.h"

namespace h2rpc::codegen {

// protoc's view of protoc-gen-h2rpc: for each .proto file, writes
// `<file>.h2rpc.pb.h` and `<file>.h2rpc.pb.cc` (both even for a file without
// services, so build rules can always name them), or fails with one clear
// sentence (see BuildFileModel) that protoc prints as
// "--h2rpc_out: <file>: ...". The parameter is empty or a comma-separated
// list of these, each at most once, in any order
// (`--h2rpc_out=coroutines,services_namespace=NAME:DIR`, or `--h2rpc_opt=`
// once per item); anything else is refused:
// - `services_namespace=NAME` puts the service classes in
//   `<package namespace>::NAME`, so that one binary can link them and gRPC
//   C++'s classes of the same service;
// - `coroutines` also writes `<file>.h2rpc_coro.pb.h` (again even for a file
//   without services): the C++20 CoroStub and CoroService classes, on
//   //rpc/coro. The other two files are the same with it or without.
class H2rpcGenerator final : public google::protobuf::compiler::CodeGenerator {
 public:
  bool Generate(const google::protobuf::FileDescriptor* file,
                const std::string& parameter,
                google::protobuf::compiler::GeneratorContext* context,
                std::string* error) const override;

  uint64_t GetSupportedFeatures() const override {
    return FEATURE_PROTO3_OPTIONAL;
  }
};

}  // namespace h2rpc::codegen

#endif  // H2RPC_TOOLS_PROTOC_GEN_H2RPC_GENERATOR_H_
