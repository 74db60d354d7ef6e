#include "tools/protoc-gen-h2rpc/generator.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream.h"
#include "tools/protoc-gen-h2rpc/coro_header_writer.h"
#include "tools/protoc-gen-h2rpc/header_writer.h"
#include "tools/protoc-gen-h2rpc/model.h"
#include "tools/protoc-gen-h2rpc/source_writer.h"

namespace h2rpc::codegen {
namespace {

// What the plugin's parameter asks for.
struct Options {
  std::string services_namespace;  // "" for none
  bool coroutines = false;
};

// Parses `parameter`: empty, or a comma-separated list of
// `services_namespace=NAME` and `coroutines`, each at most once, in any
// order. Returns false with `*error` (one sentence) for anything else.
bool ParseParameter(absl::string_view parameter, Options* options,
                    std::string* error) {
  if (parameter.empty()) return true;
  bool has_services_namespace = false;
  for (absl::string_view item : absl::StrSplit(parameter, ',')) {
    absl::string_view name = item;
    bool repeated = false;
    if (item == "coroutines") {
      repeated = options->coroutines;
      options->coroutines = true;
    } else if (absl::ConsumePrefix(&name, "services_namespace=")) {
      if (name.empty()) {
        // As BuildFileModel words it for a NAME that is not an identifier.
        *error =
            "services_namespace= is not a C++ identifier that can name a "
            "namespace";
        return false;
      }
      repeated = has_services_namespace;
      has_services_namespace = true;
      options->services_namespace = std::string(name);
    } else {
      *error = absl::StrCat(
          "protoc-gen-h2rpc takes a comma-separated list of the parameters "
          "services_namespace=NAME and coroutines; got \"",
          item, "\"",
          item == parameter ? "" : absl::StrCat(" in \"", parameter, "\""));
      return false;
    }
    if (repeated) {
      *error = absl::StrCat(
          "protoc-gen-h2rpc takes each parameter once; got ",
          item == "coroutines" ? "coroutines" : "services_namespace",
          " twice in \"", parameter, "\"");
      return false;
    }
  }
  return true;
}

void WriteFile(google::protobuf::compiler::GeneratorContext* context,
               const std::string& name, const std::string& text) {
  std::unique_ptr<google::protobuf::io::ZeroCopyOutputStream> stream(
      context->Open(name));
  google::protobuf::io::CodedOutputStream output(stream.get());
  output.WriteString(text);
}

}  // namespace

bool H2rpcGenerator::Generate(
    const google::protobuf::FileDescriptor* file, const std::string& parameter,
    google::protobuf::compiler::GeneratorContext* context,
    std::string* error) const {
  Options options;
  if (!ParseParameter(parameter, &options, error)) return false;
  FileModel model;
  if (!BuildFileModel(file, options.services_namespace, &model, error)) {
    return false;
  }
  WriteFile(context, model.header, WriteHeader(model));
  WriteFile(context, model.source, WriteSource(model));
  if (options.coroutines) {
    WriteFile(context, model.coro_header, WriteCoroHeader(model));
  }
  return true;
}

}  // namespace h2rpc::codegen
