#include "test/soak/call_tally.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace h2rpc::testing {
namespace {

// Messages kept per status.
constexpr size_t kExamples = 3;

}  // namespace

absl::string_view CallKindName(CallKind kind) {
  switch (kind) {
    case CallKind::kUnary:
      return "unary";
    case CallKind::kUnaryWaitForReady:
      return "unary_wait_for_ready";
    case CallKind::kServerStreaming:
      return "server_streaming";
    case CallKind::kBidiStreaming:
      return "bidi_streaming";
  }
  return "?";
}

void KindTally::Record(StatusCode code, absl::string_view message,
                       bool wrong_answer) {
  ++ended;
  ++by_status[code];
  if (wrong_answer) ++wrong_answers;
  if (code != StatusCode::kOk) {
    std::vector<std::string>& kept = examples[code];
    if (kept.size() < kExamples) kept.emplace_back(message);
  }
}

std::string KindTally::ToString() const {
  std::vector<std::string> parts;
  for (const auto& [code, count] : by_status) {
    parts.push_back(absl::StrCat(StatusCodeName(code), " ", count));
  }
  std::string text = absl::StrCat(started, " started, ", ended,
                                  " ended: ", absl::StrJoin(parts, ", "));
  if (wrong_answers > 0) {
    absl::StrAppend(&text, "; ", wrong_answers, " wrong answers");
  }
  for (const auto& [code, messages] : examples) {
    absl::StrAppend(&text, "\n      ", StatusCodeName(code), " e.g. \"",
                    absl::StrJoin(messages, "\" | \""), "\"");
  }
  return text;
}

void CallTally::Add(const CallTally& other) {
  for (const auto& [kind, theirs] : other.kinds) {
    KindTally& mine = kinds[kind];
    mine.started += theirs.started;
    mine.ended += theirs.ended;
    mine.wrong_answers += theirs.wrong_answers;
    for (const auto& [code, count] : theirs.by_status) {
      mine.by_status[code] += count;
    }
    for (const auto& [code, messages] : theirs.examples) {
      std::vector<std::string>& kept = mine.examples[code];
      for (const std::string& message : messages) {
        if (kept.size() < kExamples) kept.push_back(message);
      }
    }
  }
}

int64_t CallTally::started() const {
  int64_t total = 0;
  for (const auto& [kind, tally] : kinds) total += tally.started;
  return total;
}

int64_t CallTally::ended() const {
  int64_t total = 0;
  for (const auto& [kind, tally] : kinds) total += tally.ended;
  return total;
}

std::string CallTally::ToString() const {
  std::string text;
  for (const auto& [kind, tally] : kinds) {
    absl::StrAppend(&text, "    ", CallKindName(kind), ": ", tally.ToString(),
                    "\n");
  }
  return text;
}

}  // namespace h2rpc::testing
