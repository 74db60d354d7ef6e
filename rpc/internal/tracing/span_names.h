#ifndef H2RPC_RPC_INTERNAL_TRACING_SPAN_NAMES_H_
#define H2RPC_RPC_INTERNAL_TRACING_SPAN_NAMES_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "rpc/status.h"
#include "rpc/tracing.h"

namespace h2rpc::internal {

// A72's span name: `prefix` ("Sent", "Attempt", "Recv"), a dot and the
// method path without its leading '/', its '/' a dot
// ("Sent.grpc.testing.TestService.UnaryCall").
inline std::string SpanName(absl::string_view prefix,
                            absl::string_view method) {
  if (!method.empty() && method.front() == '/') method.remove_prefix(1);
  std::string name = absl::StrCat(prefix, ".", method);
  for (size_t i = prefix.size() + 1; i < name.size(); ++i) {
    if (name[i] == '/') name[i] = '.';
  }
  return name;
}

// A72's status of a span: OK, or ERROR with "CODE, message" ("CODE" when
// the message is empty).
inline void SetSpanStatus(const Status& status, SpanData* span) {
  if (status.ok()) {
    span->status = SpanData::StatusCode::kOk;
    return;
  }
  span->status = SpanData::StatusCode::kError;
  span->status_message =
      status.message().empty()
          ? std::string(StatusCodeName(status.code()))
          : absl::StrCat(StatusCodeName(status.code()), ", ",
                         status.message());
}

// A72's message events.
inline SpanData::Event MessageEvent(const char* name, int64_t sequence,
                                    size_t bytes) {
  SpanData::Event event;
  event.name = name;
  event.time = absl::Now();
  event.attributes.push_back({"sequence-number", sequence});
  event.attributes.push_back({"message-size", static_cast<int64_t>(bytes)});
  return event;
}

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_TRACING_SPAN_NAMES_H_
