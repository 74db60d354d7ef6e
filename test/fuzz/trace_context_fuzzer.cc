// Fuzzes the W3C trace context parsers a server runs on every traced
// request's headers. Invariants:
//  * ParseTraceparent never crashes; what it accepts is a valid context
//    whose version-00 form parses back to the same ids and flags.
//  * ValidTracestate never crashes, and accepts nothing longer than
//    kMaxTracestateSize.
#include <cstdint>
#include <cstdlib>

#include "absl/strings/string_view.h"
#include "rpc/internal/tracing/trace_context.h"

namespace {

using h2rpc::internal::FormatTraceparent;
using h2rpc::internal::kMaxTracestateSize;
using h2rpc::internal::kTraceparentSize;
using h2rpc::internal::ParseTraceparent;
using h2rpc::TraceContext;
using h2rpc::internal::ValidTracestate;

void Check(bool condition) {
  if (!condition) abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  TraceContext context;
  if (ParseTraceparent(input, &context)) {
    Check(context.valid());
    char text[kTraceparentSize];
    FormatTraceparent(context, text);
    TraceContext again;
    Check(ParseTraceparent(absl::string_view(text, sizeof(text)), &again));
    Check(again.trace_id == context.trace_id &&
          again.span_id == context.span_id && again.flags == context.flags);
  }
  if (ValidTracestate(input)) Check(input.size() <= kMaxTracestateSize);
  return 0;
}
