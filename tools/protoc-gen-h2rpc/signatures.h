#ifndef H2RPC_TOOLS_PROTOC_GEN_H2RPC_SIGNATURES_H_
#define H2RPC_TOOLS_PROTOC_GEN_H2RPC_SIGNATURES_H_

// The signatures of the generated methods, shared by the header (which
// declares them) and the source (which defines them).

#include <string>

#include "absl/strings/string_view.h"
#include "tools/protoc-gen-h2rpc/layout.h"
#include "tools/protoc-gen-h2rpc/model.h"

namespace h2rpc::codegen {

// Stub::Foo: the blocking call.
CallLayout StubBlockingMethod(const MethodModel& method);
// Stub::AsyncFoo: the callback (unary) or reactor (streaming) call.
CallLayout StubAsyncMethod(const MethodModel& method);
// Service::Foo: the synchronous handler.
CallLayout SyncHandler(const MethodModel& method);
// CallbackService::Foo: the callback handler or reactor factory.
CallLayout CallbackHandler(const MethodModel& method);
// CoroStub::Foo: the awaitable unary call, or the start of a coroutine
// streaming call object.
CallLayout CoroStubMethod(const MethodModel& method);
// CoroService::Foo: the coroutine handler. Its parameters are also those of
// the lambda that AddTo registers for it.
CallLayout CoroHandler(const MethodModel& method);

// `layout` with the parameters' names commented out ("Foo* /*foo*/"), for
// definitions that do not use them, except the one named `used`.
CallLayout WithUnusedParameters(CallLayout layout, absl::string_view used = "");

}  // namespace h2rpc::codegen

#endif  // H2RPC_TOOLS_PROTOC_GEN_H2RPC_SIGNATURES_H_
