#include "tools/protoc-gen-h2rpc/source_writer.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tools/protoc-gen-h2rpc/layout.h"
#include "tools/protoc-gen-h2rpc/names.h"
#include "tools/protoc-gen-h2rpc/signatures.h"

namespace h2rpc::codegen {
namespace {

// Helpers for the default handlers, in an unnamed namespace at global scope
// (and used qualified, "::UnimplementedStatus"), so that no name of the
// package or of the service's classes can hide them.
constexpr absl::string_view kUnimplementedStatus =
    R"(// What a method the service does not override answers.
::h2rpc::Status UnimplementedStatus(const char* path) {
  return ::h2rpc::Status(::h2rpc::StatusCode::kUnimplemented,
                         std::string(path) + " is not implemented");
}
)";

constexpr absl::string_view kUnimplementedReactor = R"(
// What a CallbackService streaming method the service does not override
// returns: finishes the call with UnimplementedStatus() at once and deletes
// itself when the call is done.
template <class Reactor>
class UnimplementedReactor final : public Reactor {
 public:
  explicit UnimplementedReactor(const char* path) {
    this->Finish(UnimplementedStatus(path));
  }
  void OnDone() override { delete this; }
};
)";

size_t LineCount(absl::string_view text) {
  return std::count(text.begin(), text.end(), '\n');
}

// `layout` as the head of a member definition of `scope`.
std::string DefinitionHead(CallLayout layout, absl::string_view scope) {
  layout.head = absl::StrCat(scope, "::", layout.head);
  layout.tail = " {";
  return LayOutCall(0, layout);
}

// A call statement at indent 2.
std::string Statement(std::string head, std::vector<std::string> args) {
  return LayOutCall(2, {"", std::move(head), std::move(args), ";"});
}

void WriteStub(const ServiceModel& service, std::string* out) {
  const std::string scope = absl::StrCat(service.name, "::Stub");
  for (const MethodModel& m : service.methods) {
    const std::string& path = m.path_constant;
    const std::string types =
        absl::StrCat("<", m.request, ", ", m.response, ">");
    std::string blocking;
    std::string async;
    switch (m.kind) {
      case MethodKind::kUnary:
        blocking = Statement("return channel_->UnaryCall",
                             {"context", path, "request", "response"});
        async = Statement(
            "channel_->AsyncUnaryCall",
            {"context", path, "request", "response", "std::move(done)"});
        break;
      case MethodKind::kServerStreaming:
        blocking = Statement(
            absl::StrCat("return channel_->ServerStreamingCall", types),
            {"context", path, "request"});
        async = Statement("channel_->AsyncServerStreamingCall",
                          {"context", path, "request", "reactor"});
        break;
      case MethodKind::kClientStreaming:
        blocking = Statement(
            absl::StrCat("return channel_->ClientStreamingCall", types),
            {"context", path, "response"});
        async = Statement("channel_->AsyncClientStreamingCall",
                          {"context", path, "response", "reactor"});
        break;
      case MethodKind::kBidiStreaming:
        blocking =
            Statement(absl::StrCat("return channel_->BidiStreamingCall", types),
                      {"context", path});
        async = Statement("channel_->AsyncBidiStreamingCall",
                          {"context", path, "reactor"});
        break;
    }
    absl::StrAppend(out, "\n", DefinitionHead(StubBlockingMethod(m), scope),
                    blocking, "}\n\n",
                    DefinitionHead(StubAsyncMethod(m), scope), async, "}\n");
  }
}

// One Register* call of AddTo: the handler is a lambda forwarding to the
// method (through `this->`, which no parameter name can hide).
struct Registration {
  std::string builder_method;       // "RegisterUnary"
  std::vector<std::string> params;  // the lambda's parameters
  std::string call;                 // "return this->Foo" or "this->Foo"
  std::vector<std::string> args;    // the call's arguments
};

Registration SyncRegistration(const MethodModel& m) {
  const std::string context = "::h2rpc::ServerContext* context";
  const std::string call = absl::StrCat("return this->", m.name);
  switch (m.kind) {
    case MethodKind::kUnary:
      return {"RegisterUnary",
              {context, absl::StrCat("const ", m.request, "& request"),
               absl::StrCat(m.response, "* response")},
              call,
              {"context", "&request", "response"}};
    case MethodKind::kServerStreaming:
      return {"RegisterServerStreaming",
              {context, absl::StrCat("const ", m.request, "& request"),
               absl::StrCat("::h2rpc::ServerWriter<", m.response, ">* writer")},
              call,
              {"context", "&request", "writer"}};
    case MethodKind::kClientStreaming:
      return {"RegisterClientStreaming",
              {context,
               absl::StrCat("::h2rpc::ServerReader<", m.request, ">* reader"),
               absl::StrCat(m.response, "* response")},
              call,
              {"context", "reader", "response"}};
    case MethodKind::kBidiStreaming:
      return {"RegisterBidiStreaming",
              {context, absl::StrCat("::h2rpc::ServerReaderWriter<", m.response,
                                     ", ", m.request, ">* stream")},
              call,
              {"context", "stream"}};
  }
  return {};
}

Registration CallbackRegistration(const MethodModel& m) {
  const std::string context = "::h2rpc::ServerContext* context";
  const std::string call = absl::StrCat("return this->", m.name);
  switch (m.kind) {
    case MethodKind::kUnary:
      return {
          "RegisterCallbackUnary",
          {context, absl::StrCat("const ", m.request, "* request"),
           absl::StrCat(m.response, "* response"), "::h2rpc::UnaryDone done"},
          absl::StrCat("this->", m.name),
          {"context", "request", "response", "std::move(done)"}};
    case MethodKind::kServerStreaming:
      return {"RegisterCallbackServerStreaming",
              {context, absl::StrCat("const ", m.request, "* request")},
              call,
              {"context", "request"}};
    case MethodKind::kClientStreaming:
      return {"RegisterCallbackClientStreaming",
              {context, absl::StrCat(m.response, "* response")},
              call,
              {"context", "response"}};
    case MethodKind::kBidiStreaming:
      return {"RegisterCallbackBidiStreaming", {context}, call, {"context"}};
  }
  return {};
}

void WriteAddTo(const ServiceModel& service, absl::string_view class_name,
                Registration (*registration)(const MethodModel&),
                std::string* out) {
  absl::StrAppend(out, "\n",
                  DefinitionHead({"::h2rpc::Server::Builder&",
                                  "AddTo",
                                  {"::h2rpc::Server::Builder& builder"},
                                  ""},
                                 absl::StrCat(service.name, "::", class_name)));
  for (const MethodModel& m : service.methods) {
    const Registration r = registration(m);
    std::vector<std::string> head =
        WrapPiece(absl::StrCat("builder.", r.builder_method, "<", m.request,
                               ", ", m.response, ">("),
                  2);
    absl::StrAppend(out, "  ", head[0], "\n");
    for (size_t i = 1; i < head.size(); ++i) {
      absl::StrAppend(out, head[i], "\n");
    }
    // The lambda on the path's line if its parameters align there in fewer
    // lines than on a line of its own (as clang-format would).
    std::string lambda =
        absl::StrCat("      ", m.path_constant, ",\n",
                     LayOutCall(6, {"", "[this]", r.params, " {"}));
    std::string after_path;
    if (LayOutCallAligned(
            6, {"", absl::StrCat(m.path_constant, ", [this]"), r.params, " {"},
            &after_path) &&
        LineCount(after_path) < LineCount(lambda)) {
      lambda = std::move(after_path);
    }
    absl::StrAppend(out, lambda, LayOutCall(8, {"", r.call, r.args, ";"}),
                    "      });\n");
  }
  absl::StrAppend(out, "  return builder;\n}\n");
}

void WriteSyncDefaults(const ServiceModel& service, std::string* out) {
  const std::string scope = absl::StrCat(service.name, "::Service");
  for (const MethodModel& m : service.methods) {
    absl::StrAppend(
        out, "\n", DefinitionHead(WithUnusedParameters(SyncHandler(m)), scope),
        "  return ::UnimplementedStatus(", m.path_constant, ");\n}\n");
  }
}

void WriteCallbackDefaults(const ServiceModel& service, std::string* out) {
  const std::string scope = absl::StrCat(service.name, "::CallbackService");
  for (const MethodModel& m : service.methods) {
    if (m.kind == MethodKind::kUnary) {
      absl::StrAppend(
          out, "\n",
          DefinitionHead(WithUnusedParameters(CallbackHandler(m), "done"),
                         scope),
          "  done(::UnimplementedStatus(", m.path_constant, "));\n}\n");
      continue;
    }
    const CallLayout handler = CallbackHandler(m);
    // The reactor type is the handler's return type, without its '*'.
    const std::string reactor =
        handler.return_type.substr(0, handler.return_type.size() - 1);
    absl::StrAppend(out, "\n",
                    DefinitionHead(WithUnusedParameters(handler), scope),
                    LayOutAssignment(2, "using Reactor", reactor),
                    "  return new ::UnimplementedReactor<Reactor>(",
                    m.path_constant, ");\n", "}\n");
  }
}

}  // namespace

std::string WriteSource(const FileModel& file) {
  std::string out = absl::StrCat(
      WrapComment(0, absl::StrCat("Generated by protoc-gen-h2rpc from ",
                                  file.proto_name, ". DO NOT EDIT.")),
      "#include \"", file.header, "\"\n");
  if (file.services.empty()) return out;
  absl::StrAppend(&out,
                  "\n"
                  "#include <memory>\n"
                  "#include <string>\n"
                  "#include <utility>\n");
  if (file.has_methods()) {
    absl::StrAppend(&out, "\nnamespace {\n\n", kUnimplementedStatus);
    if (file.has_streaming_methods()) {
      absl::StrAppend(&out, kUnimplementedReactor);
    }
    absl::StrAppend(&out, "\n}  // namespace\n");
  }
  const std::string ns = JoinNamespaces(file.namespaces);
  if (!ns.empty()) absl::StrAppend(&out, "\nnamespace ", ns, " {\n");
  for (const ServiceModel& service : file.services) {
    WriteStub(service, &out);
    WriteAddTo(service, "Service", &SyncRegistration, &out);
    WriteSyncDefaults(service, &out);
    WriteAddTo(service, "CallbackService", &CallbackRegistration, &out);
    WriteCallbackDefaults(service, &out);
  }
  if (!ns.empty()) absl::StrAppend(&out, "\n}  // namespace ", ns, "\n");
  return out;
}

}  // namespace h2rpc::codegen
