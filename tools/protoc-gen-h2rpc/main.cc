// protoc-gen-h2rpc: the protoc plugin generating h2rpc stubs and service base
// classes. protoc runs it:
//   protoc --plugin=protoc-gen-h2rpc=path/to/protoc-gen-h2rpc
//       --cpp_out=OUT --h2rpc_out=OUT foo.proto
// (h2rpc_proto_library in tools/build_defs.bzl does, with h2rpc = True).
#include "google/protobuf/compiler/plugin.h"
#include "tools/protoc-gen-h2rpc/generator.h"

int main(int argc, char* argv[]) {
  h2rpc::codegen::H2rpcGenerator generator;
  return google::protobuf::compiler::PluginMain(argc, argv, &generator);
}
