#include "rpc/internal/common/protobuf_connect_codec.h"

#include <google/protobuf/any.pb.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/unknown_field_set.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/type_resolver.h>
#include <google/protobuf/util/type_resolver_util.h>

#include "absl/strings/str_cat.h"

namespace h2rpc::internal {
namespace {

namespace protobuf = ::google::protobuf;

constexpr char kTypeUrlPrefix[] = "type.googleapis.com";

// The method of a request path ("/package.Service/Method"), or null.
const protobuf::MethodDescriptor* FindMethod(absl::string_view path) {
  if (path.empty() || path.front() != '/') return nullptr;
  path.remove_prefix(1);
  const size_t slash = path.rfind('/');
  if (slash == absl::string_view::npos) return nullptr;
  std::string name(path);
  name[slash] = '.';
  return protobuf::DescriptorPool::generated_pool()->FindMethodByName(name);
}

Status UnknownMethod(absl::string_view method) {
  return Status(StatusCode::kUnimplemented,
                absl::StrCat("JSON for method ", method,
                             " needs its descriptors, which this program "
                             "does not have"));
}

std::string TypeUrl(const protobuf::Descriptor* type) {
  return absl::StrCat(kTypeUrlPrefix, "/", type->full_name());
}

}  // namespace

ProtobufConnectCodec::ProtobufConnectCodec()
    : resolver_(protobuf::util::NewTypeResolverForDescriptorPool(
          kTypeUrlPrefix, protobuf::DescriptorPool::generated_pool())) {}

ProtobufConnectCodec::~ProtobufConnectCodec() = default;

Status ProtobufConnectCodec::ToJson(const protobuf::Descriptor* type,
                                    const char* what, absl::string_view binary,
                                    std::string* json) const {
  const auto status = protobuf::util::BinaryToJsonString(
      resolver_.get(), TypeUrl(type), std::string(binary), json,
      protobuf::util::JsonPrintOptions());
  if (status.ok()) return Status();
  return Status(StatusCode::kInternal,
                absl::StrCat(what, " is not a ", type->full_name(), ": ",
                             std::string(status.message())));
}

Status ProtobufConnectCodec::FromJson(const protobuf::Descriptor* type,
                                      const char* what, StatusCode code,
                                      absl::string_view json,
                                      std::string* binary) const {
  protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto status = protobuf::util::JsonToBinaryString(
      resolver_.get(), TypeUrl(type),
      protobuf::StringPiece(json.data(), json.size()), binary, options);
  if (status.ok()) return Status();
  return Status(code, absl::StrCat(what, " is not a ", type->full_name(),
                                   " in JSON: ",
                                   std::string(status.message())));
}

Status ProtobufConnectCodec::RequestFromJson(absl::string_view method,
                                             absl::string_view json,
                                             std::string* binary) const {
  const protobuf::MethodDescriptor* descriptor = FindMethod(method);
  if (descriptor == nullptr) return UnknownMethod(method);
  return FromJson(descriptor->input_type(), "request",
                  StatusCode::kInvalidArgument, json, binary);
}

Status ProtobufConnectCodec::ResponseToJson(absl::string_view method,
                                            absl::string_view binary,
                                            std::string* json) const {
  const protobuf::MethodDescriptor* descriptor = FindMethod(method);
  if (descriptor == nullptr) return UnknownMethod(method);
  return ToJson(descriptor->output_type(), "response", binary, json);
}

Status ProtobufConnectCodec::RequestToJson(absl::string_view method,
                                           absl::string_view binary,
                                           std::string* json) const {
  const protobuf::MethodDescriptor* descriptor = FindMethod(method);
  if (descriptor == nullptr) return UnknownMethod(method);
  return ToJson(descriptor->input_type(), "request", binary, json);
}

Status ProtobufConnectCodec::ResponseFromJson(absl::string_view method,
                                              absl::string_view json,
                                              std::string* binary) const {
  const protobuf::MethodDescriptor* descriptor = FindMethod(method);
  if (descriptor == nullptr) return UnknownMethod(method);
  return FromJson(descriptor->output_type(), "response", StatusCode::kInternal,
                  json, binary);
}

bool ProtobufConnectCodec::HasNoSideEffects(absl::string_view method) const {
  const protobuf::MethodDescriptor* descriptor = FindMethod(method);
  return descriptor != nullptr && descriptor->options().idempotency_level() ==
                                      protobuf::MethodOptions::NO_SIDE_EFFECTS;
}

void ProtobufConnectCodec::ReadErrorDetails(
    absl::string_view status_details,
    std::vector<transport::ConnectErrorDetail>* out) const {
  // google.rpc.Status: 1 code, 2 message, 3 repeated Any details.
  constexpr int kDetailsField = 3;
  protobuf::UnknownFieldSet fields;
  if (!fields.ParseFromArray(status_details.data(),
                             static_cast<int>(status_details.size()))) {
    return;
  }
  for (int i = 0; i < fields.field_count(); ++i) {
    const protobuf::UnknownField& field = fields.field(i);
    protobuf::Any any;
    if (field.number() != kDetailsField ||
        field.type() != protobuf::UnknownField::TYPE_LENGTH_DELIMITED ||
        !any.ParseFromString(field.length_delimited())) {
      continue;
    }
    // "type.googleapis.com/google.rpc.ErrorInfo": the name after the last
    // '/'.
    const size_t slash = any.type_url().rfind('/');
    out->push_back({slash == std::string::npos
                        ? any.type_url()
                        : any.type_url().substr(slash + 1),
                    any.value()});
  }
}

}  // namespace h2rpc::internal
