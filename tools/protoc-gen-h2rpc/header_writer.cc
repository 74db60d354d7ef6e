#include "tools/protoc-gen-h2rpc/header_writer.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "tools/protoc-gen-h2rpc/layout.h"
#include "tools/protoc-gen-h2rpc/names.h"
#include "tools/protoc-gen-h2rpc/signatures.h"

namespace h2rpc::codegen {
namespace {

// The class holding the service's name and method paths, and declaring the
// other three, and the two coroutine classes of `coro_header` (C++20, written
// only with the plugin's `coroutines` parameter; declared either way, which
// C++17 allows).
void WriteServiceClass(const ServiceModel& service,
                       absl::string_view coro_header, std::string* out) {
  const std::string& name = service.name;
  std::string comment = CommentLines(service.comment, 0);
  if (!comment.empty()) absl::StrAppend(&comment, "//\n");
  absl::StrAppend(
      out, comment,
      WrapComment(0, absl::StrCat("Generated for service ", service.full_name,
                                  ": ", name, "::Stub calls it; ", name,
                                  "::Service (synchronous handlers) or ", name,
                                  "::CallbackService (callback handlers and "
                                  "reactors) implements it.")),
      "class ", name,
      " final {\n"
      " public:\n"
      "  class Stub;\n"
      "  class Service;\n"
      "  class CallbackService;\n",
      WrapComment(
          2, absl::StrCat("C++20 coroutine forms, defined in ", coro_header,
                          " when the plugin runs with `coroutines`.")),
      "  class CoroStub;\n"
      "  class CoroService;\n"
      "\n",
      WrapComment(2,
                  "The service's name, and each method's path "
                  "(\"/package.Service/Method\")."),
      LayOutAssignment(2, "static constexpr char kServiceName[]",
                       absl::StrCat("\"", service.full_name, "\"")));
  for (const MethodModel& method : service.methods) {
    absl::StrAppend(out,
                    LayOutAssignment(2,
                                     absl::StrCat("static constexpr char ",
                                                  method.path_constant, "[]"),
                                     absl::StrCat("\"", method.path, "\"")));
  }
  absl::StrAppend(out, "\n  ", name, "() = delete;\n};\n");
}

void WriteStub(const ServiceModel& service, std::string* out) {
  const bool streaming = service.has_kind(MethodKind::kServerStreaming) ||
                         service.has_kind(MethodKind::kClientStreaming) ||
                         service.has_kind(MethodKind::kBidiStreaming);
  if (service.methods.empty()) {
    absl::StrAppend(
        out,
        WrapComment(0, absl::StrCat("Calls ", service.name,
                                    " over an h2rpc::Channel (it has no "
                                    "methods yet). Thread-safe.")),
        "class ", service.name,
        "::Stub {\n"
        " public:\n"
        "  // Keeps `channel` alive for as long as the stub exists.\n"
        "  explicit Stub(std::shared_ptr<::h2rpc::Channel> channel)\n"
        "      : channel_(std::move(channel)) {}\n"
        "\n"
        " private:\n"
        "  // Unused until the service has methods.\n"
        "  [[maybe_unused]] const std::shared_ptr<::h2rpc::Channel> channel_;\n"
        "};\n");
    return;
  }
  absl::StrAppend(out, WrapComment(0, absl::StrCat("Calls ", service.name,
                                                   "'s methods over an "
                                                   "h2rpc::Channel. For a "
                                                   "method Foo:")));
  std::vector<std::string> items;
  if (service.has_kind(MethodKind::kUnary)) {
    items.push_back(
        "- unary: Foo(context, request, response) blocks until the call is "
        "over; AsyncFoo(context, request, response, done) returns at once, and "
        "`done` runs on the channel's loop thread (it must not block) when the "
        "call is over");
  }
  if (service.has_kind(MethodKind::kServerStreaming)) {
    items.push_back(
        "- server streaming: Foo(context, request) starts the call and "
        "returns a ClientReader; AsyncFoo(context, request, reactor) binds a "
        "ClientReadReactor");
  }
  if (service.has_kind(MethodKind::kClientStreaming)) {
    items.push_back(
        "- client streaming: Foo(context, response) starts the call and "
        "returns a ClientWriter; AsyncFoo(context, response, reactor) binds a "
        "ClientWriteReactor");
  }
  if (service.has_kind(MethodKind::kBidiStreaming)) {
    items.push_back(
        "- bidi streaming: Foo(context) starts the call and returns a "
        "ClientReaderWriter; AsyncFoo(context, reactor) binds a "
        "ClientBidiReactor");
  }
  for (size_t i = 0; i < items.size(); ++i) {
    absl::StrAppend(
        out,
        WrapComment(0, absl::StrCat(items[i], i + 1 < items.size() ? ";" : "."),
                    2));
  }
  std::string rules;
  if (streaming) {
    rules =
        "A bound reactor's call starts with reactor->StartCall(), and its "
        "events run on the channel's loop thread. ";
  }
  absl::StrAppend(&rules,
                  "`context`, `response` and reactors must outlive the call. "
                  "Thread-safe.");
  absl::StrAppend(out, WrapComment(0, rules), "class ", service.name,
                  "::Stub {\n"
                  " public:\n"
                  "  // Keeps `channel` alive for as long as the stub exists.\n"
                  "  explicit Stub(std::shared_ptr<::h2rpc::Channel> channel)\n"
                  "      : channel_(std::move(channel)) {}\n");
  for (const MethodModel& method : service.methods) {
    CallLayout blocking = StubBlockingMethod(method);
    blocking.tail = ";";
    CallLayout async = StubAsyncMethod(method);
    async.tail = ";";
    absl::StrAppend(out, "\n", CommentLines(method.comment, 2),
                    LayOutCall(2, blocking), LayOutCall(2, async));
  }
  absl::StrAppend(out,
                  "\n"
                  " private:\n"
                  "  const std::shared_ptr<::h2rpc::Channel> channel_;\n"
                  "};\n");
}

// A server-side base class: `summary`, the special members, AddTo() and a
// virtual method per method of the service.
void WriteServiceBase(const ServiceModel& service, absl::string_view class_name,
                      absl::string_view summary,
                      CallLayout (*handler)(const MethodModel&),
                      std::string* out) {
  absl::StrAppend(
      out,
      WrapComment(0, absl::StrCat(summary,
                                  " Methods not overridden answer "
                                  "UNIMPLEMENTED. AddTo() registers them all "
                                  "with a Server::Builder; the service must "
                                  "outlive the server.")),
      "class ", service.name, "::", class_name, " {\n public:\n  ", class_name,
      "() = default;\n  ", class_name, "(const ", class_name,
      "&) = delete;\n  ", class_name, "& operator=(const ", class_name,
      "&) = delete;\n  virtual ~", class_name, "() = default;\n\n",
      WrapComment(2,
                  "Registers every method of the service with `builder`, and "
                  "returns it."),
      LayOutCall(2, {"::h2rpc::Server::Builder&",
                     "AddTo",
                     {"::h2rpc::Server::Builder& builder"},
                     ";"}));
  for (const MethodModel& method : service.methods) {
    CallLayout layout = handler(method);
    layout.return_type = absl::StrCat("virtual ", layout.return_type);
    layout.tail = ";";
    absl::StrAppend(out, "\n", CommentLines(method.comment, 2),
                    LayOutCall(2, layout));
  }
  absl::StrAppend(out, "};\n");
}

}  // namespace

std::string WriteHeader(const FileModel& file) {
  const std::string guard = IncludeGuard(file.header);
  std::string out = absl::StrCat(
      WrapComment(0, absl::StrCat("Generated by protoc-gen-h2rpc from ",
                                  file.proto_name, ". DO NOT EDIT.")),
      "//\n"
      "// h2rpc client stubs and service base classes (see "
      "docs/codegen.md).\n"
      "#ifndef ",
      guard, "\n#define ", guard, "\n\n");
  if (file.services.empty()) {
    absl::StrAppend(
        &out, "#include \"", file.pb_header, "\"\n\n",
        WrapComment(0, absl::StrCat(file.proto_name, " defines no services.")),
        "\n#endif  // ", guard, "\n");
    return out;
  }
  std::vector<std::string> includes = {"absl/functional/any_invocable.h",
                                       file.pb_header,
                                       "rpc/channel.h",
                                       "rpc/client_context.h",
                                       "rpc/client_stream.h",
                                       "rpc/server.h",
                                       "rpc/server_context.h",
                                       "rpc/server_stream.h",
                                       "rpc/status.h"};
  std::sort(includes.begin(), includes.end());
  absl::StrAppend(&out, "#include <memory>\n#include <utility>\n\n");
  for (const std::string& include : includes) {
    absl::StrAppend(&out, "#include \"", include, "\"\n");
  }
  absl::StrAppend(&out, "\n");
  const std::string ns = JoinNamespaces(file.namespaces);
  if (!ns.empty()) absl::StrAppend(&out, "namespace ", ns, " {\n\n");
  for (const ServiceModel& service : file.services) {
    WriteServiceClass(service, file.coro_header, &out);
    absl::StrAppend(&out, "\n");
    WriteStub(service, &out);
    absl::StrAppend(&out, "\n");
    WriteServiceBase(
        service, "Service",
        absl::StrCat("The synchronous server side of ", service.name,
                     ": each method runs on one of the server's "
                     "worker threads and may block (a streaming "
                     "one holds its thread for the whole "
                     "call)."),
        &SyncHandler, &out);
    absl::StrAppend(&out, "\n");
    WriteServiceBase(
        service, "CallbackService",
        absl::StrCat("The callback server side of ", service.name,
                     ": each method runs on the event loop of the call's "
                     "connection and must not block. A unary method fills "
                     "the response and calls done(status), then or later, "
                     "from any thread; a streaming method returns the call's "
                     "reactor, which typically deletes itself in OnDone."),
        &CallbackHandler, &out);
    absl::StrAppend(&out, "\n");
  }
  if (!ns.empty()) absl::StrAppend(&out, "}  // namespace ", ns, "\n\n");
  absl::StrAppend(&out, "#endif  // ", guard, "\n");
  return out;
}

}  // namespace h2rpc::codegen
