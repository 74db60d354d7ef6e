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
// "--h2rpc_out: <file>: ...". One optional parameter,
// `services_namespace=NAME` (`--h2rpc_out=services_namespace=NAME:DIR`), puts
// the service classes in `<package namespace>::NAME`, so that one binary can
// link them and gRPC C++'s classes of the same service.
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
