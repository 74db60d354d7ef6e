#include "tools/protoc-gen-h2rpc/signatures.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace h2rpc::codegen {

CallLayout StubBlockingMethod(const MethodModel& m) {
  CallLayout call;
  call.head = m.name;
  call.args.push_back("::h2rpc::ClientContext* context");
  switch (m.kind) {
    case MethodKind::kUnary:
      call.return_type = "::h2rpc::Status";
      call.args.push_back(absl::StrCat("const ", m.request, "& request"));
      call.args.push_back(absl::StrCat(m.response, "* response"));
      break;
    case MethodKind::kServerStreaming:
      call.return_type = absl::StrCat("std::unique_ptr<::h2rpc::ClientReader<",
                                      m.response, ">>");
      call.args.push_back(absl::StrCat("const ", m.request, "& request"));
      break;
    case MethodKind::kClientStreaming:
      call.return_type = absl::StrCat("std::unique_ptr<::h2rpc::ClientWriter<",
                                      m.request, ">>");
      call.args.push_back(absl::StrCat(m.response, "* response"));
      break;
    case MethodKind::kBidiStreaming:
      call.return_type =
          absl::StrCat("std::unique_ptr<::h2rpc::ClientReaderWriter<",
                       m.request, ", ", m.response, ">>");
      break;
  }
  return call;
}

CallLayout StubAsyncMethod(const MethodModel& m) {
  CallLayout call;
  call.return_type = "void";
  call.head = m.async_name;
  call.args.push_back("::h2rpc::ClientContext* context");
  switch (m.kind) {
    case MethodKind::kUnary:
      call.args.push_back(absl::StrCat("const ", m.request, "& request"));
      call.args.push_back(absl::StrCat(m.response, "* response"));
      call.args.push_back(
          "::absl::AnyInvocable<void(const ::h2rpc::Status&)> done");
      break;
    case MethodKind::kServerStreaming:
      call.args.push_back(absl::StrCat("const ", m.request, "& request"));
      call.args.push_back(absl::StrCat("::h2rpc::ClientReadReactor<",
                                       m.response, ">* reactor"));
      break;
    case MethodKind::kClientStreaming:
      call.args.push_back(absl::StrCat(m.response, "* response"));
      call.args.push_back(absl::StrCat("::h2rpc::ClientWriteReactor<",
                                       m.request, ">* reactor"));
      break;
    case MethodKind::kBidiStreaming:
      call.args.push_back(absl::StrCat("::h2rpc::ClientBidiReactor<", m.request,
                                       ", ", m.response, ">* reactor"));
      break;
  }
  return call;
}

namespace {

// A handler of `return_type` whose stream objects are `streams`'s
// ServerReader, ServerWriter and ServerReaderWriter: the synchronous
// handler's ("::h2rpc::") and the coroutine one's ("::h2rpc::coro::").
CallLayout StreamHandler(const MethodModel& m, absl::string_view return_type,
                         absl::string_view streams) {
  CallLayout call;
  call.return_type = std::string(return_type);
  call.head = m.name;
  call.args.push_back("::h2rpc::ServerContext* context");
  switch (m.kind) {
    case MethodKind::kUnary:
      call.args.push_back(absl::StrCat("const ", m.request, "* request"));
      call.args.push_back(absl::StrCat(m.response, "* response"));
      break;
    case MethodKind::kServerStreaming:
      call.args.push_back(absl::StrCat("const ", m.request, "* request"));
      call.args.push_back(
          absl::StrCat(streams, "ServerWriter<", m.response, ">* writer"));
      break;
    case MethodKind::kClientStreaming:
      call.args.push_back(
          absl::StrCat(streams, "ServerReader<", m.request, ">* reader"));
      call.args.push_back(absl::StrCat(m.response, "* response"));
      break;
    case MethodKind::kBidiStreaming:
      call.args.push_back(absl::StrCat(streams, "ServerReaderWriter<",
                                       m.response, ", ", m.request,
                                       ">* stream"));
      break;
  }
  return call;
}

}  // namespace

CallLayout SyncHandler(const MethodModel& m) {
  return StreamHandler(m, "::h2rpc::Status", "::h2rpc::");
}

CallLayout CallbackHandler(const MethodModel& m) {
  CallLayout call;
  call.head = m.name;
  call.args.push_back("::h2rpc::ServerContext* context");
  switch (m.kind) {
    case MethodKind::kUnary:
      call.return_type = "void";
      call.args.push_back(absl::StrCat("const ", m.request, "* request"));
      call.args.push_back(absl::StrCat(m.response, "* response"));
      call.args.push_back("::h2rpc::UnaryDone done");
      break;
    case MethodKind::kServerStreaming:
      call.return_type =
          absl::StrCat("::h2rpc::ServerWriteReactor<", m.response, ">*");
      call.args.push_back(absl::StrCat("const ", m.request, "* request"));
      break;
    case MethodKind::kClientStreaming:
      call.return_type =
          absl::StrCat("::h2rpc::ServerReadReactor<", m.request, ">*");
      call.args.push_back(absl::StrCat(m.response, "* response"));
      break;
    case MethodKind::kBidiStreaming:
      call.return_type = absl::StrCat("::h2rpc::ServerBidiReactor<", m.request,
                                      ", ", m.response, ">*");
      break;
  }
  return call;
}

CallLayout CoroStubMethod(const MethodModel& m) {
  CallLayout call;
  call.return_type = "void";
  call.head = m.name;
  const std::string types = absl::StrCat("<", m.request, ", ", m.response, ">");
  switch (m.kind) {
    case MethodKind::kUnary:
      call.return_type = "::h2rpc::coro::UnaryCall";
      call.args.push_back("::h2rpc::ClientContext* context");
      call.args.push_back(absl::StrCat("const ", m.request, "& request"));
      call.args.push_back(absl::StrCat(m.response, "* response"));
      break;
    case MethodKind::kServerStreaming:
      call.args.push_back(
          absl::StrCat("::h2rpc::coro::ServerStreamingCall", types, "* call"));
      call.args.push_back(absl::StrCat("const ", m.request, "& request"));
      break;
    case MethodKind::kClientStreaming:
      call.args.push_back(
          absl::StrCat("::h2rpc::coro::ClientStreamingCall", types, "* call"));
      break;
    case MethodKind::kBidiStreaming:
      call.args.push_back(
          absl::StrCat("::h2rpc::coro::BidiStreamingCall", types, "* call"));
      break;
  }
  return call;
}

CallLayout CoroHandler(const MethodModel& m) {
  return StreamHandler(m, "::h2rpc::coro::Task<::h2rpc::Status>",
                       "::h2rpc::coro::");
}

CallLayout WithUnusedParameters(CallLayout layout, absl::string_view used) {
  for (std::string& arg : layout.args) {
    const size_t name = arg.find_last_of(" *&") + 1;
    if (arg.substr(name) == used) continue;
    arg = absl::StrCat(arg.substr(0, name), "/*", arg.substr(name), "*/");
  }
  return layout;
}

}  // namespace h2rpc::codegen
