#include "tools/protoc-gen-h2rpc/model.h"

#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "google/protobuf/compiler/cpp/names.h"
#include "tools/protoc-gen-h2rpc/names.h"

namespace h2rpc::codegen {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::FileDescriptor;
using google::protobuf::MethodDescriptor;
using google::protobuf::ServiceDescriptor;
using google::protobuf::SourceLocation;
namespace cpp = google::protobuf::compiler::cpp;

// What each C++ identifier in a scope stands for, in words, to name both
// sides of a clash.
using Owners = std::map<std::string, std::string>;

// Records that `what` takes `identifier`. Returns false with `*error` if
// something else took it already.
bool Claim(const std::string& identifier, std::string what,
           absl::string_view where, Owners* owners, std::string* error) {
  auto it = owners->find(identifier);
  if (it == owners->end()) {
    owners->emplace(identifier, std::move(what));
    return true;
  }
  *error = absl::StrCat(where, ": ", it->second, " and ", what,
                        " would both be the C++ identifier ", identifier,
                        "; rename one of them");
  return false;
}

bool IsIdentifier(absl::string_view name) {
  if (name.empty() || absl::ascii_isdigit(name[0])) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '_') return false;
  }
  return true;
}

void AddEnum(const EnumDescriptor* enum_type, Owners* names) {
  const bool nested = enum_type->containing_type() != nullptr;
  names->emplace(cpp::ClassName(enum_type),
                 absl::StrCat("enum ", enum_type->full_name(), " (",
                              enum_type->file()->name(), ")"));
  // A top-level enum's values are constants of the namespace; a nested
  // one's are too, prefixed with the enum's class name.
  for (int i = 0; i < enum_type->value_count(); ++i) {
    const std::string value = nested
                                  ? absl::StrCat(cpp::ClassName(enum_type), "_",
                                                 enum_type->value(i)->name())
                                  : cpp::EnumValueName(enum_type->value(i));
    names->emplace(value,
                   absl::StrCat("enum value ", enum_type->value(i)->full_name(),
                                " (", enum_type->file()->name(), ")"));
  }
}

void AddMessage(const Descriptor* message, Owners* names) {
  names->emplace(cpp::ClassName(message),
                 absl::StrCat("message ", message->full_name(), " (",
                              message->file()->name(), ")"));
  for (int i = 0; i < message->nested_type_count(); ++i) {
    AddMessage(message->nested_type(i), names);
  }
  for (int i = 0; i < message->enum_type_count(); ++i) {
    AddEnum(message->enum_type(i), names);
  }
}

// The classes and enum constants protobuf generates in the package's
// namespace, from `file` and the files it imports (transitively) that share
// its package.
void AddPackageNames(const FileDescriptor* file, const std::string& package,
                     std::set<const FileDescriptor*>* seen, Owners* names) {
  if (file->package() != package || !seen->insert(file).second) return;
  for (int i = 0; i < file->message_type_count(); ++i) {
    AddMessage(file->message_type(i), names);
  }
  for (int i = 0; i < file->enum_type_count(); ++i) {
    AddEnum(file->enum_type(i), names);
  }
  for (int i = 0; i < file->dependency_count(); ++i) {
    AddPackageNames(file->dependency(i), package, seen, names);
  }
}

template <class D>
std::string CommentOf(const D* descriptor) {
  SourceLocation location;
  if (!descriptor->GetSourceLocation(&location)) return "";
  return location.leading_comments;
}

MethodKind KindOf(const MethodDescriptor* method) {
  if (method->client_streaming()) {
    return method->server_streaming() ? MethodKind::kBidiStreaming
                                      : MethodKind::kClientStreaming;
  }
  return method->server_streaming() ? MethodKind::kServerStreaming
                                    : MethodKind::kUnary;
}

bool BuildService(const ServiceDescriptor* service, ServiceModel* model,
                  std::string* error) {
  model->full_name = service->full_name();
  model->name = EscapeIdentifier(service->name(), kReservedServiceNames);
  model->comment = CommentOf(service);
  const std::string where = absl::StrCat("service ", service->full_name());

  // Every identifier of the service's classes is unique among them all, so
  // that the generated code can use each unqualified from any of the classes.
  Owners owners;
  for (absl::string_view reserved : kReservedMethodNames) {
    owners.emplace(std::string(reserved),
                   absl::StrCat("the generated member ", reserved));
  }
  for (int i = 0; i < service->method_count(); ++i) {
    const MethodDescriptor* method = service->method(i);
    MethodModel m;
    m.name = EscapeIdentifier(method->name(), kReservedMethodNames);
    m.async_name = absl::StrCat("Async", method->name());
    m.path_constant = absl::StrCat("k", method->name(), "Path");
    m.path = absl::StrCat("/", service->full_name(), "/", method->name());
    m.request = cpp::QualifiedClassName(method->input_type());
    m.response = cpp::QualifiedClassName(method->output_type());
    m.kind = KindOf(method);
    m.comment = CommentOf(method);

    const std::string quoted = absl::StrCat("method \"", method->name(), "\"");
    if (!Claim(m.name,
               m.name == method->name()
                   ? quoted
                   : absl::StrCat(quoted, " (escaped to ", m.name, ")"),
               where, &owners, error) ||
        !Claim(m.async_name,
               absl::StrCat("the callback form of ", quoted, " (", m.async_name,
                            ")"),
               where, &owners, error) ||
        !Claim(m.path_constant,
               absl::StrCat("the path constant of ", quoted, " (",
                            m.path_constant, ")"),
               where, &owners, error)) {
      return false;
    }
    // The path constants are members of the service's own class, which no
    // member may be named after.
    if (m.path_constant == model->name) {
      *error = absl::StrCat(where, ": the path constant of ", quoted,
                            " would be named like the service's class, ",
                            model->name, "; rename one of them");
      return false;
    }
    model->methods.push_back(std::move(m));
  }
  return true;
}

}  // namespace

bool ServiceModel::has_kind(MethodKind kind) const {
  for (const MethodModel& method : methods) {
    if (method.kind == kind) return true;
  }
  return false;
}

bool FileModel::has_methods() const {
  for (const ServiceModel& service : services) {
    if (!service.methods.empty()) return true;
  }
  return false;
}

bool FileModel::has_streaming_methods() const {
  for (const ServiceModel& service : services) {
    for (const MethodModel& method : service.methods) {
      if (method.kind != MethodKind::kUnary) return true;
    }
  }
  return false;
}

bool BuildFileModel(const FileDescriptor* file,
                    const std::string& services_namespace, FileModel* model,
                    std::string* error) {
  absl::string_view base = file->name();
  if (!absl::ConsumeSuffix(&base, ".proto")) {
    absl::ConsumeSuffix(&base, ".protodevel");
  }
  model->proto_name = file->name();
  model->pb_header = absl::StrCat(base, ".pb.h");
  model->header = absl::StrCat(base, ".h2rpc.pb.h");
  model->source = absl::StrCat(base, ".h2rpc.pb.cc");
  model->coro_header = absl::StrCat(base, ".h2rpc_coro.pb.h");
  model->namespaces = PackageNamespaces(file->package());
  for (const std::string& name : model->namespaces) {
    if (IsCppKeyword(name)) {
      *error = absl::StrCat("package ", file->package(), ": \"", name,
                            "\" is a C++ keyword, so the package cannot be a "
                            "C++ namespace (protobuf's own C++ code for it "
                            "does not compile either); rename the package");
      return false;
    }
  }

  // Service classes live next to the package's messages and enums.
  const std::string where = file->package().empty()
                                ? std::string("no package")
                                : absl::StrCat("package ", file->package());
  Owners package_names;
  std::set<const FileDescriptor*> seen;
  AddPackageNames(file, file->package(), &seen, &package_names);
  if (file->package().empty()) {
    for (absl::string_view helper : kSourceHelperNames) {
      if (!Claim(std::string(helper),
                 absl::StrCat("a helper of the generated ", model->source),
                 where, &package_names, error)) {
        return false;
      }
    }
  }
  for (int i = 0; i < file->service_count(); ++i) {
    ServiceModel service;
    if (!BuildService(file->service(i), &service, error)) return false;
    if (!Claim(service.name,
               absl::StrCat("service ", service.full_name, " (", file->name(),
                            ")"),
               where, &package_names, error)) {
      return false;
    }
    model->services.push_back(std::move(service));
  }
  if (!services_namespace.empty()) {
    if (!IsIdentifier(services_namespace) || IsCppKeyword(services_namespace)) {
      *error = absl::StrCat("services_namespace=", services_namespace,
                            " is not a C++ identifier that can name a "
                            "namespace");
      return false;
    }
    if (!Claim(services_namespace,
               absl::StrCat("services_namespace=", services_namespace), where,
               &package_names, error)) {
      return false;
    }
    model->namespaces.push_back(services_namespace);
  }
  return true;
}

}  // namespace h2rpc::codegen
