#include "tools/protoc-gen-h2rpc/coro_header_writer.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "tools/protoc-gen-h2rpc/layout.h"
#include "tools/protoc-gen-h2rpc/names.h"
#include "tools/protoc-gen-h2rpc/signatures.h"

namespace h2rpc::codegen {
namespace {

// A call statement at `indent`.
std::string Statement(int indent, std::string head,
                      std::vector<std::string> args) {
  return LayOutCall(indent, {"", std::move(head), std::move(args), ";"});
}

// The parameter's name: what follows the last ' ', '*' or '&'.
std::string ParameterName(absl::string_view parameter) {
  return std::string(parameter.substr(parameter.find_last_of(" *&") + 1));
}

// `layout` as an inline member definition's head at indent 2.
std::string InlineHead(CallLayout layout) {
  layout.tail = " {";
  return LayOutCall(2, layout);
}

// The stub's method `m`: one call into rpc/coro/client.h.
std::string CoroStubBody(const MethodModel& m) {
  const std::string& path = m.path_constant;
  switch (m.kind) {
    case MethodKind::kUnary:
      return Statement(4, "return ::h2rpc::coro::UnaryCall",
                       {"*channel_", "context", path, "request", "response"});
    case MethodKind::kServerStreaming:
      return Statement(4, "call->Start", {"*channel_", path, "request"});
    case MethodKind::kClientStreaming:
    case MethodKind::kBidiStreaming:
      return Statement(4, "call->Start", {"*channel_", path});
  }
  return "";
}

void WriteCoroStub(const ServiceModel& service, std::string* out) {
  const std::string constructor =
      "  // Keeps `channel` alive for as long as the stub exists.\n"
      "  explicit CoroStub(std::shared_ptr<::h2rpc::Channel> channel)\n"
      "      : channel_(std::move(channel)) {}\n";
  if (service.methods.empty()) {
    absl::StrAppend(
        out,
        WrapComment(0, absl::StrCat("Calls ", service.name,
                                    " from C++20 coroutines over an "
                                    "h2rpc::Channel (it has no methods yet). "
                                    "Thread-safe.")),
        "class ", service.name, "::CoroStub {\n public:\n", constructor,
        "\n"
        " private:\n"
        "  // Unused until the service has methods.\n"
        "  [[maybe_unused]] const std::shared_ptr<::h2rpc::Channel> channel_;\n"
        "};\n");
    return;
  }
  const bool streaming = service.has_kind(MethodKind::kServerStreaming) ||
                         service.has_kind(MethodKind::kClientStreaming) ||
                         service.has_kind(MethodKind::kBidiStreaming);
  absl::StrAppend(out, WrapComment(0, absl::StrCat("Calls ", service.name,
                                                   "'s methods from C++20 "
                                                   "coroutines over an "
                                                   "h2rpc::Channel. For a "
                                                   "method Foo:")));
  std::vector<std::string> items;
  if (service.has_kind(MethodKind::kUnary)) {
    items.push_back(
        "- unary: `co_await Foo(context, request, response)` makes the call "
        "and gives its Status; await it in the expression that calls Foo "
        "(`request` is serialized there), and keep `context` and `response` "
        "alive until it completes");
  }
  if (service.has_kind(MethodKind::kServerStreaming)) {
    items.push_back(
        "- server streaming: Foo(call, request) starts `call`, a "
        "coro::ServerStreamingCall: await its Read() until false, then its "
        "Finish()");
  }
  if (service.has_kind(MethodKind::kClientStreaming)) {
    items.push_back(
        "- client streaming: Foo(call) starts `call`, a "
        "coro::ClientStreamingCall: await its Write(), then its Finish(); the "
        "response is then in call->response()");
  }
  if (service.has_kind(MethodKind::kBidiStreaming)) {
    items.push_back(
        "- bidi streaming: Foo(call) starts `call`, a coro::BidiStreamingCall: "
        "await its Write(), Read(), WritesDone() and Finish()");
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
        "A call object owns its ClientContext (set it up through "
        "call->context() before Foo) and must outlive what is awaited on it. ";
  }
  absl::StrAppend(&rules,
                  "A coroutine awaiting a call resumes on the channel's loop "
                  "thread, so from there on it must not block (see "
                  "rpc/coro/client.h). Thread-safe.");
  absl::StrAppend(out, WrapComment(0, rules), "class ", service.name,
                  "::CoroStub {\n public:\n", constructor);
  for (const MethodModel& method : service.methods) {
    absl::StrAppend(out, "\n", CommentLines(method.comment, 2),
                    InlineHead(CoroStubMethod(method)), CoroStubBody(method),
                    "  }\n");
  }
  absl::StrAppend(out,
                  "\n"
                  " private:\n"
                  "  const std::shared_ptr<::h2rpc::Channel> channel_;\n"
                  "};\n");
}

// The coro::Register* function of `kind`.
absl::string_view RegisterFunction(MethodKind kind) {
  switch (kind) {
    case MethodKind::kUnary:
      return "RegisterUnary";
    case MethodKind::kClientStreaming:
      return "RegisterClientStreaming";
    case MethodKind::kServerStreaming:
      return "RegisterServerStreaming";
    case MethodKind::kBidiStreaming:
      return "RegisterBidiStreaming";
  }
  return "";
}

// One statement of AddTo: registers a lambda that forwards to the method
// (through `this->`, which no parameter name can hide).
void WriteRegistration(const MethodModel& m, std::string* out) {
  const std::vector<std::string> params = CoroHandler(m).args;
  std::vector<std::string> args;
  for (const std::string& param : params) args.push_back(ParameterName(param));
  std::vector<std::string> head =
      WrapPiece(absl::StrCat("::h2rpc::coro::", RegisterFunction(m.kind), "<",
                             m.request, ", ", m.response, ">("),
                4);
  absl::StrAppend(out, "    ", head[0], "\n");
  for (size_t i = 1; i < head.size(); ++i) absl::StrAppend(out, head[i], "\n");
  // The lambda on a line of its own after the other two arguments; with its
  // parameters aligned after '(', its body on the line of the last one when
  // it fits there (as clang-format lays them out).
  const CallLayout introducer = {"", "[this]", params, " {"};
  const std::string call = absl::StrCat("return this->", m.name, "(",
                                        absl::StrJoin(args, ", "), ");");
  std::string lambda;
  bool merged = false;
  if (LayOutCallAligned(8, introducer, &lambda)) {
    const size_t last_line = lambda.rfind('\n', lambda.size() - 2) + 1;
    // The last line without its '\n', then " " + call + " });".
    if (lambda.size() - 1 - last_line + call.size() + 5 <= kColumnLimit) {
      lambda.pop_back();
      absl::StrAppend(&lambda, " ", call, " });\n");
      merged = true;
    }
  } else {
    lambda = LayOutCall(8, introducer);
  }
  if (!merged) {
    absl::StrAppend(&lambda,
                    Statement(10, absl::StrCat("return this->", m.name), args),
                    "        });\n");
  }
  absl::StrAppend(out, "        builder, ", m.path_constant, ",\n", lambda);
}

void WriteCoroService(const ServiceModel& service, std::string* out) {
  absl::StrAppend(
      out,
      WrapComment(
          0, absl::StrCat(
                 "The C++20 coroutine server side of ", service.name,
                 ": each method is a coroutine that starts on the event loop "
                 "thread of the call's connection when the call arrives, and "
                 "resumes on the thread that completed what it awaited; it "
                 "must not block (blocking work moves to other threads with "
                 "coro::ResumeOn). The Status it co_returns ends the call; a "
                 "cancelled call's reads and writes complete with false (see "
                 "rpc/coro/server.h). Methods not overridden answer "
                 "UNIMPLEMENTED. AddTo() registers them all with a "
                 "Server::Builder; the service must outlive the server.")),
      "class ", service.name,
      "::CoroService {\n"
      " public:\n"
      "  CoroService() = default;\n"
      "  CoroService(const CoroService&) = delete;\n"
      "  CoroService& operator=(const CoroService&) = delete;\n"
      "  virtual ~CoroService() = default;\n\n",
      WrapComment(2,
                  "Registers every method of the service with `builder`, and "
                  "returns it."),
      InlineHead({"::h2rpc::Server::Builder&",
                  "AddTo",
                  {"::h2rpc::Server::Builder& builder"},
                  ""}));
  for (const MethodModel& method : service.methods) {
    WriteRegistration(method, out);
  }
  absl::StrAppend(out, "    return builder;\n  }\n");
  for (const MethodModel& method : service.methods) {
    CallLayout handler = WithUnusedParameters(CoroHandler(method));
    handler.return_type = absl::StrCat("virtual ", handler.return_type);
    absl::StrAppend(
        out, "\n", CommentLines(method.comment, 2), InlineHead(handler),
        Statement(4, "co_return ::h2rpc::Status",
                  {"::h2rpc::StatusCode::kUnimplemented",
                   absl::StrCat("std::string(", method.path_constant,
                                ") + \" is not implemented\"")}),
        "  }\n");
  }
  absl::StrAppend(out, "};\n");
}

}  // namespace

std::string WriteCoroHeader(const FileModel& file) {
  const std::string guard = IncludeGuard(file.coro_header);
  std::string out = absl::StrCat(
      WrapComment(0, absl::StrCat("Generated by protoc-gen-h2rpc from ",
                                  file.proto_name, ". DO NOT EDIT.")),
      "//\n",
      WrapComment(0, absl::StrCat("h2rpc's C++20 coroutine stubs and service "
                                  "base classes, on //rpc/coro (see "
                                  "docs/codegen.md); the other classes are in ",
                                  file.header, ".")),
      "#ifndef ", guard, "\n#define ", guard, "\n\n");
  if (file.services.empty()) {
    absl::StrAppend(
        &out, "#include \"", file.header, "\"\n\n",
        WrapComment(0, absl::StrCat(file.proto_name, " defines no services.")),
        "\n#endif  // ", guard, "\n");
    return out;
  }
  std::vector<std::string> includes = {
      file.header,         "rpc/channel.h",        "rpc/client_context.h",
      "rpc/coro/client.h", "rpc/coro/server.h",    "rpc/coro/task.h",
      "rpc/server.h",      "rpc/server_context.h", "rpc/status.h"};
  std::sort(includes.begin(), includes.end());
  absl::StrAppend(
      &out, "#include <memory>\n#include <string>\n#include <utility>\n\n");
  for (const std::string& include : includes) {
    absl::StrAppend(&out, "#include \"", include, "\"\n");
  }
  absl::StrAppend(&out, "\n");
  const std::string ns = JoinNamespaces(file.namespaces);
  if (!ns.empty()) absl::StrAppend(&out, "namespace ", ns, " {\n\n");
  for (const ServiceModel& service : file.services) {
    WriteCoroStub(service, &out);
    absl::StrAppend(&out, "\n");
    WriteCoroService(service, &out);
    absl::StrAppend(&out, "\n");
  }
  if (!ns.empty()) absl::StrAppend(&out, "}  // namespace ", ns, "\n\n");
  absl::StrAppend(&out, "#endif  // ", guard, "\n");
  return out;
}

}  // namespace h2rpc::codegen
