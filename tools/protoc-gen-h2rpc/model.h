#ifndef H2RPC_TOOLS_PROTOC_GEN_H2RPC_MODEL_H_
#define H2RPC_TOOLS_PROTOC_GEN_H2RPC_MODEL_H_

// What protoc-gen-h2rpc generates for a .proto file, as names and types:
// built from the file's descriptors, with every C++ identifier decided and
// checked for clashes before any code is written.

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"

namespace h2rpc::codegen {

enum class MethodKind {
  kUnary,
  kClientStreaming,
  kServerStreaming,
  kBidiStreaming,
};

struct MethodModel {
  // The C++ name of the Stub, Service, CallbackService, CoroStub and
  // CoroService methods: the proto name, with a trailing '_' for a C++
  // keyword or a generated member name.
  std::string name;
  std::string async_name;     // "AsyncGetFeature": the Stub's callback form
  std::string path_constant;  // "kGetFeaturePath"
  std::string path;           // "/routeguide.RouteGuide/GetFeature"
  std::string request;        // "::routeguide::Point"
  std::string response;       // "::routeguide::Feature"
  MethodKind kind = MethodKind::kUnary;
  std::string comment;  // leading comment in the .proto, as protobuf gives it
};

struct ServiceModel {
  std::string full_name;  // "routeguide.RouteGuide"
  std::string name;       // C++ class name: "RouteGuide"
  std::string comment;
  std::vector<MethodModel> methods;

  bool has_kind(MethodKind kind) const;
};

struct FileModel {
  std::string proto_name;  // "docs/examples/route_guide.proto"
  std::string pb_header;   // "docs/examples/route_guide.pb.h"
  std::string header;      // "docs/examples/route_guide.h2rpc.pb.h"
  std::string source;      // "docs/examples/route_guide.h2rpc.pb.cc"
  // "docs/examples/route_guide.h2rpc_coro.pb.h" (with the plugin's
  // `coroutines` parameter)
  std::string coro_header;
  std::vector<std::string> namespaces;  // {"routeguide"}
  std::vector<ServiceModel> services;

  bool has_methods() const;
  bool has_streaming_methods() const;
};

// Names the members the generated classes have besides the methods; a method
// (or service) with one of these names gets a trailing '_'.
// The coroutine classes (CoroStub, CoroService) are declared whether or not
// their header is generated, so the names are reserved either way.
inline constexpr absl::string_view kReservedMethodNames[] = {
    "AddTo", "CallbackService", "CoroService", "CoroStub", "Service",
    "Stub",  "channel_",        "kServiceName"};
inline constexpr absl::string_view kReservedServiceNames[] = {
    "CallbackService", "CoroService", "CoroStub",
    "Service",         "Stub",        "kServiceName"};

// The generated source's helpers, in an unnamed namespace at global scope:
// a message or enum value of a file without a package may not be named so.
inline constexpr absl::string_view kSourceHelperNames[] = {
    "UnimplementedReactor", "UnimplementedStatus"};

// Fills `*model` for `file`. Returns false with `*error` (one sentence naming
// the service or package and the names involved; protoc adds the file name)
// when the generated code would not compile: a package component that is a
// C++ keyword, two methods (or a method and the Async or k...Path form of
// another) that would get the same C++ identifier, or a service whose class
// name is taken by a message, an enum (or enum value) or another service of
// the package, or (without a package) a name of kSourceHelperNames taken.
// A non-empty `services_namespace` is one more namespace, inside the
// package's, for the service classes; it must be an identifier that is not a
// C++ keyword, nor a name the package or its services take.
bool BuildFileModel(const google::protobuf::FileDescriptor* file,
                    const std::string& services_namespace, FileModel* model,
                    std::string* error);

}  // namespace h2rpc::codegen

#endif  // H2RPC_TOOLS_PROTOC_GEN_H2RPC_MODEL_H_
