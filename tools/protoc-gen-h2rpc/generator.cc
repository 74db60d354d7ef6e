#include "tools/protoc-gen-h2rpc/generator.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream.h"
#include "tools/protoc-gen-h2rpc/header_writer.h"
#include "tools/protoc-gen-h2rpc/model.h"
#include "tools/protoc-gen-h2rpc/source_writer.h"

namespace h2rpc::codegen {
namespace {

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
  absl::string_view services_namespace = parameter;
  if (!parameter.empty() &&
      !absl::ConsumePrefix(&services_namespace, "services_namespace=")) {
    *error = absl::StrCat(
        "protoc-gen-h2rpc takes one parameter, services_namespace=NAME; "
        "got \"",
        parameter, "\"");
    return false;
  }
  FileModel model;
  if (!BuildFileModel(file, std::string(services_namespace), &model, error)) {
    return false;
  }
  WriteFile(context, model.header, WriteHeader(model));
  WriteFile(context, model.source, WriteSource(model));
  return true;
}

}  // namespace h2rpc::codegen
