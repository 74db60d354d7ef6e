#include "test/lb/call_runner.h"

#include <algorithm>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "base/mutex.h"
#include "proto/grpc/testing/test.h2rpc.pb.h"
#include "rpc/client_context.h"

namespace h2rpc::testing {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::TestService;

struct CallRunner::State {
  State(std::shared_ptr<Channel> channel, const Options& options)
      : stub(std::move(channel)), options(options) {}

  // Reserves the next call's record, stamped now; false if no call may
  // start.
  bool Reserve(int64_t* index) {
    MutexLock lock(&mu);
    if (stopped || (options.total >= 0 &&
                    static_cast<int64_t>(records.size()) >= options.total)) {
      return false;
    }
    *index = static_cast<int64_t>(records.size());
    CallRecord record;
    record.start = absl::Now();
    records.push_back(std::move(record));
    return true;
  }

  // The index of the first call started at or after `time` (start times
  // grow with the index); records.size() if none has.
  size_t FirstStartedAt(absl::Time time) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return static_cast<size_t>(
        std::lower_bound(records.begin(), records.end(), time,
                         [](const CallRecord& record, absl::Time t) {
                           return record.start < t;
                         }) -
        records.begin());
  }

  // Everything started has completed and nothing is left to start.
  bool AllDone() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    const auto started = static_cast<int64_t>(records.size());
    return completed == started &&
           (stopped || (options.total >= 0 && started >= options.total));
  }

  // Waits for a change until `deadline`; false once it has passed.
  bool WaitUntil(absl::Time deadline) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    changed.WaitWithTimeout(&mu, left);
    return true;
  }

  // `backend` answered a call started at or after `time`.
  bool AnsweredFrom(absl::string_view backend, absl::Time time) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    for (size_t i = FirstStartedAt(time); i < records.size(); ++i) {
      if (records[i].backend == backend) return true;
    }
    return false;
  }

  // At least `n` calls started at or after `time` have completed.
  bool CompletedStartedAfter(absl::Time time, int64_t n) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    // Of the calls completed, at most `first` started before `time`.
    const auto first = static_cast<int64_t>(FirstStartedAt(time));
    return first < static_cast<int64_t>(records.size()) &&
           completed - first >= n;
  }

  TestService::Stub stub;
  const Options options;
  mutable Mutex mu;
  mutable CondVar changed;  // a call completed, or Stop()
  std::vector<CallRecord> records ABSL_GUARDED_BY(mu);
  int64_t completed ABSL_GUARDED_BY(mu) = 0;
  bool stopped ABSL_GUARDED_BY(mu) = false;
};

namespace {

// What one call needs until it completes.
struct Call {
  ClientContext context;
  SimpleRequest request;
  SimpleResponse response;
};

}  // namespace

CallRunner::CallRunner(std::shared_ptr<Channel> channel, Options options)
    : state_(std::make_shared<State>(std::move(channel), options)) {
  for (int i = 0; i < options.in_flight; ++i) StartNext(state_);
}

CallRunner::~CallRunner() {
  Stop();
  WaitAllDone(absl::Seconds(30));
}

void CallRunner::Stop() {
  MutexLock lock(&state_->mu);
  state_->stopped = true;
  state_->changed.SignalAll();
}

int64_t CallRunner::started() const {
  MutexLock lock(&state_->mu);
  return static_cast<int64_t>(state_->records.size());
}

int64_t CallRunner::completed() const {
  MutexLock lock(&state_->mu);
  return state_->completed;
}

bool CallRunner::WaitForCompleted(int64_t n, absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  MutexLock lock(&state_->mu);
  while (state_->completed < n) {
    if (!state_->WaitUntil(deadline)) return false;
  }
  return true;
}

bool CallRunner::WaitAllDone(absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  MutexLock lock(&state_->mu);
  while (!state_->AllDone()) {
    if (!state_->WaitUntil(deadline)) return false;
  }
  return true;
}

bool CallRunner::WaitForCompletedStartedAfter(absl::Time time, int64_t n,
                                              absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  MutexLock lock(&state_->mu);
  while (!state_->CompletedStartedAfter(time, n)) {
    if (!state_->WaitUntil(deadline)) return false;
  }
  return true;
}

bool CallRunner::WaitForAnswerFrom(absl::string_view backend, absl::Time time,
                                   absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  MutexLock lock(&state_->mu);
  while (!state_->AnsweredFrom(backend, time)) {
    if (!state_->WaitUntil(deadline)) return false;
  }
  return true;
}

std::vector<CallRecord> CallRunner::Records() const {
  MutexLock lock(&state_->mu);
  return state_->records;
}

void CallRunner::StartNext(const std::shared_ptr<State>& state) {
  auto call = std::make_unique<Call>();
  call->context.set_wait_for_ready(state->options.wait_for_ready);
  call->context.set_timeout(state->options.call_timeout);
  int64_t index = 0;
  if (!state->Reserve(&index)) return;
  Call* const raw = call.get();
  state->stub.AsyncUnaryCall(
      &raw->context, raw->request, &raw->response,
      [state, call = std::move(call), index](const Status& status) {
        {
          MutexLock lock(&state->mu);
          CallRecord& record = state->records[static_cast<size_t>(index)];
          record.done = true;
          record.code = status.code();
          record.message = std::string(status.message());
          if (status.ok()) record.backend = call->response.hostname();
          ++state->completed;
          state->changed.SignalAll();
        }
        StartNext(state);
      });
}

bool AllAnswer(Channel& channel, const std::set<std::string>& names,
               absl::Duration timeout, std::string* seen) {
  std::set<std::string> answered;
  const absl::Time deadline = absl::Now() + timeout;
  while (answered != names && absl::Now() < deadline) {
    ClientContext context;
    context.set_wait_for_ready(true);
    context.set_deadline(deadline);
    SimpleRequest request;
    SimpleResponse response;
    if (channel
            .UnaryCall(&context, TestService::kUnaryCallPath, request,
                       &response)
            .ok()) {
      answered.insert(response.hostname());
    }
  }
  *seen = absl::StrJoin(answered, ",");
  return answered == names;
}

std::map<std::string, int64_t> CountByBackend(
    const std::vector<CallRecord>& records, size_t from, size_t to) {
  std::map<std::string, int64_t> counts;
  for (size_t i = from; i < to && i < records.size(); ++i) {
    if (records[i].done && records[i].code == StatusCode::kOk) {
      ++counts[records[i].backend];
    }
  }
  return counts;
}

std::string Describe(const std::map<std::string, int64_t>& counts) {
  return absl::StrJoin(counts, ", ", absl::PairFormatter("="));
}

std::string Failures(const std::vector<CallRecord>& records) {
  int64_t failed = 0;
  std::string examples;
  for (const CallRecord& record : records) {
    if (record.done && record.code == StatusCode::kOk) continue;
    if (++failed <= 5) {
      absl::StrAppend(&examples, "\n  ",
                      record.done ? StatusCodeName(record.code) : "unfinished",
                      ": ", record.message);
    }
  }
  return failed == 0 ? std::string()
                     : absl::StrCat(failed, " calls failed", examples);
}

}  // namespace h2rpc::testing
